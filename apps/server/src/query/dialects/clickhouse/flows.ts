import { sqlInt } from '../../../ports/events/index.js';
import type { Dialect, FlowPathsSpec } from '../dialect.js';

/**
 * Events are keyed as (time - from) * FLOW_RANK_BASE + name rank: at most 999,999 distinct event
 * names in the range, and (3660 days in ms) * 10^6 stays inside Int64.
 */
const FLOW_RANK_BASE = 1_000_000;

/**
 * The most bytes of names flows take as constants (they appear twice in the SQL, which must stay
 * under the server's max_query_size, 256 KiB by default); past it, scalar subqueries read them.
 */
const FLOW_NAMES_MAX_BYTES = 64 * 1024;

/**
 * The range's distinct event names, sorted (FlowPathsSpec.names). Distinct by GROUP BY, then the
 * few names sorted: at 10M events 185 ms, the cost of reading the column, against 245 ms for
 * groupUniqArray (18.16), which ran before every flows query.
 */
export const flowNames = {
  sql: (projectId: number, fromMs: number, toEndMs: number) =>
    `SELECT arraySort(groupArray(event)) AS a FROM (SELECT event FROM events WHERE project_id = ${sqlInt(projectId)} AND time >= ${sqlInt(fromMs)} AND time < ${sqlInt(toEndMs)} GROUP BY event)`,
  maxBytes: FLOW_NAMES_MAX_BYTES,
};

/**
 * Per identity one Int64 per event, (time - from) * 10^6 + the rank of its name among the range's
 * sorted distinct names, sorted once: numeric keys order by (time, name), which 18.16 sorts far
 * faster than tuples. The names come from a query before this one (`spec.names`, constant arrays:
 * 18.16 evaluated each scalar subquery over the range again, 3.5 s of 6 s at 10M events), or
 * from scalar subqueries when they are too long to inline. A name outside the list (an event
 * written since) has rank 0 and is left out. `events` is read FINAL (every event counts);
 * lambdas capture only the scalar anchor key. Names come back on the grouped paths only.
 */
export function flowPaths(d: Dialect, f: FlowPathsSpec): string {
  const S = sqlInt(f.steps);
  const A = d.str(f.anchorName);
  const from = sqlInt(f.fromMs);
  let names: string;
  let ranks: string;
  if (f.names) {
    const list = f.names.length > 0 ? f.names : [''];
    names = `[${list.map((n) => d.str(n)).join(', ')}]`;
    ranks = `CAST([${list.map((_, i) => i + 1).join(', ')}] AS Array(Int64))`;
  } else {
    // transform refuses empty arrays: [''] stands in when the range has no event (nothing maps then).
    const sorted = `(SELECT if(empty(a), [''], a) AS a FROM (${flowNames.sql(f.projectId, f.fromMs, f.toEndMs)}))`;
    names = `(SELECT a FROM ${sorted})`;
    ranks = `(SELECT arrayMap(x -> toInt64(x), arrayEnumerate(a)) FROM ${sorted})`;
  }
  const M = FLOW_RANK_BASE;
  const perId = `SELECT minIf(time, ${f.anchor}) - ${from} AS ta,
        arraySort(groupArray((time - ${from}) * ${M} + transform(event, ${names}, ${ranks}, toInt64(0)))) AS ks
      FROM ${f.events} ev GROUP BY cid HAVING countIf(${f.anchor}) > 0`;
  const picked = f.direction === 'after'
    ? `arraySlice(arrayFilter(k -> k >= (ta + 1) * ${M} AND k % ${M} != 0, ks), 1, ${S})`
    : `arraySlice(arrayFilter(k -> k < ta * ${M} AND k % ${M} != 0, ks) AS pv, greatest(1, length(pv) - ${S} + 1), ${S})`;
  const path = f.direction === 'after' ? `arrayConcat([${A}], arrayMap(r -> nm[r], rp))` : `arrayConcat(arrayMap(r -> nm[r], rp), [${A}])`;
  return `SELECT arrayStringConcat(${path}, ${d.str(f.sep)}) AS p, n FROM (
        SELECT rp, count() AS n FROM (SELECT arrayMap(k -> k % ${M}, ${picked}) AS rp FROM (${perId}) pi WHERE ${d.keep(['ta', 'ks'])}) pr GROUP BY rp
      ) pg CROSS JOIN (SELECT ${names} AS nm) nms WHERE ${d.keep(['nm', 'rp'])}
      ORDER BY n DESC, p ASC LIMIT ${sqlInt(f.limit)}`;
}
