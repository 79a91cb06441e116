import { randomUUID } from 'node:crypto';
import { Transport, TallyHttpError, type RetryOptions } from './transport.js';
import { FlagsClient, type EvaluatedFlag, type FlagsOptions } from './flags.js';

/** The service's batch limit for /track and /engage. */
export const MAX_BATCH = 500;

export interface TallyOptions extends FlagsOptions {
  /** The project token (X-Service-Token). */
  token: string;
  /** Base URL of the service, e.g. `https://analytics.example.com`. */
  host: string;
  /** Records per /track or /engage request, at most 500 (default 500). */
  batchSize?: number;
  /** Queued records are sent at least this often (default 1000 ms). */
  flushIntervalMs?: number;
  /** Oldest records are dropped beyond this many queued ones (default 100000). */
  maxQueueSize?: number;
  retry?: RetryOptions;
  /** Per-request timeout (default 10 s). */
  timeoutMs?: number;
  /** Flush queued records when the process is about to exit (`beforeExit`; default true). */
  flushOnExit?: boolean;
  /** Called with records that could not be delivered (after retries, or refused with a 4xx). */
  onError?: (err: unknown, info: { endpoint: string; records: unknown[] }) => void;
  fetch?: typeof fetch;
  /**
   * Send `$experiment_started` (`Experiment name` = the flag key, `Variant name`) the first time
   * `getFlag` or `isEnabled` serves a variant of a flag to a distinct id, so experiments on the
   * flag count the exposure (default true; false opts out).
   */
  experimentExposures?: boolean;
  /** How many served (flag, distinct id, variant) the client remembers not to send twice (default 50000); the oldest are forgotten first. */
  maxExposuresRemembered?: number;
}

/** Default bound of the remembered exposures. */
export const MAX_EXPOSURES_REMEMBERED = 50_000;

export interface EngageOp {
  distinct_id: string;
  $set?: Record<string, unknown>;
  $set_once?: Record<string, unknown>;
  $add?: Record<string, number>;
  $unset?: string[];
  $delete?: boolean;
}

type Endpoint = '/track' | '/engage';

/**
 * The Node SDK: `track`, `engage` and `alias` are queued and sent in batches of at most 500
 * (retried with backoff, honouring Retry-After; flushed on an interval, when a batch fills, on
 * `flush()`, on `shutdown()` and before the process exits); flags are evaluated in process from
 * definitions polled with the flag secret, remotely otherwise (see FlagsClient).
 */
export class Tally {
  readonly flags: FlagsClient;
  readonly transport: Transport;
  private queues: Record<Endpoint, object[]> = { '/track': [], '/engage': [] };
  private aliases: Array<{ alias: string; distinct_id: string }> = [];
  private flushing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout;
  private readonly batchSize: number;
  private readonly exitHandler = () => void this.flush();
  private closed = false;
  /** Exposures already sent, oldest first (a Map keeps insertion order): bounded by maxExposuresRemembered. */
  private exposed = new Map<string, true>();
  /** Counters, for tests and diagnostics. */
  readonly stats = { requests: 0, sent: 0, dropped: 0 };

  constructor(private opts: TallyOptions) {
    if (!opts.token) throw new Error('token is required');
    if (!opts.host) throw new Error('host is required');
    this.batchSize = Math.max(1, Math.min(MAX_BATCH, opts.batchSize ?? MAX_BATCH));
    this.transport = new Transport(opts.host, opts.retry, opts.timeoutMs, opts.fetch);
    this.flags = new FlagsClient(this.transport, opts.token, opts);
    void this.flags.start();
    this.timer = setInterval(() => void this.flush(), opts.flushIntervalMs ?? 1000);
    this.timer.unref();
    if (opts.flushOnExit !== false) process.on('beforeExit', this.exitHandler);
  }

  /** Resolves once the first flag definitions load was attempted. */
  ready(): Promise<void> {
    return this.flags.start();
  }

  track(event: string, distinctId: string, properties: Record<string, unknown> = {}): void {
    this.enqueue('/track', {
      event,
      properties: { time: Date.now(), $insert_id: randomUUID(), ...properties, distinct_id: distinctId },
    });
  }

  engage(op: EngageOp): void {
    this.enqueue('/engage', { ...op });
  }

  /** Links `alias` into the identity of `distinctId`; sent after the events queued before it. */
  alias(alias: string, distinctId: string): void {
    this.aliases.push({ alias, distinct_id: distinctId });
    void this.flush();
  }

