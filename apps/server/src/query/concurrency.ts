import { AppError } from '../http/errors.js';
import { LIMITS } from '../limits.js';

/** `429 too many concurrent queries` with `Retry-After` (whole seconds, at least 1). */
export function tooManyConcurrentQueries(queueMs: number): AppError {
  const seconds = Math.max(LIMITS.retryAfterMinSeconds, Math.ceil(queueMs / 1000));
  return new AppError(429, 'too many concurrent queries', {
    headers: { 'Retry-After': String(seconds) },
    message: `the organisation already runs its most queries at once; this one waited ${queueMs} ms for a slot`,
  });
}

interface Waiter {
  grant(release: () => void): void;
}

/**
 * Fairness between organisations: at most `perOrg` analyses of one organisation hold the engine at
 * once in this process; more wait in arrival order up to `queueMs` for a slot, then are refused
 * (429), so one team's flood queues behind itself and never in front of another team's queries.
 * Counted per API process (replicas each allow `perOrg`): the engines' own per-query bounds cap
 * what each running query may take.
 */
export class OrgSlots {
  private running = new Map<number, number>();
  private waiting = new Map<number, Waiter[]>();

  constructor(readonly perOrg: number, readonly queueMs: number) {}

  /** Analyses of `orgId` holding a slot now, and waiting for one. */
  load(orgId: number): { running: number; waiting: number } {
    return { running: this.running.get(orgId) ?? 0, waiting: this.waiting.get(orgId)?.length ?? 0 };
  }

  /** Resolves with the slot's release (call it once the engine is done; later calls do nothing). */
  acquire(orgId: number): Promise<() => void> {
    const n = this.running.get(orgId) ?? 0;
    if (n < this.perOrg) {
      this.running.set(orgId, n + 1);
      return Promise.resolve(this.releaser(orgId));
    }
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(orgId) ?? [];
      this.waiting.set(orgId, queue);
      const waiter: Waiter = {
        grant: (release) => {
          clearTimeout(timer);
          resolve(release);
        },
      };
      const timer = setTimeout(() => {
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
        if (queue.length === 0 && this.waiting.get(orgId) === queue) this.waiting.delete(orgId);
        reject(tooManyConcurrentQueries(this.queueMs));
      }, this.queueMs);
      queue.push(waiter);
    });
  }

  /** Runs `work` holding one of the organisation's slots. */
  async hold<T>(orgId: number, work: () => Promise<T>): Promise<T> {
    const release = await this.acquire(orgId);
    try {
      return await work();
    } finally {
      release();
    }
  }

  private releaser(orgId: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const queue = this.waiting.get(orgId);
      const next = queue?.shift();
      if (queue && queue.length === 0) this.waiting.delete(orgId);
      // The slot passes to the longest waiter as it is: the count stays.
      if (next) return next.grant(this.releaser(orgId));
      const n = (this.running.get(orgId) ?? 1) - 1;
      if (n > 0) this.running.set(orgId, n);
      else this.running.delete(orgId);
    };
  }
}
