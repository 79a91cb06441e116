/**
 * Whether a cached answer may depend on identities (which events belong to one person): the
 * identity fold (identity/fold.ts) invalidates only the answers that may (versions.ts,
 * PERSONS_DAY). `parts` is the cache key's parts as the query executor builds them
 * (`{ e: engine, q: … }`; a report's `{ t: type, q: stored query, o: board override }`).
 *
 * Conservative: only shapes known to count events and aggregate event properties alone say
 * false: a v0 segmentation of `type: 'total'`, and an IR (v2) trend whose metrics are all event
 * metrics aggregated by count or a property (not `unique`); in both, every filter (the query's,
 * its metrics', a board's) an event property filter and the breakdown by event properties (a
 * cohort's members are persons). Unique counts, funnels, retention, flows, sessions, calculated
 * metrics, experiments and anything not recognised say true.
 */
export function readsIdentities(parts: unknown): boolean {
  const inner = member(parts, 'q');
  const type = member(inner, 't');
  const query = member(inner, 'q');
  if (type !== 'segmentation' || !query || typeof query !== 'object') return true;
  if (!propertyFilters(member(member(inner, 'o'), 'f')) || !propertyFilters(member(query, 'filters'))) return true;
  const v = member(query, 'v');
  if (v === undefined) {
    const b = member(query, 'breakdown');
    return member(query, 'type') !== 'total' || !(b === undefined || typeof b === 'string' || (Array.isArray(b) && b.every((p) => typeof p === 'string')));
  }
  if (v !== 2) return true;
  const analysis = member(query, 'analysis');
  const metrics = member(query, 'metrics');
  const breakdown = member(query, 'breakdown');
  if (member(analysis, 'kind') !== 'trend' || !Array.isArray(metrics)) return true;
  if (breakdown !== undefined && typeof member(breakdown, 'property') !== 'string') return true;
  return !metrics.every((m) => {
    const op = member(member(m, 'aggregation'), 'op');
    return member(m, 'kind') === 'event' && typeof op === 'string' && op !== 'unique' && propertyFilters(member(m, 'filters'));
  });
}

/** Absent, or event property filters only (each names a property `key`). */
function propertyFilters(filters: unknown): boolean {
  return filters === undefined || (Array.isArray(filters) && filters.every((f) => typeof member(f, 'key') === 'string'));
}

function member(v: unknown, key: string): unknown {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[key] : undefined;
}
