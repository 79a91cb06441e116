import { AppError } from '../../http/errors.js';
import { LIMITS } from '../../limits.js';
import { queryMetrics } from './metrics.js';

/** `429 too many concurrent queries` with `Retry-After` (whole seconds, at least 1). */
export function tooManyConcurrentQueries(queueMs: number): AppError {
  const seconds = Math.max(LIMITS.retryAfterMinSeconds, Math.ceil(queueMs / 1000));
  return new AppError(429, 'too many concurrent queries', {
    headers: { 'Retry-After': String(seconds) },
    message: `the organisation already runs its most queries at once; this one waited ${queueMs} ms for a slot`,
  });
}

/** One slot of an organisation: its release (call it once the engine is done; later calls do nothing). */
export interface Slot {
  release: () => void;
}

interface Waiter {
  grant(slot: Slot): void;
}

/**
 * Fairness between organisations: at most `perOrg` analyses of one organisation hold the engine at
 * once in this process; more wait in arrival order up to `queueMs` for a slot, then are refused
 * (429), so one team's flood queues behind itself and never in front of another team's queries.
 * While another organisation is active too (holding or waiting for a slot, or having released one
 * within `activeMs`), each runs one analysis at a time: a flooding organisation starts no second
 * one, so another's read shares the engine with one of the flood's statements, not `perOrg` (a
 * priority pauses them only between the blocks they read; what they compute after reading takes
 * the cores all the same). One statement already takes all of ClickHouse's threads, and DuckDB
 * runs one at a time, so the flood loses little: on 2 cores it got as many answers either way
 * (docs/performance.md, "Fairness between organisations"). Inside the engine, the
 * executor ranks each statement by `load(org)` (ports/events ReadOptions), so a flooding
 * organisation's statements yield to a quiet one's. Counted per API process (replicas each allow
 * `perOrg`): the engines' own per-query bounds cap what each running query may take.
 */
export class OrgSlots {
  /** The slots each organisation holds now. */
  private held = new Map<number, number>();
  private waiting = new Map<number, Waiter[]>();
  /** When each organisation last released a slot (it counts as active for `activeMs` after). */
  private lastRelease = new Map<number, number>();

  /**
   * `activeMs`: how long an organisation counts as active after its last slot ends; longer than
   * the gap between one client's queries sent back to back (its answer, its next request's checks).
   */
  constructor(readonly perOrg: number, readonly queueMs: number, readonly activeMs = 1000) {}

  /** How many analyses `orgId` may start running at once now: `perOrg`, or one while others are active. */
  limit(orgId: number): number {
    return this.othersActive(orgId) ? 1 : this.perOrg;
  }

  /** Whether an organisation other than `orgId` holds or waits for a slot, or released one within `activeMs`. */
  othersActive(orgId: number): boolean {
    const now = Date.now();
    const others = new Set<number>();
    for (const [org] of this.held) others.add(org);
    for (const [org] of this.waiting) others.add(org);
    for (const [org, at] of this.lastRelease) {
      if (now - at < this.activeMs) others.add(org);
      else this.lastRelease.delete(org);
    }
    others.delete(orgId);
    return others.size > 0;
  }

  /** Analyses of `orgId` holding a slot now, and waiting for one. */
  load(orgId: number): { running: number; waiting: number } {
    return { running: this.held.get(orgId) ?? 0, waiting: this.waiting.get(orgId)?.length ?? 0 };
  }

  /** Resolves with the slot's release (call it once the engine is done; later calls do nothing). */
  async acquire(orgId: number): Promise<() => void> {
    return (await this.take(orgId)).release;
  }

  /** Resolves with a slot of `orgId`, after waiting for one if all are held; 429 after `queueMs`. */
  take(orgId: number): Promise<Slot> {
    const org = String(orgId);
    const held = this.held.get(orgId) ?? 0;
    if (held < this.limit(orgId) && !this.waiting.has(orgId)) return Promise.resolve(this.grant(orgId));
    return new Promise((resolve, reject) => {
      const queue = this.waiting.get(orgId) ?? [];
      this.waiting.set(orgId, queue);
      const waiter: Waiter = {
        grant: (slot) => {
          clearTimeout(timer);
          queryMetrics.waiting.dec({ org });
          resolve(slot);
        },
      };
      const timer = setTimeout(() => {
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
        if (queue.length === 0 && this.waiting.get(orgId) === queue) this.waiting.delete(orgId);
        queryMetrics.waiting.dec({ org });
        queryMetrics.refused.inc({ org });
        reject(tooManyConcurrentQueries(this.queueMs));
      }, this.queueMs);
      queue.push(waiter);
      queryMetrics.waiting.inc({ org });
    });
  }

  /** Runs `work` holding one of the organisation's slots. */
  async hold<T>(orgId: number, work: () => Promise<T>): Promise<T> {
    const { release } = await this.take(orgId);
    try {
      return await work();
    } finally {
      release();
    }
  }

  private grant(orgId: number): Slot {
    this.held.set(orgId, (this.held.get(orgId) ?? 0) + 1);
    queryMetrics.running.inc({ org: String(orgId) });
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const held = (this.held.get(orgId) ?? 1) - 1;
      if (held > 0) this.held.set(orgId, held);
      else this.held.delete(orgId);
      queryMetrics.running.dec({ org: String(orgId) });
      this.lastRelease.set(orgId, Date.now());
      this.pump(orgId);
      // Others' parts grow as this organisation stops being active: their waiters may start then.
      if (this.waiting.size > 0 && !this.held.has(orgId) && !this.waiting.has(orgId)) setTimeout(() => this.pumpAll(), this.activeMs + 1).unref();
    };
    return { release };
  }

  /** Starts the longest waiters of `orgId` while it is under its limit (a slot passes on in arrival order). */
  private pump(orgId: number): void {
    const queue = this.waiting.get(orgId);
    while (queue && queue.length > 0 && (this.held.get(orgId) ?? 0) < this.limit(orgId)) {
      const next = queue.shift()!;
      if (queue.length === 0) this.waiting.delete(orgId);
      next.grant(this.grant(orgId));
    }
  }

  private pumpAll(): void {
    for (const orgId of [...this.waiting.keys()]) this.pump(orgId);
  }
}
