import { sqlInt } from '../../../ports/events/index.js';

/**
 * Identities with at most this many events of the funnel's steps in range take the list plan:
 * its lookups copy a step's list for every start (DuckDB copies a list a lambda captures), at
 * most 64 × 64 values an identity and step.
 */
export const FUNNEL_LIST_MAX_EVENTS = 64;

/**
 * Two plans, chosen per identity by its number of step events (FUNNEL_LIST_MAX_EVENTS), one
 * query: the same rows either way (funnelPathsSql's `cid, level, seg, durs`).
 *
 * Lists, for the many identities with few events: per identity each step's times sorted, each
 * chain step `list_filter(t_k, x -> x > c_{k-1})[1]` (NULL: none), a start's level 1 + its chain
 * steps inside the window, the path the earliest start of the highest level, its breakdown value
 * the smallest among the step-0 events at that time (a join back, made only with a breakdown).
 * About twice as fast as the joins at 10M events, but a step's lookup filters the whole list for
 * every start: quadratic in the identity's events, hence the bound. Every list has the same
 * ORDER BY: DuckDB sorts once for all of them (a second ordering, such as (time, value) for the
 * breakdown values, cost 3-4× the whole query).
 *
 * Joins (asofPaths), for the identities past the bound: n log n whatever their size.
 */
export function funnelPaths(perEvent: string, steps: number, windowMs: number, rangeMs: number, breakdown: boolean): string {
  const W = sqlInt(windowMs);
  const ks = Array.from({ length: steps - 1 }, (_, i) => i + 1);
  const lists = ['list(time ORDER BY time) FILTER (WHERE f0 = 1) AS s0',
    ...ks.map((k) => `coalesce(list(time ORDER BY time) FILTER (WHERE f${k} = 1), []::BIGINT[]) AS t${k}`)];
  const cte = [
    `fe AS MATERIALIZED (${perEvent})`,
    `g AS MATERIALIZED (SELECT cid, count(*) AS n, ${lists.join(', ')} FROM fe GROUP BY cid HAVING count(*) FILTER (WHERE f0 = 1) > 0)`,
    `l0 AS (SELECT * FROM g WHERE n <= ${FUNNEL_LIST_MAX_EVENTS})`,
  ];
  for (const k of ks) {
    const next = k === 1
      ? 'list_transform(s0, s -> list_filter(t1, x -> x > s)[1])'
      : `list_transform(c${k - 1}, p -> CASE WHEN p IS NULL THEN NULL ELSE list_filter(t${k}, x -> x > p)[1] END)`;
    cte.push(`l${k} AS (SELECT *, ${next} AS c${k} FROM l${k - 1})`);
  }
  // Chains are strictly increasing: the steps inside the window are a prefix. The lists are
  // zipped, not indexed from the lambda (a captured list is copied for every element).
  const inside = ks.map((k) => ` + CASE WHEN z[${k + 1}] IS NOT NULL AND z[${k + 1}] - z[1] <= ${W} THEN 1 ELSE 0 END`).join('');
  cte.push(`lv AS (SELECT *, list_transform(list_zip(s0${ks.map((k) => `, c${k}`).join('')}), z -> 1${inside}) AS lv FROM l${steps - 1})`);
  // list_position: the earliest start with the most steps (starts at one time share their chain).
  cte.push(`lp AS (SELECT *, list_max(lv) AS level, list_position(lv, level) AS pos, s0[pos] AS st FROM lv)`);
  const durs = ks.map((k) => `, CASE WHEN level > ${k} THEN c${k}[pos] - st END`).join('');
  const seg = breakdown
    ? '(SELECT min(fe.bv) FROM fe WHERE fe.cid = lp.cid AND fe.time = lp.st AND fe.f0 = 1)'
    : '(SELECT any_value(bv) FROM fe)';
  const big = `SELECT fe.* FROM fe JOIN (SELECT cid FROM g WHERE n > ${FUNNEL_LIST_MAX_EVENTS}) b USING (cid)`;
  return `WITH ${cte.join(',\n')}
      SELECT cid, level::INTEGER AS level, ${seg} AS seg, [0::BIGINT${durs}] AS durs FROM lp
      UNION ALL SELECT * FROM (${asofPaths(big, steps, windowMs, rangeMs)}) big`;
}

