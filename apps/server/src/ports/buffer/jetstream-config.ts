import fs from 'node:fs';
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
  /** How the client proves who it is and checks the server (docs/pipeline.md "Securing NATS"). */
  security: NatsSecurity;
}

/** At most one way to authenticate; TLS files are paths, read by the client at each connection. */
export interface NatsSecurity {
  user?: string;
  password?: string;
  token?: string;
  /** A .creds file (user JWT and NKey seed), re-read at each connection so a rotated file is used. */
  credsFile?: string;
  /** Set when any NATS_TLS_* is: the client then refuses a server without TLS. */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
}

const SECURITY_VARS = ['NATS_USER', 'NATS_PASSWORD', 'NATS_TOKEN', 'NATS_CREDS', 'NATS_TLS_CA', 'NATS_TLS_CERT', 'NATS_TLS_KEY'];

/** NATS_USER/NATS_PASSWORD, NATS_TOKEN, NATS_CREDS and NATS_TLS_*, checked so a mistake stops the start with its name. */
export function natsSecurity(env: Env): NatsSecurity {
  const v = (name: string) => env[name] || undefined;
  const set = SECURITY_VARS.filter((name) => v(name) !== undefined);
  if (set.length === 0) return {};
  if (!v('NATS_URL')) throw new Error(`${set.join(', ')} set without NATS_URL: credentials and TLS apply to a NATS server only`);
  const pair = (a: string, b: string, what: string) => {
    if (!!v(a) !== !!v(b)) throw new Error(`${a} and ${b} go together (${what}): ${v(a) ? a : b} is set, ${v(a) ? b : a} is not`);
  };
  pair('NATS_USER', 'NATS_PASSWORD', 'a user and its password');
  pair('NATS_TLS_CERT', 'NATS_TLS_KEY', 'a client certificate and its private key');
  const methods = [v('NATS_USER') && 'NATS_USER/NATS_PASSWORD', v('NATS_TOKEN') && 'NATS_TOKEN', v('NATS_CREDS') && 'NATS_CREDS'].filter(Boolean);
  if (methods.length > 1) throw new Error(`NATS authentication: set only one of NATS_USER/NATS_PASSWORD, NATS_TOKEN or NATS_CREDS (got ${methods.join(' and ')})`);
  const credsFile = v('NATS_CREDS') && readableFile(env, 'NATS_CREDS', /-----BEGIN NATS USER JWT-----/, 'a NATS user JWT');
  if (credsFile && !/-----BEGIN USER NKEY SEED-----/.test(fs.readFileSync(credsFile, 'utf8'))) {
    throw new Error(`NATS_CREDS: ${credsFile} holds no user NKey seed (a .creds file has a JWT and a seed)`);
  }
  const caFile = v('NATS_TLS_CA') && readableFile(env, 'NATS_TLS_CA', /-----BEGIN CERTIFICATE-----/, 'a PEM certificate');
  const certFile = v('NATS_TLS_CERT') && readableFile(env, 'NATS_TLS_CERT', /-----BEGIN CERTIFICATE-----/, 'a PEM certificate');
  const keyFile = v('NATS_TLS_KEY') && readableFile(env, 'NATS_TLS_KEY', /-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'a PEM private key');
  return {
    user: v('NATS_USER'),
    password: v('NATS_PASSWORD'),
    token: v('NATS_TOKEN'),
    credsFile,
    tls: caFile || certFile ? { caFile, certFile, keyFile } : undefined,
  };
}

/** The path in `name`, once it is known to be a readable file of the expected kind. */
function readableFile(env: Env, name: string, looksLike: RegExp, kind: string): string {
  const file = env[name]!;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!looksLike.test(text)) throw new Error(`${name}: ${file} does not hold ${kind}`);
  return file;
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
    security: natsSecurity(env),
  };
}
