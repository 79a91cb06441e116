import type { EventStore } from '../ports/events/index.js';
import { DataVersions, dayOf, daysOf, LAST_DAY, type Touched } from './versions.js';

/**
 * The event store with every write that may change an analysis' answer followed by a bump of
 * the data versions of what it touched (versions.ts), so cached results of those days
 * stop being served (index.ts). The bump follows the write: a result computed before the write has a
 * signature the bump changes; one computed after it already saw the write. A failed bump fails
 * the write (the worker then redelivers the batch, which is idempotent), so no write escapes it.
 *
 * - events (ingestion, fixtures): the days of their times;
 * - identity links: the days from the link's `from_time` on (reads map the distinct_id's events
 *   from then to the canonical id);
 * - privacy deletes of identities and a project's deletion: the whole project; retention deletes:
 *   the days up to the cut;
 * - the identity fold: the identities (versions.ts PERSONS_DAY) of the projects with links it may
 *   fold (read before it runs: unfolded links old enough), so answers that may depend on identities
 *   (identities.ts) are computed again and event counts stay cached (answers are meant to stay the
 *   same, but a cache must not bet on it);
 * - raw statements and rows of unknown tables (tests, fixtures, operators' repairs): everything.
 *
 * Event counts per project (the projects list's) are kept while the project's versions are unchanged.
 *
 * Profiles are not analysed (only cohorts and data browsing read them, neither cached), and the
 * compaction changes no answer: neither bumps.
 */
export function withDataVersions(store: EventStore, versions: DataVersions): EventStore {
  const after = async <T>(write: Promise<T>, touched: () => Touched[] | 'all'): Promise<T> => {
    const out = await write;
    const t = touched();
    await (t === 'all' ? versions.bumpAll() : versions.bump(t));
    return out;
  };
  const project = (projectId: number): Touched[] => [{ projectId, firstDay: 0, lastDay: LAST_DAY }];
  /** Each project's event count and the whole-project signature it was counted at. */
  const counts = new Map<number, { signature: number; n: number }>();
  const overrides: Partial<EventStore> = {
    // The projects list (every console page load) shows each project's event count: counted again
    // only once a write changed the project's versions (at 100M events a count took about 190 ms).
    countEvents: async (projectIds) => {
      const signatures = await versions.wholeSignatures(projectIds);
      const stale = projectIds.filter((id) => counts.get(id)?.signature !== signatures.get(id));
      const fresh = stale.length ? await store.countEvents(stale) : new Map<number, number>();
      for (const id of stale) counts.set(id, { signature: signatures.get(id)!, n: fresh.get(id) ?? 0 });
      return new Map(projectIds.map((id) => [id, counts.get(id)!.n]));
    },
    writeEvents: (projectId, rows, opts) => after(store.writeEvents(projectId, rows, opts), () => daysOf(rows.map((r) => ({ project_id: projectId, time: r.time })))),
    insertEvents: (rows) => after(store.insertEvents(rows), () => daysOf(rows)),
    writeLinks: (rows) => after(store.writeLinks(rows), () => rows.map((l) => ({ projectId: l.project_id, firstDay: Math.max(0, dayOf(Number(l.from_time))), lastDay: LAST_DAY }))),
    foldLinks: async (max, createdBefore) => {
      // A superset of the projects the fold touches (any stored version of an unfolded link counts).
      const rows = await store.query<{ project_id: number | string }>(
        `SELECT DISTINCT project_id FROM identity_links WHERE folded = 0 AND created_at < ${Math.trunc(createdBefore)}`,
      );
      const n = await store.foldLinks(max, createdBefore);
      if (n > 0) await versions.bumpPersons(rows.map((r) => Number(r.project_id)));
      return n;
    },
    deleteIdentities: (projectId, ids) => after(store.deleteIdentities(projectId, ids), () => project(projectId)),
    deleteProject: (projectId) => after(store.deleteProject(projectId), () => project(projectId)),
    // Retention: the days before the cut-off change; the whole project is bumped (a day a year).
    deleteEventsBefore: async (projectId, beforeMs) => {
      const deleted = await store.deleteEventsBefore(projectId, beforeMs);
      // Nothing expired, nothing written: no bump (the daily round would otherwise drop cached answers).
      if (deleted) await versions.bump([{ projectId, firstDay: 0, lastDay: dayOf(beforeMs) }]);
      return deleted;
    },
    insertRows: (table, rows) => after(store.insertRows(table, rows), () => 'all'),
    command: (sql) => after(store.command(sql), () => (/^\s*(CREATE|ATTACH|SET|OPTIMIZE|CHECKPOINT|SYSTEM)\b/i.test(sql) ? [] : 'all')),
  };
  // What is assigned on the wrapper (a test counting calls) is what the wrapper answers, until
  // deleted. Assigned through to the store, the override would call the assignment, which calls
  // the override it captured: a loop without end.
  const assigned = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, prop) {
      if (assigned.has(prop)) return assigned.get(prop);
      if (Object.hasOwn(overrides, prop)) return overrides[prop as keyof EventStore];
      const value = Reflect.get(target, prop);
      // Methods run on the store itself, so adapters keep their private state on one object.
      return typeof value === 'function' ? value.bind(target) : value;
    },
    set(_target, prop, value) {
      assigned.set(prop, value);
      return true;
    },
    deleteProperty(target, prop) {
      return assigned.delete(prop) || Reflect.deleteProperty(target, prop);
    },
  });
}