  private enqueue(endpoint: Endpoint, record: object) {
    if (this.closed) throw new Error('client is shut down');
    const q = this.queues[endpoint];
    q.push(record);
    const max = this.opts.maxQueueSize ?? 100_000;
    if (q.length > max) {
      const dropped = q.splice(0, q.length - max);
      this.stats.dropped += dropped.length;
      this.opts.onError?.(new Error('queue full'), { endpoint, records: dropped });
    }
    if (q.length >= this.batchSize) void this.flush();
  }

  /** Sends everything queued so far; resolves when it was delivered or given up on. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.drain());
    return this.flushing;
  }

  private async drain(): Promise<void> {
    for (const endpoint of ['/track', '/engage'] as const) {
      const q = this.queues[endpoint];
      while (q.length > 0) await this.sendBatch(endpoint, q.splice(0, this.batchSize));
    }
    while (this.aliases.length > 0) {
      const a = this.aliases.shift()!;
      await this.deliver('/alias', a, [a]);
    }
  }

  /** A batch; a 413 (body over 1 MB) splits it in halves. */
  private async sendBatch(endpoint: Endpoint, batch: object[]): Promise<void> {
    try {
      this.stats.requests++;
      await this.transport.send('POST', endpoint, { body: batch, headers: { 'x-service-token': this.opts.token } });
      this.stats.sent += batch.length;
    } catch (err) {
      if (err instanceof TallyHttpError && err.status === 413 && batch.length > 1) {
        const half = Math.ceil(batch.length / 2);
        await this.sendBatch(endpoint, batch.slice(0, half));
        await this.sendBatch(endpoint, batch.slice(half));
        return;
      }
      this.stats.dropped += batch.length;
      this.opts.onError?.(err, { endpoint, records: batch });
    }
  }

  private async deliver(endpoint: string, body: unknown, records: unknown[]) {
    try {
      this.stats.requests++;
      await this.transport.send('POST', endpoint, { body, headers: { 'x-service-token': this.opts.token } });
      this.stats.sent += records.length;
    } catch (err) {
      this.stats.dropped += records.length;
      this.opts.onError?.(err, { endpoint, records });
    }
  }

  /** One flag (local when possible, remote otherwise). Rejects when it needs the server and the server fails. */
  async getFlag(key: string, distinctId: string): Promise<EvaluatedFlag> {
    const r = await this.flags.getFlag(key, distinctId);
    this.exposure(key, distinctId, r);
    return r;
  }

  /**
   * `$experiment_started` for a variant served to a distinct id for the first time (as far as the
   * bounded memory reaches: a forgotten one is sent again, which the analysis reads as the same
   * first exposure). A flag without variants, or not served, exposes nothing.
   */
  private exposure(key: string, distinctId: string, r: EvaluatedFlag): void {
    if (this.opts.experimentExposures === false || this.closed || !r.enabled || r.variant === null || r.variant === undefined) return;
    const id = `${key}\0${distinctId}\0${r.variant}`;
    if (this.exposed.has(id)) return;
    this.exposed.set(id, true);
    const max = Math.max(1, this.opts.maxExposuresRemembered ?? MAX_EXPOSURES_REMEMBERED);
    while (this.exposed.size > max) this.exposed.delete(this.exposed.keys().next().value!);
    this.track('$experiment_started', distinctId, { 'Experiment name': key, 'Variant name': r.variant });
  }

  /** How many exposures are remembered now (at most maxExposuresRemembered). */
  get exposuresRemembered(): number {
    return this.exposed.size;
  }

  /** Every flag of the project for one identity. */
  getAllFlags(distinctId: string): Promise<Record<string, EvaluatedFlag>> {
    return this.flags.getAllFlags(distinctId);
  }

  /** `enabled` of one flag; `defaultValue` when it cannot be evaluated (unknown key, server unreachable). */
  async isEnabled(key: string, distinctId: string, defaultValue = false): Promise<boolean> {
    try {
      const r = await this.getFlag(key, distinctId);
      return r.reason === 'not_found' ? defaultValue : r.enabled;
    } catch {
      return defaultValue;
    }
  }

  /** Flushes, stops polling and timers. */
  async shutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.flags.stop();
    process.off('beforeExit', this.exitHandler);
    await this.flush();
  }
}
