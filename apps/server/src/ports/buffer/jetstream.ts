import {
  AckPolicy, DeliverPolicy, DiscardPolicy, ErrorCode, RetentionPolicy, StorageType,
  connect, createInbox, headers, nanos,
  type Consumer, type JetStreamClient, type JetStreamManager, type JsMsg, type NatsConnection, type StreamConfig,
} from 'nats';
import { toJsMsg } from 'nats/lib/jetstream/jsmsg.js';
import type { BufferConsumer, ConsumeOptions, IngestionBatch, IngestionBuffer, IngestionKind } from './port.js';
import { isPoison } from './port.js';
import type { NatsConfig } from './jetstream-config.js';
import type { Logger } from '../../http/errors.js';
import { payloadTooLarge, serviceUnavailable } from '../../http/errors.js';
import { LIMITS } from '../../limits.js';
import { ingestMetrics, setLagSource } from '../../metrics/registry.js';

/**
 * Production ingestion buffer on NATS JetStream (works with nats-server 2.9: one filter subject
 * per consumer).
 *
 * - Stream `<stream>` with subjects `<prefix>.<projectId>` (created or updated at start), and a
 *   dead-letter stream `<stream>_DEAD` on `<prefix>.dead.<projectId>`.
 * - `publish` resolves only after the PubAck; the message id is `<projectId>.<batch.id>`, so a
 *   retried request inside the duplicate window is stored once. Unreachable NATS, a publish
 *   timeout or a full stream throw 503 with Retry-After.
 * - `consume`: every worker pulls from the same durable consumer. A fetch (up to `fetchBatch`
 *   messages) is decoded, grouped per project in stream order, consecutive mergeable batches
 *   (ConsumeOptions.mergeable) of a project and kind are merged into one handler call (one store
 *   insert per fetch and project), each
 *   project's batches are applied in order, and messages are acked after the handler resolved.
 *   A handler failure naks that batch and every later batch of the project in the fetch with an
 *   exponential delay (they come back first, in order). A message that cannot be decoded, or
 *   whose handler throws a PoisonError, is copied to the dead-letter subject and terminated.
 *   `working()` keeps long runs from being redelivered; `stop()` lets the current fetch finish.
 * - Order per project: `maxAckPending` defaults to `fetchBatch`, so under load one worker holds
 *   the whole in-flight window and the workers take turns in stream order (see docs/pipeline.md
 *   for the low-load caveat with several workers).
 */
export class JetStreamBuffer implements IngestionBuffer {
  readonly kind = 'jetstream' as const;
  private consumers = new Set<{ stop(): Promise<void> }>();
  private closed = false;
  /** False between a disconnect and the next reconnect: publishes fail fast (503) meanwhile. */
  private connected = true;
  private lastLoggedError = 0;
  private storesHealthy?: () => Promise<boolean>;
  private healthyFailures = new Map<number, number>();

  private constructor(
    private nc: NatsConnection,
    private js: JetStreamClient,
    private jsm: JetStreamManager,
    readonly cfg: NatsConfig,
    private log: Logger,
  ) {}

