import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { registry } from './registry.js';

/** `GET /metrics`: Prometheus text format (no credential, like the health routes). */
export function metricsRoutes(_deps: Deps): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/metrics', tag: 'Health', auth: 'none',
      summary: 'Prometheus metrics: ingestion accepted/published/stored/redelivered/dead-lettered counts, consumer lag, insert latency, process figures',
      handler: async ({ ctx }) => {
        ctx.set('Content-Type', registry.contentType);
        ctx.body = await registry.metrics();
        return undefined;
      },
    }),
  ];
}
