import type { Deps } from '../deps.js';
import { AppError } from '../http/errors.js';
import { route, type RouteSpec } from '../http/route.js';
import { registry } from './registry.js';

/**
 * `GET /metrics`: Prometheus text format (no credential, like the health routes). With
 * METRICS_PORT set, the metrics live only on that port (metrics/server.ts) and this route answers
 * 404, so an Ingress or load balancer in front of the API port never exposes them. Unset (the
 * embedded `npm start` default), they stay on the API port.
 */
export function metricsRoutes(deps: Deps): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/metrics', tag: 'Health', auth: 'none',
      summary: 'Prometheus metrics: ingestion accepted/published/stored/redelivered/dead-lettered counts, consumer lag, insert latency, process figures',
      handler: async ({ ctx }) => {
        // As an unknown route: nothing tells an outside caller where the metrics are.
        if (deps.config.metricsPort) throw new AppError(404, 'not found', { code: 'route_not_found', message: `no route for GET ${ctx.path}` });
        ctx.set('Content-Type', registry.contentType);
        ctx.body = await registry.metrics();
        return undefined;
      },
    }),
  ];
}
