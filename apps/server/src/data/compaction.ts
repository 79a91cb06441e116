import type { Deps } from '../deps.js';
import { pollingLoop, type BackgroundLoop } from '../background/loop.js';
import { int } from '../env.js';

/**
 * Merges the event store's quiet months. ClickHouse keeps copies of a dedup key (a retried
 * batch, a redelivery) until a merge collapses them, so a read that counts every row (totals,
 * flows, cohorts' behaviour counts) must deduplicate with FINAL, which costs 5-6× a plain scan.
 * Readers only do that for the months that may still hold copies (EventStore.unmergedRanges); this
 * worker merges a month (`OPTIMIZE … FINAL`) once it has had no write for a while, so past months
 * are read as stored and only the months still written to pay for deduplication. DuckDB dedups at
 * write: nothing to do.
 */
export interface CompactionSettings {
  /** Pause between runs (EVENTS_MERGE_INTERVAL_MS); 0 turns the worker off. */
  intervalMs: number;
  /** A month is merged once its newest part is this old (EVENTS_MERGE_QUIET_MS). */
  quietMs: number;
}

/** Months merged per run at most (each is one OPTIMIZE, run one after another). */
const MONTHS_PER_RUN = 12;

export function compactionSettings(env = process.env): CompactionSettings {
  return {
    intervalMs: int(env, 'EVENTS_MERGE_INTERVAL_MS', 600_000),
    quietMs: int(env, 'EVENTS_MERGE_QUIET_MS', 3_600_000),
  };
}

export function eventsCompactionLoop(deps: Pick<Deps, 'events' | 'log'>, settings = compactionSettings()): BackgroundLoop {
  if (settings.intervalMs <= 0) return { name: 'events-compaction', stop: async () => undefined };
  return pollingLoop('events-compaction', { firstDelayMs: settings.intervalMs, intervalMs: settings.intervalMs }, async () => {
    const n = await deps.events.mergeQuietPartitions(settings.quietMs, MONTHS_PER_RUN);
    if (n) deps.log.info('event months merged', { months: n });
  }, (err) => deps.log.error('events compaction', { err: err instanceof Error ? err.message : String(err) }));
}
