/** Where a statement runs: the adapter's connection, or the second one of the express lane. */
export type Lane = 'main' | 'express';

/**
 * DuckDB's statements, one at a time (the adapter's single connection runs one statement after
 * another), taken from the queue by rank rather than arrival: a statement of a better (lower) rank
 * goes before the waiting ones of worse ranks, statements of one rank in arrival order, unranked
 * statements (writes, jobs) first. This is the embedded engine's side of fairness between
 * organisations (ReadOptions.rank): an organisation's first analysis is not queued behind the
 * second, third and fourth of an organisation flooding the engine. A statement that has waited
 * `maxPassMs` is taken next whatever its rank, so no rank waits for ever (ClickHouse's priorities
 * likewise let a paused query on after a second). With `express`, a read better ranked than the
 * running one does not wait for it at all (below), and while it runs in the express lane the main
 * lane starts no read of a worse rank (DuckDB's pause point is between statements, as ClickHouse's
 * is between blocks), so the better read shares the cores with the worse statement already running
 * and with no new one; writes and reads as good still start, and the `maxPassMs` rule still holds.
 */
export class RankedStatementQueue {
  private waiting: Array<{ rank: number; since: number; start: () => void }> = [];
  private running = false;
  /** The rank of the statement running in the main lane (0: unranked, a write or a job). */
  private runningRank = 0;
  private expressBusy = false;
  /** The rank of the read in the express lane (while `expressBusy`). */
  private expressRank = 0;
  /** A wake-up for the main lane held back by the express lane, at the held statement's `maxPassMs`. */
  private holdTimer?: NodeJS.Timeout;
  private idle: Array<() => void> = [];

  /**
   * `express`: a ranked read better than the ranked read running (a quiet organisation's while a
   * flood's runs) starts at once in a second lane (the adapter's second connection), one at a
   * time, rather than waiting for the running statement to end. bench:fairness measured the
   * quiet organisation's p95 at 9.6x its idle p95 without it (each of its reads waited for one of
   * the flood's).
   */
  constructor(private maxPassMs = 1000, private express = false) {}

  /** Runs `work` once the statements before it are done; `rank` 0 (unranked) goes first. `work` learns its lane. */
  run<T>(work: (lane: Lane) => Promise<T>, rank = 0): Promise<T> {
    rank = Math.max(0, rank);
    if (this.express && !this.expressBusy && rank > 0 && this.running && this.runningRank > rank) {
      this.expressBusy = true;
      this.expressRank = rank;
      const done = () => {
        this.expressBusy = false;
        this.expressRank = 0;
        if (!this.running) this.next();
      };
      const p = Promise.resolve().then(() => work('express'));
      p.then(done, done);
      return p;
    }
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        Promise.resolve().then(() => work('main')).then(resolve, reject).finally(() => {
          this.running = false;
          this.runningRank = 0;
          this.next();
        });
      };
      this.waiting.push({ rank, since: Date.now(), start });
      if (!this.running) this.next();
    });
  }

  /** Resolves once nothing runs or waits (close). */
  drained(): Promise<void> {
    if (!this.running && !this.expressBusy && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Statements waiting, by rank (tests). */
  ranks(): number[] {
    return this.waiting.map((w) => w.rank);
  }

  private next(): void {
    if (this.waiting.length === 0) {
      if (!this.expressBusy) for (const resolve of this.idle.splice(0)) resolve();
      return;
    }
    let pick = 0;
    // The first of the lowest rank, unless the longest waiter has been passed over long enough.
    const waited = Date.now() - this.waiting[0].since;
    if (waited < this.maxPassMs) {
      for (let i = 1; i < this.waiting.length; i++) if (this.waiting[i].rank < this.waiting[pick].rank) pick = i;
      // A better read runs in the express lane: a worse one waits for it (the lane's end calls next).
      if (this.expressBusy && this.waiting[pick].rank > this.expressRank) {
        clearTimeout(this.holdTimer);
        this.holdTimer = setTimeout(() => { if (!this.running) this.next(); }, this.maxPassMs - waited);
        this.holdTimer.unref();
        return;
      }
    }
    clearTimeout(this.holdTimer);
    const [chosen] = this.waiting.splice(pick, 1);
    this.running = true;
    this.runningRank = chosen.rank;
    chosen.start();
  }
}
