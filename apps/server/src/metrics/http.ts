import type http from 'node:http';
import client from 'prom-client';
import { registry } from './registry.js';

/**
 * Requests by area and status code, and their duration by area: what the API 5xx-ratio alert and
 * the dashboard's ingestion, query and flag panels read. `area` is a small fixed set (a path
 * prefix), never the path itself, so the series stay few whatever clients send.
 */
const AREAS: Array<[RegExp, string]> = [
  [/^(\/v\/[^/]+)?\/(track|engage|alias|import)(\/|$|\?)/, 'ingest'],
  [/^\/flags(\/|$|\?)/, 'flags'],
  [/^\/api\/(query|reports|boards|cohorts|data)(\/|$|\?)/, 'query'],
  [/^\/api\/flags(\/|$|\?)/, 'flags_admin'],
  [/^\/api\/experiments(\/|$|\?)/, 'experiments'],
  [/^\/(health|metrics)(\/|$|\?)/, 'health'],
  [/^\/(api|admin)\//, 'admin'],
];

export function areaOf(url: string | undefined): string {
  const path = url ?? '/';
  for (const [re, area] of AREAS) if (re.test(path)) return area;
  return 'other';
}

export const httpMetrics = {
  requests: new client.Counter({
    name: 'tally_http_requests_total',
    help: 'HTTP requests answered by the API, by area (ingest, flags, query, flags_admin, experiments, admin, health, other) and status code',
    labelNames: ['area', 'code'] as const, registers: [registry],
  }),
  duration: new client.Histogram({
    name: 'tally_http_request_duration_seconds',
    help: 'Time from request to the end of the response, by area',
    labelNames: ['area'] as const, registers: [registry],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  }),
  rateLimited: new client.Counter({
    name: 'tally_http_rate_limited_total',
    help: 'Requests refused with 429 rate limited (per-project, per-key or per-address buckets)',
    registers: [registry],
  }),
};

/** Counts every response of `server` (installed once, on the API's listener). */
export function instrumentHttpServer(server: http.Server): void {
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const started = process.hrtime.bigint();
    const area = areaOf(req.url);
    res.once('close', () => {
      httpMetrics.requests.inc({ area, code: String(res.statusCode) });
      httpMetrics.duration.observe({ area }, Number(process.hrtime.bigint() - started) / 1e9);
    });
  });
}
