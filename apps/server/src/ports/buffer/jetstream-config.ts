import { int, type Env } from '../../env.js';
/**
 * Settings of the JetStream ingestion buffer, read from NATS_* variables (see docs/pipeline.md).
 * Kept beside the buffer so config.ts only holds one line for them.
 */
export interface NatsConfig {
  /** Stream of accepted batches; subjects `<subjectPrefix>.<projectId>`. */
  stream: string;
  subjectPrefix: string;
  /** Durable pull consumer shared by every worker. */
  consumer: string;
  retention: 'workqueue' | 'limits';
  storage: 'file' | 'memory';
  replicas: number;
  maxAgeSeconds: number;
  /** 0 = unlimited. With a limit, a full stream refuses new batches (the API answers 503). */
  maxBytes: number;
  maxMsgs: number;
  /** Publish-side dedup window on the message id (a client retry inside it is stored once). */
  duplicateWindowMs: number;
  ackWaitMs: number;
  /** Messages per fetch (one store insert per fetch and project). */
  fetchBatch: number;
  fetchExpiresMs: number;
  /** Defaults to fetchBatch: one full fetch in flight at a time keeps per-project order across workers. */
  maxAckPending: number;
  publishTimeoutMs: number;
  /** Cap of the exponential nak backoff after a store failure. */
  nakMaxDelayMs: number;
  /** A batch failing this many deliveries while the stores answer is dead-lettered. */
  poisonAfterDeliveries: number;
}


function oneOf<T extends string>(env: Env, name: string, allowed: T[], fallback: T): T {
  const v = (env[name] || fallback) as T;
  if (!allowed.includes(v)) throw new Error(`${name} must be one of ${allowed.join(', ')} (got ${v})`);
  return v;
}

export function natsConfig(env: Env): NatsConfig {
  const fetchBatch = Math.max(1, int(env, 'NATS_FETCH_BATCH', 100));
  const maxAckPending = Math.max(1, int(env, 'NATS_MAX_ACK_PENDING', fetchBatch));
  return {
    stream: env.NATS_STREAM || 'INGEST',
    subjectPrefix: env.NATS_SUBJECT_PREFIX || 'ingest',
    consumer: env.NATS_CONSUMER || 'workers',
    retention: oneOf(env, 'NATS_STREAM_RETENTION', ['workqueue', 'limits'], 'workqueue'),
    storage: oneOf(env, 'NATS_STREAM_STORAGE', ['file', 'memory'], 'file'),
    replicas: Math.max(1, int(env, 'NATS_STREAM_REPLICAS', 1)),
    maxAgeSeconds: int(env, 'NATS_STREAM_MAX_AGE_S', 7 * 24 * 3600),
    maxBytes: int(env, 'NATS_STREAM_MAX_BYTES', 0),
    maxMsgs: int(env, 'NATS_STREAM_MAX_MSGS', 0),
    duplicateWindowMs: Math.max(1000, int(env, 'NATS_DUPLICATE_WINDOW_MS', 10 * 60_000)),
    ackWaitMs: Math.max(1000, int(env, 'NATS_ACK_WAIT_MS', 30_000)),
    fetchBatch: Math.min(fetchBatch, maxAckPending),
    fetchExpiresMs: Math.max(1000, int(env, 'NATS_FETCH_EXPIRES_MS', 1000)),
    maxAckPending,
    publishTimeoutMs: Math.max(100, int(env, 'NATS_PUBLISH_TIMEOUT_MS', 2000)),
    nakMaxDelayMs: Math.max(100, int(env, 'NATS_NAK_MAX_DELAY_MS', 5000)),
    poisonAfterDeliveries: Math.max(2, int(env, 'NATS_POISON_AFTER_DELIVERIES', 10)),
  };
}
