import { ErrorCode, connect, type Consumer, type JetStreamClient, type JetStreamManager, type JsMsg, type NatsConnection } from 'nats';
import type { BufferConsumer, BufferHooks, BufferLag, BufferLog, ConsumeOptions, IngestionBatch, IngestionBuffer } from './port.js';
import { BatchTooLarge, BufferUnavailable, HookSet } from './port.js';
import type { NatsConfig } from './jetstream-config.js';
import { LIMITS } from '../../limits.js';
import { deadStreamOf, ensureConsumer, ensureStreams, isNotFound } from './jetstream-streams.js';
import { Puller } from './jetstream-pull.js';
import { Delivery, deadSubject } from './jetstream-delivery.js';
import { encodeBatch, messageId } from './jetstream-encoding.js';
import { retryStartup } from '../startup.js';
import { refusalReason, securityOptions, serversForLog, timeoutHint } from './jetstream-connection.js';

/** Timeout of stream and consumer set-up requests. */
const SETUP_TIMEOUT_MS = 15_000;

export { decodeBatch } from './jetstream-encoding.js';
export { mergeBatches } from './batches.js';

/**
 * Production ingestion buffer on NATS JetStream (works with nats-server 2.9: one filter subject
 * per consumer). This file holds the connection and the consumer loop; the rest by concern:
 * jetstream-streams.ts (stream and consumer setup), jetstream-pull.ts (fetching),
 * jetstream-delivery.ts (merge, ack, nak, dead letters), jetstream-encoding.ts (messages).
 *
 * - `publish` resolves only after the PubAck; the message id is `<projectId>.<batch.id>`, so a
 *   retried request inside the duplicate window is stored once. Unreachable NATS, a publish
 *   timeout or a full stream throw BufferUnavailable (the API answers 503 with Retry-After).
 * - `consume`: every worker pulls from the same durable consumer and applies each fetch by the
 *   delivery policy; `stop()` lets the current fetch finish.
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
  /** Reconnections so far: a consumer distrusts its next deliveries after one. */
  private reconnects = 0;
  private lastLoggedError = 0;
  private hooks = new HookSet();

  private constructor(
    private nc: NatsConnection,
    private js: JetStreamClient,
    private jsm: JetStreamManager,
    readonly cfg: NatsConfig,
    private log: BufferLog,
  ) {}

  /**
   * Connects and sets up the streams, waiting and retrying with backoff for up to
   * `startupTimeoutMs` (default 0: one attempt): a fresh cluster may still be electing, and
   * creating a replicated stream on nats-server 2.9 can outlast a request timeout.
   */
  static async open(
    url: string,
    cfg: NatsConfig,
    opts: { log?: BufferLog; name?: string; startupTimeoutMs?: number } = {},
  ): Promise<JetStreamBuffer> {
    const log = opts.log ?? { info() {}, error() {} };
    const startup = { timeoutMs: opts.startupTimeoutMs ?? 0, log };
    const servers = url.split(',').map((s) => s.trim()).filter(Boolean);
    const connectOnce = () => connect({
      servers,
      name: opts.name ?? `analytics-${process.pid}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      timeout: 5000,
      pingInterval: 10_000,
      // Every JetStream publish is a request, and by default each one captures a stack trace in
      // case it times out: 0.5 s of the API's 20 s of CPU in a bench:pipeline profile. A timeout
      // still throws, with the client's stack instead of the caller's.
      noAsyncTraces: true,
      ...securityOptions(cfg.security),
    }).catch((err) => {
      // Retried like any start-up step (the server's accounts may be reloading), but said loudly
      // each time: this does not pass by itself.
      const reason = refusalReason(err);
      if (reason) log.error(`NATS refused the connection: ${reason}`, { servers: serversForLog(servers) });
      throw err;
    });
    const nc = await retryStartup('NATS connection', connectOnce, startup).catch((err) => {
      throw new Error(`NATS: cannot connect to ${serversForLog(servers)}: ${refusalReason(err) ?? (err instanceof Error ? err.message : String(err))}${timeoutHint(err, cfg)}`);
    });
    try {
      const jsm = await nc.jetstreamManager({ timeout: Math.max(cfg.publishTimeoutMs, 2000) });
      const js = nc.jetstream({ timeout: cfg.publishTimeoutMs });
      const buffer = new JetStreamBuffer(nc, js, jsm, cfg, log);
      await retryStartup('JetStream stream set-up', () => buffer.ensureStreams(), startup).catch((err) => {
        throw new Error(`NATS: JetStream stream set-up failed: ${refusalReason(err) ?? (err instanceof Error ? err.message : String(err))}`);
      });
      buffer.watchStatus();
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
    return deadSubject(this.cfg, project);
  }

  get deadStream(): string {
    return deadStreamOf(this.cfg);
  }

  /** Creates or updates the stream and the dead-letter stream (idempotent, safe to race). */
  async ensureStreams(): Promise<void> {
    return ensureStreams(await this.setupManager(), this.cfg);
  }

  /** Creates the durable pull consumer, or updates what can change on a live one. */
  async ensureConsumer(): Promise<void> {
    return ensureConsumer(await this.setupManager(), this.cfg);
  }

  /**
   * Stream and consumer set-up waits longer than other requests: on a cluster the meta leader
   * answers only once the replicas agreed (seconds on a fresh 3-server cluster).
   */
  private setupManager(): Promise<JetStreamManager> {
    return this.nc.jetstreamManager({ timeout: Math.max(this.cfg.publishTimeoutMs, SETUP_TIMEOUT_MS), checkAPI: false });
  }

  watch(hooks: BufferHooks): void {
    this.hooks.add(hooks);
  }

  // ---------------------------------------------------------------- API side

  async publish(batch: IngestionBatch): Promise<void> {
    if (this.closed || !this.connected) throw new BufferUnavailable(LIMITS.retryAfterMinSeconds);
    try {
      await this.js.publish(this.subject(batch.projectId), encodeBatch(batch), {
        msgID: messageId(batch),
        timeout: this.cfg.publishTimeoutMs,
        expect: { streamName: this.cfg.stream },
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === ErrorCode.MaxPayloadExceeded) throw new BatchTooLarge();
      this.logThrottled('ingestion: publish to JetStream failed', err);
      throw new BufferUnavailable(LIMITS.retryAfterMinSeconds);
    }
  }

  async ping(): Promise<void> {
    if (this.nc.isClosed() || !this.connected) throw new Error('NATS not connected');
    await this.jsm.streams.info(this.cfg.stream);
  }

  async lag(): Promise<BufferLag | undefined> {
    if (this.closed) return undefined;
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
    const delivery = new Delivery(
      { nc: this.nc, js: this.js, cfg: this.cfg, log: this.log, hooks: this.hooks, logThrottled: (m, e) => this.logThrottled(m, e) },
      handler, opts.mergeable ?? (() => false), opts.storesHealthy, opts.applyUnit,
    );
    const done = this.runConsumer(delivery, state).catch((err) => {
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

  private async runConsumer(delivery: Delivery, state: { stopping: boolean; wake: () => void }) {
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        state.wake = () => { clearTimeout(t); resolve(); };
      });
    let consumer: Consumer | undefined;
    let failures = 0;
    let seenReconnects = this.reconnects;
    const puller = new Puller(this.nc, this.cfg);
    try {
      while (!state.stopping) {
        try {
          if (!consumer) {
            await this.ensureConsumer();
            consumer = await this.js.consumers.get(this.cfg.stream, this.cfg.consumer);
          }
          const msgs: JsMsg[] = [];
          let fetchError: unknown;
          try {
            if (await puller.fetch(msgs)) delivery.distrust();
          } catch (err) {
            fetchError = err;
            delivery.distrust();
          }
          if (this.reconnects !== seenReconnects) {
            seenReconnects = this.reconnects;
            delivery.distrust();
          }
          // Messages received before an error are ours until acked: always process them.
          const pauseMs = msgs.length > 0 ? await delivery.processFetch(msgs) : 0;
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
    } finally {
      puller.close();
    }
  }

  // ---------------------------------------------------------------- lifecycle

  private watchStatus() {
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect') this.connected = false;
        if (s.type === 'reconnect') {
          this.connected = true;
          this.reconnects++;
        }
        if (s.type === 'disconnect' || s.type === 'reconnect') this.log.info(`nats: ${s.type}`, { server: String(s.data) });
        // E.g. an authorization violation on reconnecting: the client keeps trying (unready) meanwhile.
        if (s.type === 'error') this.logThrottled('NATS reported an error', new Error(refusalReason({ code: s.data, message: String(s.data) }) ?? String(s.data)));
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
    // drain flushes the acks still in the outbound buffer.
    await this.nc.drain().catch(() => this.nc.close().catch(() => undefined));
  }
}
