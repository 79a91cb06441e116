import type { Db } from '../ports/metadata/knex.js';
import { DAY_MS } from '../query/dialects/index.js';

/** The last day a row can name: "from this day on". */
export const LAST_DAY = 2_147_483_647;
/** Rows of project 0 concern every project (a write whose project is unknown). */
const EVERY_PROJECT = 0;
/**
 * The "day" of a project's identity changes (the identity fold): its row (first_day = last_day =
 * PERSONS_DAY) overlaps no span of days, and is summed only into the signature of answers that may
 * depend on identities (identities.ts), so a fold keeps event counts cached.
 */
export const PERSONS_DAY = -1;

export const dayOf = (ms: number) => Math.floor(ms / DAY_MS);

/** One span of days of one project whose stored events may have changed. */
export interface Touched {
  projectId: number;
  firstDay: number;
  lastDay: number;
}

/**
 * Change numbers of the event data, per project and span of days, in the metadata store
 * (`results_versions`), so every process sees every other's writes. A write bumps the rows of the
 * spans it touched after it is visible to readers; a cached result remembers the sum over the
 * rows overlapping the days it read, taken before it ran, and is served only while that sum is
 * unchanged (numbers only grow, so any bump in between changes it).
 */
export class DataVersions {
  constructor(private db: Db) {}

  async bump(touched: Touched[]): Promise<void> {
    if (touched.length === 0) return;
    const keys = [...new Set(touched.map((t) => `${t.projectId}:${t.firstDay}:${t.lastDay}`))].sort();
    // Sorted keys: concurrent writers lock the same rows in the same order (no deadlock on PostgreSQL).
    const rows = keys.map((k) => k.split(':').map(Number));
    await this.db.raw(
      `INSERT INTO results_versions (project_id, first_day, last_day, version) VALUES ${rows.map(() => '(?, ?, ?, 1)').join(', ')}
       ON CONFLICT (project_id, first_day, last_day) DO UPDATE SET version = results_versions.version + 1`,
      rows.flat(),
    );
    // A whole project changed (a privacy delete, the project's deletion): its shared answers
    // (shared-store.ts) are dead, and may name a deleted person's values (a breakdown): gone now,
    // not when evicted. Bumps of every project (the identity fold) only invalidate.
    const whole = touched.filter((t) => t.projectId !== EVERY_PROJECT && t.firstDay <= 0 && t.lastDay >= LAST_DAY).map((t) => t.projectId);
    if (whole.length) await this.db('results_cache').whereIn('project_id', [...new Set(whole)]).delete();
  }

  /** Every day of a project (privacy deletes, a project's deletion); project 0 for all projects. */
  bumpProject(projectId: number): Promise<void> {
    return this.bump([{ projectId, firstDay: 0, lastDay: LAST_DAY }]);
  }

  bumpAll(): Promise<void> {
    return this.bumpProject(EVERY_PROJECT);
  }

  /** The identities of these projects changed (the fold): only answers that may depend on identities stop being served. */
  bumpPersons(projectIds: number[]): Promise<void> {
    return this.bump(projectIds.map((projectId) => ({ projectId, firstDay: PERSONS_DAY, lastDay: PERSONS_DAY })));
  }

  /**
   * The sum of the change numbers of rows of the project (or of every project) overlapping
   * `firstDay..lastDay`, and with `persons` (an answer that may depend on identities; the default)
   * its identity changes (PERSONS_DAY).
   */
  async signature(projectId: number, firstDay: number, lastDay: number, persons = true): Promise<number> {
    const [row] = await this.db('results_versions')
      .whereIn('project_id', [projectId, EVERY_PROJECT])
      .andWhere((w) => {
        w.where((o) => o.where('first_day', '<=', lastDay).andWhere('last_day', '>=', firstDay));
        if (persons) w.orWhere('first_day', PERSONS_DAY);
      })
      .sum({ s: 'version' });
    return Number(row?.s ?? 0);
  }

  /**
   * Of each project, the sum of every change number of its events and identities (and of every
   * project's), in one read: what a whole-project answer (its event count) was computed at.
   */
  async wholeSignatures(projectIds: number[]): Promise<Map<number, number>> {
    const rows: Array<{ project_id: number | string; s: number | string | null }> = await this.db('results_versions')
      .whereIn('project_id', [...projectIds, EVERY_PROJECT])
      .groupBy('project_id')
      .select('project_id')
      .sum({ s: 'version' });
    const sums = new Map(rows.map((r) => [Number(r.project_id), Number(r.s ?? 0)]));
    const every = sums.get(EVERY_PROJECT) ?? 0;
    return new Map(projectIds.map((id) => [id, (sums.get(id) ?? 0) + every]));
  }

  /**
   * The rows `signature` sums over `firstDay..lastDay` (with the identity changes, rows before day
   * 0), read once so each bucket of a range sums its own (partials.ts).
   */
  async rows(projectId: number, firstDay: number, lastDay: number): Promise<Array<{ first_day: number; last_day: number; version: number }>> {
    const rows = await this.db('results_versions')
      .whereIn('project_id', [projectId, EVERY_PROJECT])
      .andWhere((w) => w.where((o) => o.where('first_day', '<=', lastDay).andWhere('last_day', '>=', firstDay)).orWhere('last_day', '<', 0))
      .select('first_day', 'last_day', 'version');
    return rows.map((r: Record<string, unknown>) => ({ first_day: Number(r.first_day), last_day: Number(r.last_day), version: Number(r.version) }));
  }
}

/** The days each project's rows fall on (one span per day). */
export function daysOf(rows: ReadonlyArray<{ project_id: number; time: number }>): Touched[] {
  const seen = new Map<string, Touched>();
  for (const r of rows) {
    const day = dayOf(Number(r.time));
    const k = `${r.project_id}:${day}`;
    if (!seen.has(k)) seen.set(k, { projectId: r.project_id, firstDay: day, lastDay: day });
  }
  return [...seen.values()];
}