  static async open(
    url: string,
    cfg: NatsConfig,
    opts: { log?: Logger; name?: string } = {},
  ): Promise<JetStreamBuffer> {
    const nc = await connect({
      servers: url.split(',').map((s) => s.trim()).filter(Boolean),
      name: opts.name ?? `analytics-${process.pid}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      timeout: 5000,
      pingInterval: 10_000,
    });
    try {
      const jsm = await nc.jetstreamManager({ timeout: Math.max(cfg.publishTimeoutMs, 2000) });
      const js = nc.jetstream({ timeout: cfg.publishTimeoutMs });
      const log = opts.log ?? { info() {}, error() {} };
      const buffer = new JetStreamBuffer(nc, js, jsm, cfg, log);
      await buffer.ensureStreams();
      buffer.watchStatus();
      setLagSource(() => buffer.lag());
      return buffer;
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw err;
    }
  }

  subject(projectId: number): string {
    return `${this.cfg.subjectPrefix}.${projectId}`;
  }

  deadSubject(project: number | string): string {
    return `${this.cfg.subjectPrefix}.dead.${project}`;
  }

  get deadStream(): string {
    return `${this.cfg.stream}_DEAD`;
  }

  // ---------------------------------------------------------------- stream and consumer setup

  /** Creates or updates the stream and the dead-letter stream (idempotent, safe to race). */
  async ensureStreams(): Promise<void> {
    const c = this.cfg;
    await this.upsertStream({
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
    await this.upsertStream({
      name: this.deadStream,
      subjects: [`${c.subjectPrefix}.dead.*`],
      retention: RetentionPolicy.Limits,
      storage: c.storage === 'memory' ? StorageType.Memory : StorageType.File,
      num_replicas: c.replicas,
      max_age: nanos(30 * 24 * 3600 * 1000),
      duplicate_window: nanos(120_000),
      discard: DiscardPolicy.Old,
    });
  }

  private async upsertStream(want: Partial<StreamConfig> & { name: string }) {
    let exists = true;
    try {
      await this.jsm.streams.info(want.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      exists = false;
    }
    if (!exists) {
      try {
        await this.jsm.streams.add(want);
        return;
      } catch (err) {
        // Another process created it meanwhile: fall through to the update.
        if (!/already in use|exists/i.test(String((err as Error).message))) throw err;
      }
    }
    try {
      await this.jsm.streams.update(want.name, want);
    } catch (err) {
      throw new Error(`JetStream stream ${want.name} exists with settings that cannot be changed in place (${(err as Error).message}); delete it or change NATS_STREAM`);
    }
  }

  /** Creates the durable pull consumer, or updates what can change on a live one. */
  async ensureConsumer(): Promise<void> {
    const c = this.cfg;
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
      const info = await this.jsm.consumers.info(c.stream, c.consumer);
      if (info.config.ack_wait !== want.ack_wait || info.config.max_ack_pending !== want.max_ack_pending) {
        await this.jsm.consumers.update(c.stream, c.consumer, { ack_wait: want.ack_wait, max_ack_pending: want.max_ack_pending });
      }
      return;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    try {
      await this.jsm.consumers.add(c.stream, want);
    } catch (err) {
      // A concurrent worker may have created it with the same settings.
      await this.jsm.consumers.info(c.stream, c.consumer).catch(() => { throw err; });
    }
  }

  // ---------------------------------------------------------------- API side

  async publish(batch: IngestionBatch): Promise<void> {
    if (this.closed || !this.connected) throw serviceUnavailable('ingestion buffer unavailable', LIMITS.retryAfterMinSeconds);
    const data = Buffer.from(JSON.stringify(batch));
    try {
      await this.js.publish(this.subject(batch.projectId), data, {
        msgID: `${batch.projectId}.${batch.id}`,
        timeout: this.cfg.publishTimeoutMs,
        expect: { streamName: this.cfg.stream },
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === ErrorCode.MaxPayloadExceeded) throw payloadTooLarge();
      this.logThrottled('ingestion: publish to JetStream failed', err);
      throw serviceUnavailable('ingestion buffer unavailable', LIMITS.retryAfterMinSeconds);
    }
  }

  async ping(): Promise<void> {
    if (this.nc.isClosed() || !this.connected) throw new Error('NATS not connected');
    await this.jsm.streams.info(this.cfg.stream);
  }

  /** Messages not yet delivered and delivered but not acknowledged. */
  async lag(): Promise<{ pending: number; ackPending: number } | undefined> {
    try {
      const ci = await this.jsm.consumers.info(this.cfg.stream, this.cfg.consumer);
      return { pending: ci.num_pending, ackPending: ci.num_ack_pending };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  // ---------------------------------------------------------------- worker side

  consume(handler: (batch: IngestionBatch) => Promise<void>, opts: ConsumeOptions = {}): BufferConsumer {
    const state = { stopping: false, wake: () => {} };
    const mergeable = opts.mergeable ?? (() => false);
    this.storesHealthy = opts.storesHealthy;
    const done = this.runConsumer(handler, mergeable, state).catch((err) => {
      this.log.error('ingestion: consumer loop ended', { err: String(err) });
    });
    const consumer = {
      stop: async () => {
        state.stopping = true;
        state.wake();
        await done;
        this.consumers.delete(consumer);
      },
    };
    this.consumers.add(consumer);
    return consumer;
  }

  private async runConsumer(
    handler: (batch: IngestionBatch) => Promise<void>,
    mergeable: (batch: IngestionBatch) => boolean,
    state: { stopping: boolean; wake: () => void },
  ) {
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        state.wake = () => { clearTimeout(t); resolve(); };
      });
    let consumer: Consumer | undefined;
    let failures = 0;
    while (!state.stopping) {
      try {
        if (!consumer) {
          await this.ensureConsumer();
          consumer = await this.js.consumers.get(this.cfg.stream, this.cfg.consumer);
        }
        const msgs: JsMsg[] = [];
        let fetchError: unknown;
        try {
          await this.fetchAvailable(msgs);
        } catch (err) {
          fetchError = err;
        }
        // Messages received before an error are ours until acked: always process them.
        const pauseMs = msgs.length > 0 ? await this.processFetch(msgs, handler, mergeable) : 0;
        if (fetchError && msgs.length === 0) throw fetchError;
        failures = 0;
        if (pauseMs > 0 && !state.stopping) await sleep(pauseMs);
      } catch (err) {
        failures++;
        if (isNotFound(err)) consumer = undefined;
        this.logThrottled('ingestion: fetch from JetStream failed, retrying', err);
        if (!state.stopping) await sleep(Math.min(250 * 2 ** Math.min(failures, 5), 5000));
      }
    }
  }

  /**
   * One fetch of up to `fetchBatch` messages that returns as soon as the consumer has nothing
   * more pending, instead of waiting `fetchExpiresMs` for the batch to fill: a `no_wait` pull
   * request takes what is there (nats-server 2.9 ends it with a 408/404 status once it ran out).
   * Only when nothing is there does it long-poll (a pull of 1 with `expires` = `fetchExpiresMs`)
   * for the first message, then takes the rest the same way. Under load each fetch collects what
   * arrived while the previous insert ran (the insert time sets the batch size); when idle the
   * first message is applied at once. Raw pull requests are read until the server's terminating
   * status, so no delivered message is left behind (the client's `fetch` stops at the first
   * message reporting 0 pending, and with `no_wait` a later delivery would then wait for
   * `ack_wait`).
   */
  private async fetchAvailable(msgs: JsMsg[]): Promise<void> {
    await this.pull(msgs, this.cfg.fetchBatch, 0);
    if (msgs.length > 0) return;
    await this.pull(msgs, 1, this.cfg.fetchExpiresMs);
    if (msgs.length === 1 && msgs[0].info.pending > 0) await this.pull(msgs, this.cfg.fetchBatch - 1, 0);
  }

  /** One pull request: `no_wait` when expiresMs is 0; resolves at its status, its batch, or a guard timeout. */
  private pull(msgs: JsMsg[], batch: number, expiresMs: number): Promise<void> {
    if (batch <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let got = 0;
      const inbox = createInbox();
      const finish = (err?: unknown) => {
        clearTimeout(guard);
        sub.unsubscribe();
        if (err) reject(err);
        else resolve();
      };
      const sub = this.nc.subscribe(inbox, {
        callback: (err, m) => {
          if (err) return finish(err);
          const code = m.headers?.code ?? 0;
          if (code >= 100 && m.data.length === 0 && m.headers) {
            if (code === 100) return; // idle heartbeat / flow control
            // 404 no messages, 408 expired / no_wait ran out, 409 e.g. max ack pending: end of this pull
            if (code === 404 && /consumer/i.test(m.headers.description)) return finish(new Error(`consumer not found: ${m.headers.description}`));
            if (code === 404 || code === 408 || code === 409) return finish();
            return finish(new Error(`pull: ${code} ${m.headers.description}`));
          }
          msgs.push(toJsMsg(m, this.cfg.publishTimeoutMs));
          if (++got >= batch) finish();
        },
      });
      const guard = setTimeout(() => finish(), expiresMs + Math.max(2000, this.cfg.publishTimeoutMs));
      const req: Record<string, unknown> = { batch };
      if (expiresMs > 0) req.expires = nanos(expiresMs);
      else req.no_wait = true;
      this.nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${this.cfg.stream}.${this.cfg.consumer}`, JSON.stringify(req), { reply: inbox });
    });
  }

  /** Applies one fetch; returns how long to pause before the next fetch (after a store failure). */
  private async processFetch(
    msgs: JsMsg[],
    handler: (batch: IngestionBatch) => Promise<void>,
    mergeable: (batch: IngestionBatch) => boolean,
  ): Promise<number> {
    const settled = new Set<JsMsg>();
    const keepAlive = setInterval(() => {
      for (const m of msgs) if (!settled.has(m)) m.working();
    }, Math.max(500, Math.floor(this.cfg.ackWaitMs / 3)));
    try {
      const byProject = new Map<number, Item[]>();
      for (const msg of msgs) {
        if (msg.redelivered) ingestMetrics.redelivered.inc();
        const decoded = decodeBatch(msg, this.cfg.subjectPrefix);
        if (typeof decoded === 'string') {
          await this.deadLetter(msg, decoded, settled);
          continue;
        }
        const list = byProject.get(decoded.projectId) ?? [];
        list.push({ msg, batch: decoded });
        byProject.set(decoded.projectId, list);
      }
      const pauses = await mapLimit([...byProject.values()], 4, (items) => this.processProject(items, handler, mergeable, settled));
      // Make sure the acks reached the server before the next fetch (they free the window).
      await this.nc.flush().catch(() => undefined);
      const pause = Math.max(0, ...pauses);
      return pause > 0 ? pause + 100 : 0;
    } finally {
      clearInterval(keepAlive);
    }
  }

  private async processProject(
    items: Item[],
    handler: (batch: IngestionBatch) => Promise<void>,
    mergeable: (batch: IngestionBatch) => boolean,
    settled: Set<JsMsg>,
  ): Promise<number> {
    const queue = units(items, mergeable);
    while (queue.length > 0) {
      const unit = queue.shift()!;
      const batch = unit.length === 1 ? unit[0].batch : mergeBatches(unit.map((i) => i.batch));
      try {
        await handler(batch);
        for (const { msg } of unit) { msg.ack(); settled.add(msg); }
        continue;
      } catch (err) {
        const reason = isPoison(err) ? (err as Error).message : await this.failsForever(unit, err);
        if (reason !== undefined) {
          if (unit.length > 1) {
            // Find the poison message: apply the merged batches one by one.
            queue.unshift(...unit.map((i) => [i]));
            continue;
          }
          if (await this.deadLetter(unit[0].msg, reason, settled)) continue;
        }
        // Store failure: this batch and every later one of the project come back later, in order.
        const rest = [unit, ...queue].flat();
        const delay = this.nakDelay(unit[0].msg);
        for (const { msg } of rest) { msg.nak(delay); settled.add(msg); }
        this.logThrottled(`ingestion: store write failed, ${rest.length} message(s) retried in ${delay} ms`, err);
        return delay;
      }
    }
    return 0;
  }

  /**
   * A reason when a batch failed `poisonAfterDeliveries` deliveries and, in this worker, at least
   * HEALTHY_FAILURES times while the stores answered (so a store that is just coming back does
   * not turn good data into dead letters); undefined otherwise.
   */
  private async failsForever(unit: Item[], err: unknown): Promise<string | undefined> {
    const deliveries = Math.min(...unit.map((i) => i.msg.info.redeliveryCount));
    if (!this.storesHealthy || deliveries < this.cfg.poisonAfterDeliveries) return undefined;
    if (!(await this.storesHealthy().catch(() => false))) return undefined;
    if (unit.length > 1) return 'split'; // merged: retried one by one, each batch judged alone
    const key = unit[0].msg.seq;
    const n = (this.healthyFailures.get(key) ?? 0) + 1;
    if (this.healthyFailures.size > 10_000) this.healthyFailures.clear();
    this.healthyFailures.set(key, n);
    if (n < HEALTHY_FAILURES) return undefined;
    this.healthyFailures.delete(key);
    return `failed ${deliveries} deliveries, ${n} of them while the stores answered: ${err instanceof Error ? err.message : String(err)}`;
  }

  private nakDelay(msg: JsMsg): number {
    const deliveries = Math.max(1, msg.info.redeliveryCount);
    return Math.min(500 * 2 ** Math.min(deliveries - 1, 10), this.cfg.nakMaxDelayMs);
  }

  /** Copies the message to the dead-letter subject, then terminates it. False if that failed. */
  private async deadLetter(msg: JsMsg, reason: string, settled: Set<JsMsg>): Promise<boolean> {
    const h = headers();
    h.set('Ingest-Error', reason.replace(/[\r\n]+/g, ' ').slice(0, 1000) || 'poison');
    h.set('Ingest-Subject', msg.subject);
    h.set('Ingest-Stream-Seq', String(msg.seq));
    const project = msg.subject.slice(this.cfg.subjectPrefix.length + 1);
    try {
      await this.js.publish(this.deadSubject(/^\d+$/.test(project) ? project : 'unknown'), msg.data, {
        msgID: `dead.${this.cfg.stream}.${msg.seq}`,
        headers: h,
        timeout: this.cfg.publishTimeoutMs,
      });
    } catch (err) {
      this.logThrottled('ingestion: could not record a poison message on the dead-letter subject', err);
      if (!settled.has(msg)) { msg.nak(this.nakDelay(msg)); settled.add(msg); }
      return false;
    }
    msg.term();
    settled.add(msg);
    ingestMetrics.deadLettered.inc();
    this.log.error('ingestion: poison message dead-lettered', { subject: msg.subject, seq: msg.seq, reason });
    return true;
  }

  // ---------------------------------------------------------------- lifecycle

  private watchStatus() {
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect') this.connected = false;
        if (s.type === 'reconnect') this.connected = true;
        if (s.type === 'disconnect' || s.type === 'reconnect') this.log.info(`nats: ${s.type}`, { server: String(s.data) });
      }
    })().catch(() => undefined);
  }

  private logThrottled(msg: string, err: unknown) {
    const now = Date.now();
    if (now - this.lastLoggedError < 2000) return;
    this.lastLoggedError = now;
    this.log.error(msg, { err: err instanceof Error ? err.message : String(err) });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    for (const c of [...this.consumers]) await c.stop();
    this.closed = true;
    setLagSource(undefined);
    // drain flushes the acks still in the outbound buffer.
    await this.nc.drain().catch(() => this.nc.close().catch(() => undefined));
  }
}

