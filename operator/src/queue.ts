/**
 * A work queue of object keys, like client-go's: a key waiting in the queue is queued once however
 * often it is added; a key is never processed by two workers at once (added while in flight, it is
 * queued again when the worker finishes); failures come back after an exponential backoff per key.
 */
export interface QueueOptions {
  concurrency: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  process(key: string): Promise<QueueResult>;
  onDepth?(depth: number): void;
}

/** What a processed key asks for: done, retry with backoff, or come back after a fixed delay. */
export type QueueResult = { kind: 'done' } | { kind: 'retry' } | { kind: 'after'; ms: number };

export class WorkQueue {
  private readonly order: string[] = [];
  private readonly queued = new Set<string>();
  private readonly inFlight = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly failures = new Map<string, number>();
  private running = 0;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly opts: QueueOptions) {}

  get depth(): number {
    return this.queued.size;
  }

  add(key: string): void {
    if (this.stopped) return;
    if (this.inFlight.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.order.push(key);
    this.opts.onDepth?.(this.queued.size);
    this.pump();
  }

  /** Adds the key after `ms`; an earlier pending delay for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** The backoff delay the next failure of `key` gets (base·2^failures, capped, ±10% jitter). */
  nextBackoff(key: string): number {
    const n = this.failures.get(key) ?? 0;
    const raw = Math.min(this.opts.backoffMaxMs, this.opts.backoffBaseMs * 2 ** n);
    return Math.round(raw * (0.9 + Math.random() * 0.2));
  }

  /** Resolves when nothing is queued, in flight or waiting on a timer shorter than `horizonMs`. */
  async idle(horizonMs = 0): Promise<void> {
    const busy = () => this.queued.size > 0 || this.inFlight.size > 0 || [...this.timers.values()].some((t) => t.at - Date.now() <= horizonMs);
    while (busy()) await new Promise<void>((resolve) => { this.idleWaiters.push(resolve); setTimeout(resolve, 50).unref(); });
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.order.length = 0;
    this.queued.clear();
    while (this.inFlight.size > 0) await new Promise((r) => setTimeout(r, 10));
  }

  private pump(): void {
    while (!this.stopped && this.running < this.opts.concurrency && this.order.length > 0) {
      const key = this.order.shift()!;
      this.queued.delete(key);
      this.inFlight.add(key);
      this.running++;
      this.opts.onDepth?.(this.queued.size);
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    let result: QueueResult;
    try {
      result = await this.opts.process(key);
    } catch {
      result = { kind: 'retry' };
    }
    this.inFlight.delete(key);
    this.running--;
    if (result.kind === 'retry') {
      const delay = this.nextBackoff(key);
      this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
      this.addAfter(key, delay);
    } else {
      this.failures.delete(key);
      if (result.kind === 'after') this.addAfter(key, result.ms);
    }
    if (this.dirty.delete(key)) this.add(key);
    this.pump();
    if (this.queued.size === 0 && this.inFlight.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}
