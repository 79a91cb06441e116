/**
 * DuckDB's statements, one at a time (the adapter's single connection runs one statement after
 * another), taken from the queue by rank rather than arrival: a statement of a better (lower) rank
 * goes before the waiting ones of worse ranks, statements of one rank in arrival order, unranked
 * statements (writes, jobs) first. This is the embedded engine's side of fairness between
 * organisations (ReadOptions.rank): an organisation's first analysis is not queued behind the
 * second, third and fourth of an organisation flooding the engine. A statement that has waited
 * `maxPassMs` is taken next whatever its rank, so no rank waits for ever (ClickHouse's priorities
 * likewise let a paused query on after a second).
 */
export class RankedStatementQueue {
  private waiting: Array<{ rank: number; since: number; start: () => void }> = [];
  private running = false;
  private idle: Array<() => void> = [];

  constructor(private maxPassMs = 1000) {}

  /** Runs `work` once the statements before it are done; `rank` 0 (unranked) goes first. */
  run<T>(work: () => Promise<T>, rank = 0): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const start = () => {
        Promise.resolve().then(work).then(resolve, reject).finally(() => {
          this.running = false;
          this.next();
        });
      };
      this.waiting.push({ rank: Math.max(0, rank), since: Date.now(), start });
      if (!this.running) this.next();
    });
  }

  /** Resolves once nothing runs or waits (close). */
  drained(): Promise<void> {
    if (!this.running && this.waiting.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Statements waiting, by rank (tests). */
  ranks(): number[] {
    return this.waiting.map((w) => w.rank);
  }

  private next(): void {
    if (this.waiting.length === 0) {
      for (const resolve of this.idle.splice(0)) resolve();
      return;
    }
    let pick = 0;
    // The first of the lowest rank, unless the longest waiter has been passed over long enough.
    if (Date.now() - this.waiting[0].since < this.maxPassMs) {
      for (let i = 1; i < this.waiting.length; i++) if (this.waiting[i].rank < this.waiting[pick].rank) pick = i;
    }
    const [chosen] = this.waiting.splice(pick, 1);
    this.running = true;
    chosen.start();
  }
}
