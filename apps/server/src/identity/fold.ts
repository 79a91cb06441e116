import type { Deps } from '../deps.js';
import { pollingLoop, type BackgroundLoop } from '../background/loop.js';
import { int } from '../env.js';
import { runExclusively } from '../ports/metadata/knex.js';

/**
 * Identity at write time ("persons on events" with overrides, as PostHog does it): the ingestion
 * worker writes each event with `person_id`, its identity under the links stored then. A link
 * made afterwards (an anonymous visitor identified later, an /alias) changes the identity of rows
 * already written; until this fold runs, readers join that link (an unfolded link: an override)
 * and ignore the rows' person_id for its distinct_id. The fold rewrites person_id of every row
 * of those distinct_ids (ClickHouse: an ALTER … UPDATE mutation; DuckDB: an UPDATE) and then
 * marks the links folded, so the overrides stay a small table and the hot path of every
 * analysis reads person_id without joining every link of the project.
 *
 * Safe to run at any time, even from several processes at once (each step is idempotent; the
 * worker still takes turns, see foldExclusively): a link is
 * marked folded only after every events row existing when the fold started carries its answer,
 * and rows written later were resolved with it (a project's batches are applied in order, and
 * a batch's links are stored before its events are resolved and written).
 */
export interface FoldSettings {
  /** Pause between fold runs (IDENTITY_FOLD_INTERVAL_MS); 0 turns the fold off. */
  intervalMs: number;
  /** Links folded per step at most (IDENTITY_FOLD_BATCH). */
  batch: number;
  /**
   * Only links at least this old are folded (IDENTITY_FOLD_MIN_AGE_MS). With several pipeline
   * workers a batch resolved just before a link was stored may still be inserting when the link
   * is new (docs/pipeline.md, order per project): its rows must exist when the fold starts.
   */
  minAgeMs: number;
}

export function foldSettings(env = process.env): FoldSettings {
  return {
    intervalMs: int(env, 'IDENTITY_FOLD_INTERVAL_MS', 30_000),
    batch: Math.max(1, int(env, 'IDENTITY_FOLD_BATCH', 100_000)),
    minAgeMs: int(env, 'IDENTITY_FOLD_MIN_AGE_MS', 60_000),
  };
}

/** Folds every unfolded link old enough (in steps of `batch`); returns how many it folded. */
export async function foldIdentityLinks(deps: Pick<Deps, 'events'>, opts: Partial<Pick<FoldSettings, 'batch' | 'minAgeMs'>> = {}): Promise<number> {
  const { batch, minAgeMs } = { ...foldSettings(), ...opts };
  const createdBefore = Date.now() - minAgeMs;
  let total = 0;
  for (;;) {
    const n = await deps.events.foldLinks(batch, createdBefore);
    total += n;
    if (n < batch) return total;
  }
}

/** Key of the PostgreSQL advisory lock one fold run holds (any constant shared by all processes). */
export const FOLD_LOCK = 0x666f_6c64; // 'fold'

/**
 * One fold run unless another process sharing the metadata store is folding: the chart runs two
 * workers, and both folding would send ClickHouse the same mutations (runExclusively). Answers
 * null when the other process had the lock.
 */
export async function foldExclusively(deps: Pick<Deps, 'events' | 'db'>, opts: Partial<Pick<FoldSettings, 'batch' | 'minAgeMs'>> = {}): Promise<number | null> {
  return runExclusively(deps.db, FOLD_LOCK, () => foldIdentityLinks(deps, opts));
}

export function identityFoldLoop(deps: Deps, settings = foldSettings()): BackgroundLoop {
  if (settings.intervalMs <= 0) return { name: 'identity-fold', stop: async () => undefined };
  return pollingLoop('identity-fold', { firstDelayMs: settings.intervalMs, intervalMs: settings.intervalMs }, async () => {
    const n = await foldExclusively(deps, settings);
    if (n) deps.log.info('identity links folded into events', { links: n });
  }, (err) => deps.log.error('identity fold', { err: err instanceof Error ? err.message : String(err) }));
}
