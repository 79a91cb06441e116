import { performance } from 'node:perf_hooks';
import client from 'prom-client';

/**
 * Names the metrics had before every Tally metric took the `tally_` prefix, served as duplicates
 * for one release so dashboards and alerts written against them keep working through an upgrade
 * (docs/deploy.md "Upgrading"). The renamed family's current name is the key. One old name is
 * not going away: `tenant_config_generation` is part of the Kubernetes contract (docs/decisions.md)
 * that outside tooling reads, so it stays served when the other duplicates are dropped.
 */
export const LEGACY_METRIC_NAMES: ReadonlyArray<{ prefix: string; legacy: string }> = [
  { prefix: 'tally_ingest_', legacy: 'ingest_' },
  { prefix: 'tally_tenant_config_', legacy: 'tenant_config_' },
  { prefix: 'tally_eventloop_active_seconds_total', legacy: 'nodejs_eventloop_active_seconds_total' },
];

/** The old name of a family, or undefined when it never had another. */
export function legacyNameOf(name: string): string | undefined {
  const rule = LEGACY_METRIC_NAMES.find((r) => name.startsWith(r.prefix));
  return rule && rule.legacy + name.slice(rule.prefix.length);
}

/** Copies of the renamed families of an exposition under their old names (same samples, HELP says which name replaces it). */
export function legacyCopies(text: string): string {
  const out: string[] = [];
  for (const block of text.split(/\n(?=# HELP )/)) {
    const name = /^# HELP (\S+)/.exec(block)?.[1];
    const old = name && legacyNameOf(name);
    if (!name || !old) continue;
    for (const line of block.split('\n')) {
      if (line.startsWith(`# HELP ${name} `)) out.push(`# HELP ${old} Deprecated, removed in the next release: use ${name}.`);
      else if (line.startsWith(`# TYPE ${name} `)) out.push(`# TYPE ${old} ${line.slice(`# TYPE ${name} `.length)}`);
      else if (line.startsWith(name)) out.push(old + line.slice(name.length));
    }
  }
  return out.length ? `${out.join('\n')}\n` : '';
}

class RegistryWithLegacyNames extends client.Registry {
  override async metrics(): Promise<string> {
    const text = await super.metrics();
    return text + legacyCopies(text);
  }
}

/**
 * The process's Prometheus registry (served by `GET /metrics`): Node process metrics plus the
 * ingestion pipeline's counters, and their pre-`tally_` names for one release. Counts are per
 * process; Prometheus sums them across API and worker pods.
 */
export const registry = new RegistryWithLegacyNames();
client.collectDefaultMetrics({ register: registry });

/**
 * Time the main thread spent running (not waiting in the event loop) since the process started:
 * `rate()` of it is the event loop's utilisation, 1 when the thread never waits. A process can be
 * at the limit of its one JavaScript thread while its CPU figure shows room (DuckDB's and libuv's
 * threads count there too), which is what this tells apart.
 */
let loopActiveMs = 0;
new client.Counter({
  name: 'tally_eventloop_active_seconds_total',
  help: 'Seconds the main thread was running JavaScript or native calls rather than waiting for events; rate() is the event loop utilisation',
  registers: [registry],
  collect() {
    const active = performance.eventLoopUtilization().active;
    this.inc(Math.max(0, active - loopActiveMs) / 1000);
    loopActiveMs = active;
  },
});

const kind = ['kind'] as const;

/** Where the consumer-lag gauges read from (the buffer registers itself when it opens). */
export interface LagSource {
  (): Promise<{ pending: number; ackPending: number } | undefined>;
}
let lagSource: LagSource | undefined;
/** Sets the source; clearing with `only` leaves a newer source in place. */
export function setLagSource(source: LagSource | undefined, only?: LagSource) {
  if (only && lagSource !== only) return;
  lagSource = source;
  lastLag = undefined;
}

/**
 * The three lag gauges collect in the same scrape: they share one consumer-info request (the
 * read in flight, or one finished less than a second ago) instead of asking NATS three times.
 */
let lastLag: { at: number; value: Promise<{ pending: number; ackPending: number } | undefined> } | undefined;
function readLag() {
  const now = Date.now();
  if (lastLag && now - lastLag.at < 1000) return lastLag.value;
  const value = (async () => {
    try {
      return lagSource ? await lagSource() : undefined;
    } catch {
      return undefined;
    }
  })();
  lastLag = { at: now, value };
  return value;
}

export const ingestMetrics = {
  accepted: new client.Counter({
    name: 'tally_ingest_accepted_records_total',
    help: 'Records (events, profile updates, aliases) accepted by the API and handed to the buffer',
    labelNames: kind, registers: [registry],
  }),
  published: new client.Counter({
    name: 'tally_ingest_published_records_total',
    help: 'Records the buffer acknowledged (JetStream PubAck received)',
    labelNames: kind, registers: [registry],
  }),
  publishFailures: new client.Counter({
    name: 'tally_ingest_publish_failures_total',
    help: 'Batches whose publish failed (the API answered 503)',
    registers: [registry],
  }),
  stored: new client.Counter({
    name: 'tally_ingest_stored_records_total',
    help: 'Records written to the stores by the worker (acknowledged batches)',
    labelNames: kind, registers: [registry],
  }),
  redelivered: new client.Counter({
    name: 'tally_ingest_redelivered_messages_total',
    help: 'Buffer messages received again after a nak, a crash or an ack timeout',
    registers: [registry],
  }),
  distrusted: new client.Counter({
    name: 'tally_ingest_distrusted_messages_total',
    help: 'First deliveries written as possible redeliveries (rows looked up first) after a sign of a JetStream consumer leader change',
    registers: [registry],
  }),
  deadLettered: new client.Counter({
    name: 'tally_ingest_dead_lettered_messages_total',
    help: 'Messages terminated as poison and recorded on the dead-letter subject',
    registers: [registry],
  }),
  quotaRejected: new client.Counter({
    name: 'tally_ingest_quota_rejected_events_total',
    help: 'Events refused with 429 because their organisation is over its monthly event quota',
    registers: [registry],
  }),
  storeFailures: new client.Counter({
    name: 'tally_ingest_store_failures_total',
    help: 'Store writes that failed and were retried later (nak with backoff)',
    registers: [registry],
  }),
  insertSeconds: new client.Histogram({
    name: 'tally_ingest_insert_duration_seconds',
    help: 'Time to apply one batch (merged per project and fetch) to the stores',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  }),
  consumerPending: new client.Gauge({
    name: 'tally_ingest_consumer_pending_messages',
    help: 'Messages in the buffer not yet delivered to a worker',
    registers: [registry],
    async collect() {
      const lag = await readLag();
      if (lag) this.set(lag.pending);
    },
  }),
  consumerAckPending: new client.Gauge({
    name: 'tally_ingest_consumer_ack_pending_messages',
    help: 'Messages delivered to a worker and not yet acknowledged',
    registers: [registry],
    async collect() {
      const lag = await readLag();
      if (lag) this.set(lag.ackPending);
    },
  }),
  consumerLag: new client.Gauge({
    name: 'tally_ingest_consumer_lag_messages',
    help: 'Consumer lag: messages accepted and not yet stored (pending + ack pending)',
    registers: [registry],
    async collect() {
      const lag = await readLag();
      if (lag) this.set(lag.pending + lag.ackPending);
    },
  }),
};
