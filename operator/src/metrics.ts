import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The operator's own registry (several operators may share a process in tests). */
export class OperatorMetrics {
  readonly registry = new Registry();
  readonly reconciles = new Counter({ name: 'tally_operator_reconciles_total', help: 'Reconciles by kind and result (ok, error, waiting)', labelNames: ['kind', 'result'], registers: [this.registry] });
  readonly errors = new Counter({ name: 'tally_operator_reconcile_errors_total', help: 'Failed reconciles by kind and condition reason', labelNames: ['kind', 'reason'], registers: [this.registry] });
  readonly duration = new Histogram({
    name: 'tally_operator_reconcile_duration_seconds', help: 'Time of one reconcile', labelNames: ['kind'], registers: [this.registry],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });
  readonly queueDepth = new Gauge({ name: 'tally_operator_queue_depth', help: 'Keys waiting in the work queue', registers: [this.registry] });
  readonly watchRestarts = new Counter({ name: 'tally_operator_watch_restarts_total', help: 'Watch streams reopened, by resource and cause (closed, expired, silent, error, list_error)', labelNames: ['resource', 'cause'], registers: [this.registry] });
  readonly leader = new Gauge({ name: 'tally_operator_leader', help: '1 while this replica holds the leader Lease', registers: [this.registry] });
  readonly apiRequests = new Counter({ name: 'tally_operator_api_requests_total', help: 'Requests to the service API by method and status', labelNames: ['method', 'status'], registers: [this.registry] });
  readonly tenantConfigWrites = new Counter({ name: 'tally_operator_tenant_config_writes_total', help: 'Writes of the tenant config Secret', registers: [this.registry] });
  readonly tenantConfigGeneration = new Gauge({ name: 'tally_operator_tenant_config_generation', help: 'Generation of the tenant config last written or found', registers: [this.registry] });
  readonly tenantConfigBytes = new Gauge({ name: 'tally_operator_tenant_config_bytes', help: 'Size of tenants.json as last computed', registers: [this.registry] });
  /** The limit beside the size, so an alert can warn before the config stops being written. */
  readonly tenantConfigMaxBytes = new Gauge({ name: 'tally_operator_tenant_config_max_bytes', help: 'Largest tenants.json the operator writes (TENANT_CONFIG_MAX_BYTES)', registers: [this.registry] });
  /** Where the gauge below reads: the leader's caches by kind (undefined on a standby, which reports nothing). */
  resourcesSource: () => Record<string, { list(): Array<{ status?: { conditions?: Array<{ type: string; status: string }> } }> }> | undefined = () => undefined;
  readonly resources = new Gauge({
    name: 'tally_operator_resources', help: 'Resources in the leader\'s caches by kind and status of their Ready condition (True, False, Unknown: none yet)',
    labelNames: ['kind', 'ready'], registers: [this.registry],
    collect: () => {
      this.resources.reset();
      for (const [kind, cache] of Object.entries(this.resourcesSource() ?? {})) {
        const counts: Record<string, number> = { True: 0, False: 0, Unknown: 0 };
        for (const o of cache.list()) {
          const ready = o.status?.conditions?.find((c) => c.type === 'Ready')?.status;
          counts[ready === 'True' || ready === 'False' ? ready : 'Unknown']++;
        }
        for (const [status, n] of Object.entries(counts)) this.resources.set({ kind, ready: status }, n);
      }
    },
  });

  constructor(defaults: boolean) {
    if (defaults) collectDefaultMetrics({ register: this.registry });
  }
}

export interface ProbeState {
  /** Liveness: false when a watch has been stuck beyond its own watchdog. */
  healthy(): { ok: boolean; detail: string };
  /** Readiness: a leader whose caches are synced, or a standby replica waiting for the Lease. */
  ready(): { ok: boolean; detail: string };
}

export async function startProbeServer(metrics: OperatorMetrics, probes: ProbeState, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    if (path === '/metrics') {
      metrics.registry.metrics().then((text) => send(200, metrics.registry.contentType, text), (err) => send(500, 'text/plain', String(err)));
    } else if (path === '/healthz' || path === '/readyz' || path === '/health/live' || path === '/health/ready') {
      // /health/live and /health/ready: the names the other roles' probes use, so one chart template fits all.
      const state = path === '/healthz' || path === '/health/live' ? probes.healthy() : probes.ready();
      send(state.ok ? 200 : 503, 'application/json', JSON.stringify({ status: state.ok ? 'ok' : 'unavailable', detail: state.detail }));
    } else {
      send(404, 'application/json', JSON.stringify({ error: 'not found' }));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${addr.port}`,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
