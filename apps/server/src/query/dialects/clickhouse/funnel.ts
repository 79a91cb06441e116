import { sqlInt } from '../../../ports/events/index.js';
import type { Dialect } from '../dialect.js';

/**
 * Per identity: starts as sorted (time, bv) tuples and each step's sorted times; lambdas run over
 * the starts and search one step's times (arrayFirst), capturing no whole-identity array.
 * c_k: the unbounded greedy chain from a start (earliest step-k time strictly after c_{k-1}; 0
 * when none). Chains are strictly increasing, so a start's level is 1 + the number of c_k inside
 * the window.
 */
export function funnelPaths(d: Dialect, perEvent: string, steps: number, windowMs: number): string {
  const W = sqlInt(windowMs);
  const ks = Array.from({ length: steps - 1 }, (_, i) => i + 1);
  const arrays = [`arraySort(groupArrayIf((time, bv), f0 = 1)) AS s0`, ...ks.map((k) => `arraySort(groupArrayIf(time, f${k} = 1)) AS T${k}`)];
  const chains = ks.map((k) => (k === 1
    ? `arrayMap(s -> arrayFirst(x -> x > s.1, T1), s0) AS c1`
    : `arrayMap(p -> if(p = 0, 0, arrayFirst(x -> x > p, T${k})), c${k - 1}) AS c${k}`));
  const lvBody = ['1', ...ks.map((k) => `(y${k} != 0 AND y${k} <= s.1 + ${W})`)].join(' + ');
  const lv = `arrayMap((s${ks.map((k) => `, y${k}`).join('')}) -> ${lvBody}, s0${ks.map((k) => `, c${k}`).join('')}) AS lv`;
  // indexOf(lv, level): the first start with the most steps; starts are sorted by (time, bv).
  return `SELECT cid, arrayReduce('max', lv) AS level, s0[indexOf(lv, level)] AS st, st.2 AS seg,
        [toInt64(0)${ks.map((k) => `, c${k}[indexOf(lv, level)] - st.1`).join('')}] AS durs
      FROM (SELECT cid, s0, ${[...chains, lv].join(', ')} FROM (
        SELECT cid, ${arrays.join(', ')} FROM (${perEvent}) pe GROUP BY cid HAVING countIf(f0 = 1) > 0
      ) pg WHERE ${d.keep(['s0', ...ks.map((k) => `T${k}`)])}) pc`;
}
