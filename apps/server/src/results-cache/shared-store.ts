import type { Db } from '../ports/metadata/knex.js';
import type { Entry } from './lru.js';

/** Rows one eviction statement deletes at most; a next insert deletes more if still over. */
const EVICT_BATCH = 500;
/** A read refreshes an entry's `last_read` only when older than this: a hit is one read, not one read and one write. */
const READ_MARK_MS = 60_000;
/** Ids one read, and rows (8 values each) one write, names at most: SQLite (3.32 on) binds at most 32,766 values a statement, PostgreSQL 65,535. A year of daily parts is one statement. */
const ROWS_PER_STATEMENT = 1_000;

/**
 * The second level of the results cache (index.ts) when RESULTS_CACHE=shared: finished answers,
 * and the parts of closed buckets of trends (partials.ts), in the metadata store's `results_cache`
 * table, so what one API process (or the worker warming boards) computed is served by every other. An entry carries its project (checked on read as well as hashed into its id), the
 * signature it was computed under and when; whether it may be served is decided by the caller
 * exactly as for its own memory. The table is bounded by the bytes of its answers
 * (RESULTS_CACHE_SHARED_MAX_MB): after an insert, the least recently read entries beyond the bound
 * go in one statement of at most EVICT_BATCH rows. That statement reads the whole table (96 ms at
 * 20,000 entries of 10 kB on a loaded machine), so it runs beside the answer, not before it: one at
 * a time per process, inserts meanwhile coalesced into one more run.
 *
 * A failure of this table (a lost connection) never fails an analysis: a read answers a miss,
 * a write is dropped (index.ts).
 */
export class SharedEntries {
  private evicting: Promise<void> | undefined;
  private evictAgain = false;

  constructor(private db: Db, readonly maxBytes: number, private onError: (err: unknown) => void = () => {}) {}

  async get(id: string, projectId: number, now = Date.now()): Promise<Entry<object> | undefined> {
    return (await this.getMany([id], projectId, now)).get(id);
  }

  /**
   * The stored entries of these ids of the project (the closed buckets' parts of one run,
   * partials.ts), read by one statement per ROWS_PER_STATEMENT ids, not one per id.
   */
  async getMany(ids: readonly string[], projectId: number, now = Date.now()): Promise<Map<string, Entry<object>>> {
    const out = new Map<string, Entry<object>>();
    for (let i = 0; i < ids.length; i += ROWS_PER_STATEMENT) {
      const rows = await this.db('results_cache').whereIn('id', ids.slice(i, i + ROWS_PER_STATEMENT)).andWhere({ project_id: projectId });
      const stale = rows.filter((r: Record<string, unknown>) => Number(r.last_read) < now - READ_MARK_MS).map((r: Record<string, unknown>) => r.id as string);
      if (stale.length) {
        await this.db('results_cache').whereIn('id', stale).andWhere('last_read', '<', now - READ_MARK_MS).update({ last_read: now });
      }
      // Memory holds it at two bytes a character (lru.ts).
      for (const row of rows) {
        out.set(row.id, { value: JSON.parse(row.value), signature: row.signature, at: Number(row.computed_at), live: Boolean(row.live), bytes: 2 * Number(row.bytes) });
      }
    }
    return out;
  }

  /** Stores (or replaces) an entry, then trims the table to its bound. An answer over a quarter of the bound is not kept. */
  async set(id: string, projectId: number, entry: Entry<object>, now = Date.now()): Promise<void> {
    return this.setMany([[id, entry]], projectId, now);
  }

  /** Stores (or replaces) entries of one project, one statement per ROWS_PER_STATEMENT, then trims the table once. */
  async setMany(entries: ReadonlyArray<readonly [string, Entry<object>]>, projectId: number, now = Date.now()): Promise<void> {
    const rows = entries.map(([id, entry]) => {
      const value = JSON.stringify(entry.value);
      const bytes = value.length + entry.signature.length + id.length;
      return { id, project_id: projectId, signature: entry.signature, value, computed_at: entry.at, live: entry.live, bytes, last_read: now };
    }).filter((row) => row.bytes <= this.maxBytes / 4);
    if (!rows.length) return;
    for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
      await this.db('results_cache').insert(rows.slice(i, i + ROWS_PER_STATEMENT)).onConflict('id').merge();
    }
    this.scheduleEvict();
  }

  /** Resolves once no eviction of this process is running or asked for. */
  async settled(): Promise<void> {
    while (this.evicting) await this.evicting;
  }

  private scheduleEvict(): void {
    if (this.evicting) {
      this.evictAgain = true;
      return;
    }
    this.evicting = (async () => {
      do {
        this.evictAgain = false;
        await this.evict();
      } while (this.evictAgain);
    })().catch(this.onError).finally(() => { this.evicting = undefined; });
  }

  /**
   * Deletes the least recently read entries whose running total of bytes, newest read first,
   * passes the bound (at most EVICT_BATCH per call). Answers how many went.
   */
  async evict(): Promise<number> {
    const r = await this.db.raw(
      `DELETE FROM results_cache WHERE id IN (
         SELECT id FROM (
           SELECT id, SUM(bytes) OVER (ORDER BY last_read DESC, id DESC ROWS UNBOUNDED PRECEDING) AS running FROM results_cache
         ) kept WHERE running > ? LIMIT ${EVICT_BATCH})`,
      [this.maxBytes],
    );
    return Number(r?.rowCount ?? r?.changes ?? 0);
  }

  /** The bytes and rows the table holds (tests, the docs' figures). */
  async size(): Promise<{ bytes: number; rows: number }> {
    const [row] = await this.db('results_cache').sum({ b: 'bytes' }).count({ n: '*' });
    return { bytes: Number(row?.b ?? 0), rows: Number(row?.n ?? 0) };
  }
}
