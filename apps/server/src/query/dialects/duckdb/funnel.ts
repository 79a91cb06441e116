import { sqlInt } from '../../../ports/events/index.js';

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
export function funnelPaths(perEvent: string, steps: number, windowMs: number, rangeMs: number): string {
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