interface Item {
  msg: JsMsg;
  batch: IngestionBatch;
}

const MAX_MERGED_RECORDS = 50_000;
const HEALTHY_FAILURES = 3;

/** Consecutive mergeable batches of one kind merged (bounded), everything else on its own, in order. */
function units(items: Item[], mergeable: (batch: IngestionBatch) => boolean): Item[][] {
  const out: Item[][] = [];
  let records = 0;
  let open = false; // whether the last unit may take more batches
  for (const item of items) {
    const last = out[out.length - 1];
    const n = item.batch.records.length;
    const canMerge = mergeable(item.batch);
    if (open && canMerge && last[0].batch.kind === item.batch.kind && records + n <= MAX_MERGED_RECORDS) {
      last.push(item);
      records += n;
    } else {
      out.push([item]);
      records = n;
      open = canMerge;
    }
  }
  return out;
}
const KINDS: IngestionKind[] = ['track', 'engage', 'alias'];

/** The batch a message carries, or why it can never be applied (poison). */
export function decodeBatch(msg: { data: Uint8Array; subject: string }, prefix: string): IngestionBatch | string {
  let v: Partial<IngestionBatch>;
  try {
    v = JSON.parse(Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength).toString('utf8'));
  } catch {
    return 'undecodable message: not JSON';
  }
  if (!v || typeof v !== 'object') return 'undecodable message: not an object';
  if (typeof v.id !== 'string' || !v.id) return 'undecodable message: id';
  if (!KINDS.includes(v.kind as IngestionKind)) return 'undecodable message: kind';
  if (!Number.isSafeInteger(v.projectId)) return 'undecodable message: projectId';
  if (typeof v.acceptedAt !== 'number') return 'undecodable message: acceptedAt';
  if (!Array.isArray(v.records)) return 'undecodable message: records';
  if (msg.subject !== `${prefix}.${v.projectId}`) return `undecodable message: project ${v.projectId} on subject ${msg.subject}`;
  return v as IngestionBatch;
}

/** Consecutive track batches of one project as one batch (records in acceptance order). */
export function mergeBatches(batches: IngestionBatch[]): IngestionBatch {
  const first = batches[0];
  return {
    id: `${first.id}+${batches.length - 1}`,
    kind: first.kind,
    projectId: first.projectId,
    acceptedAt: first.acceptedAt,
    records: batches.flatMap((b) => b.records),
  };
}

function isNotFound(err: unknown): boolean {
  const e = err as { code?: string; message?: string; api_error?: { code?: number } };
  return e?.api_error?.code === 404 || e?.code === '404' || /not found/i.test(String(e?.message ?? ''));
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const run = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
  return out;
}
