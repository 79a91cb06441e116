/**
 * ClickHouse's side of fairness between organisations: the settings of a ranked read (ReadOptions.rank,
 * the number of analyses its organisation runs at that moment).
 */

/** Rows of a block read by an organisation running more than one analysis (ClickHouse's default 65,536). */
export const SHARED_BLOCK_ROWS = 8192;

/**
 * - `priority` = rank: while a read of a better non-zero priority runs, the others pause each time they
 *   have read a block (ClickHouse's QueryStatus::updateProgressIn, 18.16 and current releases; each
 *   pause at most a second), so a quiet organisation's read goes before a flooding one's.
 * - An organisation running `rank` > 1 analyses reads with `max_threads` = the server's threads /
 *   rank (at least 1), so its analyses together take about the server's threads, not rank times
 *   them, and leave cores to the next organisation's read; and in blocks of SHARED_BLOCK_ROWS rows,
 *   so they reach a pause point eight times as often: a quiet organisation's read that starts
 *   meanwhile waits for less of their work in progress.
 *
 * `serverThreads`: the server's own max_threads (undefined when unknown: the thread share is left out).
 * `contended` false (no other organisation active): the priority only. A 12-card board at 10M events
 * ran its four cards at once at ranks 2-4 against itself: 6.9-9.1 s a streamed run, 5.7-6.4 s
 * with whole threads and blocks (back to back, load 2.1-2.5).
 */
export function rankedReadSettings(rank: number, serverThreads: number | undefined, contended = true): Record<string, string> {
  const r = Math.max(1, Math.floor(rank));
  const settings: Record<string, string> = { priority: String(r) };
  if (r === 1 || !contended) return settings;
  if (serverThreads) settings.max_threads = String(Math.max(1, Math.floor(serverThreads / r)));
  settings.max_block_size = String(SHARED_BLOCK_ROWS);
  return settings;
}

/** `2`, `'auto(8)'` (current releases' spelling of the default): the number of threads; undefined if none. */
export function parseMaxThreads(value: string): number | undefined {
  const m = /(\d+)/.exec(value);
  return m && Number(m[1]) > 0 ? Number(m[1]) : undefined;
}
