import type { BufferConsumer, IngestionBatch, IngestionBuffer } from './port.js';

/**
 * In-process buffer: a FIFO drained by one consumer loop, so batches apply in acceptance order.
 * A failing handler is retried with backoff (the batch stays at the head). Nothing survives a
 * process exit; that is the embedded mode's trade-off, the JetStream buffer keeps batches on disk.
 */
export class MemoryBuffer implements IngestionBuffer {
  readonly kind = 'memory' as const;
  private queue: IngestionBatch[] = [];
  private handler?: (batch: IngestionBatch) => Promise<void>;
  private draining?: Promise<void>;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  async publish(batch: IngestionBatch): Promise<void> {
    this.queue.push(batch);
    this.kick();
  }

  consume(handler: (batch: IngestionBatch) => Promise<void>): BufferConsumer {
    if (this.handler) throw new Error('the in-process buffer has one consumer');
    this.handler = handler;
    this.stopped = false;
    this.kick();
    return {
      stop: async () => {
        this.stopped = true;
        await this.draining;
        this.handler = undefined;
      },
    };
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
      const batch = this.queue[0];
      try {
        await this.handler(batch);
        this.queue.shift();
        backoffMs = 50;
      } catch (err) {
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
