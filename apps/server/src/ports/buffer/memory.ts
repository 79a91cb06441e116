import type { BufferConsumer, BufferLag, ConsumeOptions, IngestionBatch, IngestionBuffer } from './port.js';
import { mergeBatches, mergeUnits, projectRunLength } from './batches.js';

/**
 * Records (and batches) the in-process buffer holds before a publish waits for room (see
 * publish). The worker takes all of a project's queued batches as one unit (applyUnit), so the
 * bound is also the size of a unit under load: each unit pays a fixed cost per store statement
 * (DuckDB's links and profiles scans, the commit of each insert), and 10,000 records (20 /track
 * batches of 500) make that cost small next to the rows' own (bench:ingest: 20,000 was no faster
 * and held 75 MB more heap; 5,000 was slower).
 */
const MAX_QUEUED_RECORDS = 10_000;
const MAX_QUEUED_BATCHES = 64;
/** How long a publish waits for room before it enqueues anyway. */
const MAX_PUBLISH_WAIT_MS = 30_000;

/**
 * In-process buffer: a FIFO drained by one consumer loop, so batches apply in acceptance order.
 * Consecutive mergeable batches of a project (ConsumeOptions.mergeable) already queued reach the
 * handler as one batch: one store insert for many requests, which is what makes the embedded
 * store fast (its per-statement cost dominates). A failing handler is retried with backoff (the
 * batch stays at the head). Nothing survives a process exit; that is the embedded mode's
 * trade-off, the JetStream buffer keeps batches on disk.
 */
export class MemoryBuffer implements IngestionBuffer {
  readonly kind = 'memory' as const;
  private queue: IngestionBatch[] = [];
  /** Records of the batches in `queue`. */
  private queuedRecords = 0;
  private handler?: (batch: IngestionBatch) => Promise<void>;
  private mergeable: (batch: IngestionBatch) => boolean = () => false;
  private applyUnit?: (batches: IngestionBatch[]) => Promise<void>;
  private draining?: Promise<void>;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];
  /** Publishers waiting for room, oldest first, with the size of the batch each will enqueue. */
  private roomWaiters: Array<{ records: number; wake: () => void }> = [];

  /**
   * Bounded: while the worker is more than MAX_QUEUED_RECORDS (or MAX_QUEUED_BATCHES) behind, a
   * publish waits (up to 30 s; behind publishers already waiting) before it enqueues, so memory
   * stays bounded under a flood.
   */
  async publish(batch: IngestionBatch): Promise<void> {
    if (this.full() || this.roomWaiters.length > 0) await this.room(batch.records.length);
    this.queue.push(batch);
    this.queuedRecords += batch.records.length;
    this.kick();
  }

  private full(): boolean {
    return this.queue.length > MAX_QUEUED_BATCHES || this.queuedRecords > MAX_QUEUED_RECORDS;
  }

  /**
   * Resolves once the worker has taken batches off the queue and there is room, in the order the
   * publishers started waiting, or after MAX_PUBLISH_WAIT_MS whatever the queue holds. Woken by the
   * worker (freeRoom), not by polling: under a flood every request would otherwise spin a timer
   * every few milliseconds on the thread that also applies the batches.
   */
  private room(records: number): Promise<void> {
    return new Promise((resolve) => {
      const waiter = {
        records,
        wake: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        const i = this.roomWaiters.indexOf(waiter);
        if (i >= 0) this.roomWaiters.splice(i, 1);
        resolve();
      }, MAX_PUBLISH_WAIT_MS);
      this.roomWaiters.push(waiter);
    });
  }

  /** Wakes waiting publishers while there is room (each one's batch is enqueued in its turn). */
  private freeRoom() {
    // A woken publisher enqueues in a later microtask, so its batch is counted here already.
    let batches = this.queue.length;
    let records = this.queuedRecords;
    while (this.roomWaiters.length > 0 && batches <= MAX_QUEUED_BATCHES && records <= MAX_QUEUED_RECORDS) {
      const waiter = this.roomWaiters.shift()!;
      waiter.wake();
      batches += 1;
      records += waiter.records;
    }
  }

  consume(handler: (batch: IngestionBatch) => Promise<void>, opts: ConsumeOptions = {}): BufferConsumer {
    if (this.handler) throw new Error('the in-process buffer has one consumer');
    this.handler = handler;
    this.mergeable = opts.mergeable ?? (() => false);
    this.applyUnit = opts.applyUnit;
    this.stopped = false;
    this.kick();
    return {
      stop: async () => {
        this.stopped = true;
        await this.draining;
        this.handler = undefined;
        this.applyUnit = undefined;
      },
    };
  }

  /** Nothing to report: redelivery and dead letters do not happen in process. */
  watch(): void {}

  async lag(): Promise<BufferLag | undefined> {
    return undefined;
  }

  /** Resolves when every published batch has been handled (tests and graceful shutdown). */
  idle(): Promise<void> {
    if (this.queue.length === 0 && !this.draining) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  get depth(): number {
    return this.queue.length;
  }

  private kick() {
    if (this.draining || !this.handler || this.stopped) return;
    this.draining = this.drain().finally(() => {
      this.draining = undefined;
      if (this.queue.length > 0 && this.handler && !this.stopped) this.kick();
      else if (this.queue.length === 0) this.idleWaiters.splice(0).forEach((w) => w());
    });
  }

  private async drain() {
    let backoffMs = 50;
    while (this.queue.length > 0 && this.handler && !this.stopped) {
      // The head, merged with the mergeable batches of its project queued right behind it.
      // Taken off the queue while it is applied, so publishers get room meanwhile (the backlog
      // bound counts waiting batches); put back at the head if the handler fails.
      // With applyUnit: the head and every batch of its project queued right behind it, of any kind.
      const unit = this.applyUnit ? this.queue.slice(0, projectRunLength(this.queue, (b) => b)) : mergeUnits(this.queue.slice(0, 1000), (b) => b, this.mergeable)[0];
      this.queue.splice(0, unit.length);
      for (const b of unit) this.queuedRecords -= b.records.length;
      this.freeRoom();
      try {
        if (this.applyUnit) await this.applyUnit(unit);
        else await this.handler(mergeBatches(unit));
        backoffMs = 50;
      } catch (err) {
        this.queue.unshift(...unit.map((b) => ({ ...b, redelivered: true })));
        for (const b of unit) this.queuedRecords += b.records.length;
        console.error('ingestion: store write failed, retrying', err instanceof Error ? err.message : err);
        await new Promise((r) => setTimeout(r, backoffMs));
        backoffMs = Math.min(backoffMs * 2, 5000);
      }
    }
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.stopped = true;
    await this.draining;
  }
}