/**
 * One BIGINT key per event orders the events by (identity, time): identities are numbered 0..P-1
 * (`pid`) and key = pid * span + (time - tmin), span being the range of the events' times plus one
 * (so key // span is the pid, key % span is time - tmin). Each chain step is an ASOF join on that
 * key alone: c_k is the smallest step-k key above c_{k-1}, i.e. the earliest step-k event
 * strictly after c_{k-1} if c_k < lim = (pid + 1) * span (the identity's own), else none. Integer
 * keys sort much faster than (string, time) pairs, and an ASOF join with no equality condition
 * and no NULL on its left side never meets DuckDB's partitioned ASOF join matching a NULL left
 * value to the partition's first row (the string-keyed plan counted steps after a missing one).
 *
 * Only the starts whose chain is still inside the window go on to the next step's join (a start's
 * level is the first k whose c_k is missing or beyond t0 + windowMs; chains are strictly
 * increasing), so later joins see few starts. `durs` holds the reached steps only (NULL beyond
 * `level`, as `funnelSql` reads no further). The path per identity is the smallest
 * comp = (steps - level) * span + (time - tmin): most steps, then the earliest start; starts at the
 * same time have the same chain, and the smallest `bv` among them is looked up at the end.
 * Keys are BIGINT while the range is under 2^36 ms (795 days): room for 2^27 identities; longer
 * ranges (event times may reach year 9999) take HUGEINT keys, about 1.6× slower, so that no
 * identity count overflows them. Overflow would be a query error, never a wrong answer.
 */
function asofPaths(perEvent: string, steps: number, windowMs: number, rangeMs: number): string {
  const K = rangeMs < 2 ** 36 ? 'BIGINT' : 'HUGEINT';
  const W = sqlInt(windowMs);
  const n = steps;
  const ks = Array.from({ length: n - 1 }, (_, i) => i + 1);
  const cte = [
    `ev AS MATERIALIZED (${perEvent})`,
    `ids AS MATERIALIZED (SELECT cid, row_number() OVER () - 1 AS pid FROM (SELECT DISTINCT cid FROM ev) d)`,
    `sp AS MATERIALIZED (SELECT min(time) AS tmin, max(time) - min(time) + 1 AS span FROM ev)`,
    `ek AS MATERIALIZED (SELECT ev.bv, ${Array.from({ length: n }, (_, k) => `ev.f${k}`).join(', ')}, ids.pid::${K} * sp.span + (ev.time - sp.tmin) AS key,
        (ids.pid::${K} + 1) * sp.span AS lim FROM ev JOIN ids USING (cid), sp)`,
    `a0 AS (SELECT key, lim FROM ek WHERE f0 = 1)`,
  ];
  // c_k is the identity's and inside the window (NULL when c_k is NULL). lim is a column, so these
  // stay plain filters (a condition reading sp would become a nested-loop join).
  const inside = (k: number) => `(c${k} < lim AND c${k} - key <= ${W})`;
  const comp = (level: string) => `(${n} - (${level})) * sp.span + key % sp.span`;
  const durs = (level: number, last?: string) => ks.map((j) => `${j < level ? `c${j} - key` : j === level && last ? `CASE WHEN ${last} THEN c${j} - key END` : 'NULL::BIGINT'} AS d${j}`).join(', ');
  const parts: string[] = [];
  for (const k of ks) {
    const left = k === 1 ? 'a0' : `(SELECT * FROM a${k - 1} WHERE ${inside(k - 1)})`;
    cte.push(`a${k} AS MATERIALIZED (SELECT c.*, e.key AS c${k} FROM ${left} c ASOF LEFT JOIN (SELECT key FROM ek WHERE f${k} = 1) e ON c.${k === 1 ? 'key' : `c${k - 1}`} < e.key)`);
    // The starts whose level is k (the last join: k or k + 1).
    parts.push(k < n - 1
      ? `SELECT key, ${comp(`${k}`)} AS comp, ${durs(k)} FROM (SELECT * FROM a${k} WHERE NOT coalesce(${inside(k)}, false)) a, sp`
      : `SELECT key, ${comp(`${k} + CASE WHEN ${inside(k)} THEN 1 ELSE 0 END`)} AS comp, ${durs(k, inside(k))} FROM a${k}, sp`);
  }
  if (n === 1) parts.push(`SELECT key, ${comp('1')} AS comp FROM a0, sp`);
  cte.push(`lv AS (${parts.join('\n      UNION ALL ')})`);
  // Starts with the same comp have the same time, hence the same chain: any one's durs.
  cte.push(`pk AS (SELECT (key // sp.span)::BIGINT AS pid, min(comp) AS comp${ks.map((k) => `, arg_min_null(d${k}, comp) AS d${k}`).join('')} FROM lv, sp GROUP BY pid)`);
  cte.push(`ch AS (SELECT pk.*, pk.pid::${K} * sp.span + pk.comp % sp.span AS key FROM pk, sp)`);
  // The aggregate's FILTER (rather than a WHERE) keeps ek's readers from pushing their step filters
  // into ek's build, where they would only cost time.
  cte.push(`bs AS (SELECT ch.pid, min(ek.bv) FILTER (WHERE ek.f0 = 1) AS bv FROM ch JOIN ek ON ek.key = ch.key GROUP BY ch.pid)`);
  return `WITH ${cte.join(',\n')}
      SELECT ids.cid, (${n} - ch.comp // sp.span)::INTEGER AS level, bs.bv AS seg, [0::BIGINT${ks.map((k) => `, ch.d${k}::BIGINT`).join('')}] AS durs
      FROM ch JOIN bs USING (pid) JOIN ids USING (pid), sp`;
}
