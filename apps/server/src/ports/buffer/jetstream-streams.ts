import {
  AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, nanos,
  type JetStreamManager, type StreamConfig,
} from 'nats';
import type { NatsConfig } from './jetstream-config.js';

/**
 * Stream and consumer setup of the JetStream buffer: the stream `<stream>` on
 * `<prefix>.<projectId>`, the dead-letter stream `<stream>_DEAD` on `<prefix>.dead.<projectId>`,
 * and the durable pull consumer every worker shares. All idempotent and safe to race.
 */

export const deadStreamOf = (cfg: NatsConfig) => `${cfg.stream}_DEAD`;

/** Creates or updates the stream and the dead-letter stream. */
export async function ensureStreams(jsm: JetStreamManager, c: NatsConfig): Promise<void> {
  await upsertStream(jsm, {
    name: c.stream,
    subjects: [`${c.subjectPrefix}.*`],
    retention: c.retention === 'workqueue' ? RetentionPolicy.Workqueue : RetentionPolicy.Limits,
    storage: c.storage === 'memory' ? StorageType.Memory : StorageType.File,
    num_replicas: c.replicas,
    max_age: nanos(c.maxAgeSeconds * 1000),
    max_bytes: c.maxBytes || -1,
    max_msgs: c.maxMsgs || -1,
    duplicate_window: nanos(Math.min(c.duplicateWindowMs, c.maxAgeSeconds ? c.maxAgeSeconds * 1000 : Infinity)),
    discard: DiscardPolicy.New,
  });
  await upsertStream(jsm, {
    name: deadStreamOf(c),
    subjects: [`${c.subjectPrefix}.dead.*`],
    retention: RetentionPolicy.Limits,
    storage: c.storage === 'memory' ? StorageType.Memory : StorageType.File,
    num_replicas: c.replicas,
    max_age: nanos(30 * 24 * 3600 * 1000),
    duplicate_window: nanos(120_000),
    discard: DiscardPolicy.Old,
  });
}

/**
 * Creates the stream, or updates it when a setting differs. Safe to race and to retry: a create
 * that timed out may have happened (the next attempt finds the stream), and a stream that already
 * has the wanted settings is left alone (on nats-server 2.9 an update sent while a replicated
 * stream is still being created goes unanswered for seconds).
 */
async function upsertStream(jsm: JetStreamManager, want: Partial<StreamConfig> & { name: string }) {
  let exists = true;
  try {
    const info = await jsm.streams.info(want.name);
    if (!differs(info.config, want)) return;
  } catch (err) {
    if (!isNotFound(err)) throw err;
    exists = false;
  }
  if (!exists) {
    try {
      await jsm.streams.add(want);
      return;
    } catch (err) {
      // Another process created it meanwhile: fall through to the update.
      if (!/already in use|exists/i.test(String((err as Error).message))) throw err;
    }
  }
  try {
    await jsm.streams.update(want.name, want);
  } catch (err) {
    throw new Error(`JetStream stream ${want.name} exists with settings that cannot be changed in place (${(err as Error).message}); delete it or change NATS_STREAM`);
  }
}

/** Whether a stream's settings differ from the wanted ones (only the keys we set). */
function differs(have: Partial<StreamConfig>, want: Partial<StreamConfig>): boolean {
  return Object.entries(want).some(([k, v]) => JSON.stringify(have[k as keyof StreamConfig]) !== JSON.stringify(v));
}

/** Creates the durable pull consumer, or updates what can change on a live one. */
export async function ensureConsumer(jsm: JetStreamManager, c: NatsConfig): Promise<void> {
  const want = {
    durable_name: c.consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: `${c.subjectPrefix}.*`,
    ack_wait: nanos(c.ackWaitMs),
    max_ack_pending: c.maxAckPending,
    max_deliver: -1,
  };
  try {
    const info = await jsm.consumers.info(c.stream, c.consumer);
    if (info.config.ack_wait !== want.ack_wait || info.config.max_ack_pending !== want.max_ack_pending) {
      await jsm.consumers.update(c.stream, c.consumer, { ack_wait: want.ack_wait, max_ack_pending: want.max_ack_pending });
    }
    return;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  try {
    await jsm.consumers.add(c.stream, want);
  } catch (err) {
    // A concurrent worker may have created it with the same settings.
    await jsm.consumers.info(c.stream, c.consumer).catch(() => { throw err; });
  }
}

export function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; message?: string; api_error?: { code?: number } };
  return e?.api_error?.code === 404 || e?.code === '404' || /not found/i.test(String(e?.message ?? ''));
}
