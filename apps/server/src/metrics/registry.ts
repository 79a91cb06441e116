import { performance } from 'node:perf_hooks';
import client from 'prom-client';

/**
 * The process's Prometheus registry (served by `GET /metrics`): Node process metrics plus the
 * ingestion pipeline's counters. Counts are per process; Prometheus sums them across API and
 * worker pods.
 */
export const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

/**
 * Time the main thread spent running (not waiting in the event loop) since the process started:
 * `rate()` of it is the event loop's utilisation, 1 when the thread never waits. A process can be
 * at the limit of its one JavaScript thread while its CPU figure shows room (DuckDB's and libuv's
 * threads count there too), which is what this tells apart.
 */
let loopActiveMs = 0;
new client.Counter({
  name: 'nodejs_eventloop_active_seconds_total',
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
    name: 'ingest_accepted_records_total',
    help: 'Records (events, profile updates, aliases) accepted by the API and handed to the buffer',
    labelNames: kind, registers: [registry],
  }),
  published: new client.Counter({
    name: 'ingest_published_records_total',
    help: 'Records the buffer acknowledged (JetStream PubAck received)',
    labelNames: kind, registers: [registry],
  }),
  publishFailures: new client.Counter({
    name: 'ingest_publish_failures_total',
    help: 'Batches whose publish failed (the API answered 503)',
    registers: [registry],
  }),
  stored: new client.Counter({
    name: 'ingest_stored_records_total',
    help: 'Records written to the stores by the worker (acknowledged batches)',
    labelNames: kind, registers: [registry],
  }),
  redelivered: new client.Counter({
    name: 'ingest_redelivered_messages_total',
    help: 'Buffer messages received again after a nak, a crash or an ack timeout',
    registers: [registry],
  }),
  distrusted: new client.Counter({
    name: 'ingest_distrusted_messages_total',
    help: 'First deliveries written as possible redeliveries (rows looked up first) after a sign of a JetStream consumer leader change',
    registers: [registry],
  }),
  deadLettered: new client.Counter({
    name: 'ingest_dead_lettered_messages_total',
    help: 'Messages terminated as poison and recorded on the dead-letter subject',
    registers: [registry],
  }),
  quotaRejected: new client.Counter({
    name: 'ingest_quota_rejected_events_total',
    help: 'Events refused with 429 because their organisation is over its monthly event quota',
    registers: [registry],
  }),
  storeFailures: new client.Counter({
    name: 'ingest_store_failures_total',
    help: 'Store writes that failed and were retried later (nak with backoff)',
    registers: [registry],
  }),
  insertSeconds: new client.Histogram({
    name: 'ingest_insert_duration_seconds',
    help: 'Time to apply one batch (merged per project and fetch) to the stores',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  }),
  consumerPending: new client.Gauge({
    name: 'ingest_consumer_pending_messages',
    help: 'Messages in the buffer not yet delivered to a worker',
    registers: [registry],
    async collect() {
      const lag = await readLag();
      if (lag) this.set(lag.pending);
    },
  }),
  consumerAckPending: new client.Gauge({
    name: 'ingest_consumer_ack_pending_messages',
    help: 'Messages delivered to a worker and not yet acknowledged',
    registers: [registry],
    async collect() {
      const lag = await readLag();
      if (lag) this.set(lag.ackPending);
    },
  }),
  consumerLag: new client.Gauge({
    name: 'ingest_consumer_lag_messages',
    help: 'Consumer lag: messages accepted and not yet stored (pending + ack pending)',
    registers: [registry],
    async collect() {
      const lag = await readLag();
      if (lag) this.set(lag.pending + lag.ackPending);
    },
  }),
};
