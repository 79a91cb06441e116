import { sqlInt } from '../../../ports/events/index.js';
import type { Dialect } from '../dialect.js';

/**
 * Per identity: starts as sorted (time, bv) tuples and each step's sorted times. c_k: the
 * unbounded greedy chain from a start (earliest step-k time strictly after c_{k-1}; 0 when none).
 * Chains are strictly increasing, so a start's level is 1 + the number of c_k inside the window.
 *
 * Each c_k is found for all starts at once, in n log n per identity and without a lambda that
 * captures a whole array (ClickHouse copies a captured array for every element the lambda runs
 * on): the previous values (nondecreasing: the starts' times, then c_{k-1} with its trailing
 * zeros read as the largest time) merged with T_k and sorted, step-k times before equal values.
 * Each step-k time carries its difference to the next one (the last its own value), so a
 * running sum from the end telescopes, at each previous value, to the first step-k time after
 * it (0 when none). A search per start (arrayFirst) copied T_k once per start: 15,000 starts of
 * one identity passed the 2 GB query memory cap (test/service/funnel-scale.test.ts), and ClickHouse
 * 18.16 has no ASOF JOIN to fall back on.
 */
export function funnelPaths(d: Dialect, perEvent: string, steps: number, windowMs: number): string {
  const W = sqlInt(windowMs);
  const ks = Array.from({ length: steps - 1 }, (_, i) => i + 1);
  const arrays = [`arraySort(groupArrayIf((time, bv), f0 = 1)) AS s0`, ...ks.map((k) => `arraySort(groupArrayIf(time, f${k} = 1)) AS T${k}`)];
  const previous = (k: number) => (k === 1 ? `arrayMap(s -> s.1, s0)` : `arrayMap(p -> if(p = 0, ${LAST_TIME}, p), c${k - 1})`);
  const chains = ks.flatMap((k) => [
    `arraySort(arrayConcat(
        arrayMap((x, dx) -> (x, 0, dx), T${k}, arrayMap((a, b) -> a - b, T${k}, arraySlice(arrayPushBack(arrayPopFront(T${k}), toInt64(0)), 1, length(T${k})))),
        arrayMap(p -> (p, 1, toInt64(0)), ${previous(k)}))) AS m${k}`,
    `arrayFilter((next, m) -> m.2 = 1, arrayReverse(arrayCumSum(arrayReverse(arrayMap(m -> m.3, m${k})))), m${k}) AS c${k}`,
  ]);
  const lvBody = ['1', ...ks.map((k) => `(y${k} != 0 AND y${k} <= s.1 + ${W})`)].join(' + ');
  const lv = `arrayMap((s${ks.map((k) => `, y${k}`).join('')}) -> ${lvBody}, s0${ks.map((k) => `, c${k}`).join('')}) AS lv`;
  // indexOf(lv, level): the first start with the most steps; starts are sorted by (time, bv).
  return `SELECT cid, arrayReduce('max', lv) AS level, s0[indexOf(lv, level)] AS st, st.2 AS seg,
        [toInt64(0)${ks.map((k) => `, c${k}[indexOf(lv, level)] - st.1`).join('')}] AS durs
      FROM (SELECT cid, s0, ${[...chains, lv].join(', ')} FROM (
        SELECT cid, ${arrays.join(', ')} FROM (${perEvent}) pe GROUP BY cid HAVING countIf(f0 = 1) > 0
      ) pg WHERE ${d.keep(['s0', ...ks.map((k) => `T${k}`)])}) pc`;
}

/** Sorts after every stored time (`time` is Int64 milliseconds). */
const LAST_TIME = 'toInt64(9223372036854775807)';
