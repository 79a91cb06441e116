import { sqlInt } from '../ports/events/index.js';
import type { EventStore } from '../ports/events/index.js';
import type { QueryContext } from './context.js';
import type { DateRange } from './range.js';
import type { FlowsResult } from './schema.js';

/** Joins path names for grouping inside the engine (split again in Node). */
const SEP = '\u001f';

export interface FlowsSpec {
  event: string;
  direction: 'after' | 'before';
  steps: number;
  limit: number;
}

/**
 * Flows semantics (mirrored by the reference evaluator):
 * - each identity with the anchor event in range contributes one path, from its first anchor;
 * - `after`: the anchor then the next `steps` events strictly later in time; `before`: the
 *   `steps` events strictly earlier, then the anchor; events ordered by (time, name), in range;
 * - paths are ranked by identities, then by path (joined names, ascending); `total` counts every
 *   identity with the anchor.
 */
export function flowsSql(q: QueryContext, f: FlowsSpec, range: DateRange): string {
  const { d } = q;
  const anchor = q.events.condition(f.event);
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`];
  const perId = `SELECT cid, ${d.minIf('time', anchor)} AS ta,
      ${d.groupArraySorted('event', ['time', 'event'])} AS names, ${d.groupArraySorted('time', ['time', 'event'])} AS ts
    FROM ${d.canonicalEvents({ projectId: q.projectId, where, props: q.events.needsProps(f.event) })} ev GROUP BY cid HAVING ${d.countIf(anchor)} > 0`;
  const S = sqlInt(f.steps);
  let path: string;
  if (f.direction === 'after') {
    const next = d.map(d.slice(d.filterIdx('ts', 'j', 'ts[j] > ta'), '1', S), 'j', 'names[j]');
    path = d.concat(`[${d.str(f.event)}]`, next);
  } else {
    const prevIdx = d.filterIdx('ts', 'j', 'ts[j] < ta');
    const last = d.name === 'clickhouse'
      ? `arraySlice(${prevIdx}, greatest(1, length(${prevIdx}) - ${S} + 1), ${S})`
      : `list_slice(${prevIdx}, greatest(1, len(${prevIdx}) - ${S} + 1), len(${prevIdx}))`;
    path = d.concat(d.map(last, 'j', 'names[j]'), `[${d.str(f.event)}]`);
  }
  return `SELECT p, count(*) AS n FROM (SELECT ${d.join(path, d.str(SEP))} AS p FROM (${perId}) pi WHERE ${d.keep(['ta', 'names', 'ts'])}) pp GROUP BY p ORDER BY n DESC, p ASC LIMIT ${sqlInt(f.limit)}`;
}

/** Identities with the anchor in range (reads the anchor's events only). */
export function flowsTotalSql(q: QueryContext, f: FlowsSpec, range: DateRange): string {
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`, q.events.condition(f.event)];
  return `SELECT ${q.d.uniq('cid')} AS total FROM ${q.d.canonicalEvents({ projectId: q.projectId, where, props: q.events.needsProps(f.event) })} ev`;
}

export async function runFlows(events: EventStore, q: QueryContext, f: FlowsSpec, range: DateRange): Promise<FlowsResult> {
  const [rows, total] = await Promise.all([
    events.query<{ p: string; n: number }>(flowsSql(q, f, range)),
    events.query<{ total: number }>(flowsTotalSql(q, f, range)),
  ]);
  return { paths: rows.map((r) => ({ path: String(r.p).split(SEP), count: Number(r.n) })), total: Number(total[0]?.total ?? 0) };
}
