import http from 'node:http';
import type { Deps } from '../deps.js';
import type { BackgroundLoop } from '../background/loop.js';
import { registry } from './registry.js';

/**
 * With METRICS_PORT set, a small listener serving `GET /metrics`, `/health/live` and
 * `/health/ready` (buffer and event store answer), so `worker` pods can be scraped and probed
 * although they run no API. Returns nothing when the port is not configured.
 */
export async function startMetricsServer(deps: Deps): Promise<BackgroundLoop[]> {
  const port = deps.config.metricsPort;
  if (!port) return [];
  const server = http.createServer(async (req, res) => {
    try {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === '/metrics') {
        const body = await registry.metrics();
        res.writeHead(200, { 'Content-Type': registry.contentType }).end(body);
      } else if (req.method === 'GET' && path === '/health/live') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}');
      } else if (req.method === 'GET' && path === '/health/ready') {
        const probe = (p: () => Promise<unknown>) =>
          Promise.race([p(), new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 2000).unref())]).then(() => 'ok', () => 'error');
        const [events, buffer] = await Promise.all([probe(() => deps.events.ping()), probe(() => deps.buffer.ping())]);
        const ok = events === 'ok' && buffer === 'ok';
        res.writeHead(ok ? 200 : 503, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ status: ok ? 'ok' : 'error', version: deps.version, checks: { events, buffer } }));
      } else {
        res.writeHead(404).end();
      }
    } catch (err) {
      res.writeHead(500).end(String(err));
    }
  });
  await new Promise<void>((resolve) => server.listen(port, deps.config.host, resolve));
  return [{
    name: 'metrics-listener',
    stop: () => new Promise<void>((resolve) => { server.closeAllConnections?.(); server.close(() => resolve()); }),
  }];
}
