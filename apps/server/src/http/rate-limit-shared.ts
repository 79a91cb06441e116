import type { Db } from '../ports/metadata/knex.js';
import type { Bound, RateCounter, Window } from './rate-limit.js';
import { groupCommit } from '../ports/metadata/group-commit.js';

/**
 * Request counts in PostgreSQL, one for every API process (migration 0011_rate_limits): each check
 * is one call of `rate_limit_windows` or `rate_limit_bucket`, atomic in the database. A refused key
 * is remembered here until its wait is over (a full window only fills up, and no other process can
 * add tokens to a bucket), so a client hammering past its limit costs no round trip per request.
 */
export class SharedCounter implements RateCounter {
  private fullUntil = new Map<string, number>();
  private lastSweep = 0;

  /** `staleMs`: rows untouched that long hold nothing (windows over, buckets full again). */
  constructor(private db: Db, private staleMs: number, private now: () => number = Date.now) {}

  async windows(checks: Array<{ key: string; limit: Window }>): Promise<number> {
    const known = this.knownWait(checks.map((c) => c.key));
    if (known > 0) return known;
    this.sweep();
    return this.checkGrouped(checks.map(({ key, limit }) => ({ k: key, n: limit.requests, w: limit.windowMs })));
  }

  /**
   * Group commit (ports/metadata/group-commit.ts), as the quota's (usage/store.ts): the checks that
   * arrived while one ran go to the database together, one `rate_limit_windows_batch` call
   * answering each in arrival order exactly as one call each would (under concurrent ingestion
   * this was one statement per request).
   */
  private checkGrouped = groupCommit<Array<{ k: string; n: number; w: number }>, number>(
    async (arg) => {
      const res = await this.db.raw('SELECT full_key, wait_ms FROM rate_limit_windows(?::jsonb)', [JSON.stringify(arg)]);
      return this.waitOf(res.rows);
    },
    async (args) => {
      const res = await this.db.raw('SELECT req, full_key, wait_ms FROM rate_limit_windows_batch(?::jsonb)', [JSON.stringify(args)]);
      const rows = res.rows as Array<{ req: number; full_key: string; wait_ms: number }>;
      return args.map((_, i) => ({ status: 'fulfilled', value: this.waitOf(rows.filter((r) => Number(r.req) === i + 1)) }));
    },
  );

  /** The longest wait among a check's refused keys (0: admitted), each remembered. */
  private waitOf(rows: Array<{ full_key: string; wait_ms: number }>): number {
    let wait = 0;
    for (const row of rows) wait = Math.max(wait, this.remember(row.full_key, Number(row.wait_ms)));
    return wait;
  }

  async bucket(key: string, bound: Bound): Promise<number> {
    const known = this.knownWait([key]);
    if (known > 0) return known;
    this.sweep();
    const res = await this.db.raw('SELECT rate_limit_bucket(?, ?, ?) AS wait_ms', [key, bound.perSecond, bound.burst]);
    return this.remember(key, Number(res.rows[0].wait_ms));
  }

  private knownWait(keys: string[]): number {
    const now = this.now();
    let wait = 0;
    for (const k of keys) {
      const until = this.fullUntil.get(k);
      if (until === undefined) continue;
      if (until > now) wait = Math.max(wait, until - now);
      else this.fullUntil.delete(k);
    }
    return wait;
  }

  private remember(key: string, waitMs: number): number {
    if (waitMs > 0) this.fullUntil.set(key, this.now() + waitMs);
    return waitMs;
  }

  /** At most once a minute and off the request's path: drops rows that hold nothing any more. */
  private sweep() {
    const now = this.now();
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [k, until] of this.fullUntil) if (until <= now) this.fullUntil.delete(k);
    this.db
      .raw('DELETE FROM rate_limit_counters WHERE at_ms < floor(extract(epoch FROM clock_timestamp()) * 1000) - ?', [this.staleMs])
      .catch(() => undefined);
  }
}

/** How long a row of these limits may sit untouched before it holds nothing. */
export function staleAfterMs(windows: Window[], buckets: Bound[]): number {
  return Math.max(60_000, ...windows.map((w) => w.windowMs), ...buckets.map((b) => Math.ceil((b.burst / b.perSecond) * 1000)));
}
