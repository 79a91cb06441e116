import { sqlInt } from '../../../ports/events/index.js';

/**
 * Each chain step is an ASOF join: c_k is the earliest step-k event strictly after c_{k-1} (NULL
 * when none). Chains are strictly increasing, so a start's level is 1 + the number of c_k inside
 * the window; the path is picked per identity with row_number().
 */
export function funnelPaths(perEvent: string, steps: number, windowMs: number): string {
  const W = sqlInt(windowMs);
  const ks = Array.from({ length: steps - 1 }, (_, i) => i + 1);
  const cte = [`ev AS MATERIALIZED (${perEvent})`, `c0 AS (SELECT cid, time AS t0, bv FROM ev WHERE f0 = 1)`];
  for (const k of ks) {
    const prev = k === 1 ? 'c.t0' : `c.c${k - 1}`;
    cte.push(`c${k} AS (SELECT c.*, e.time AS c${k} FROM c${k - 1} c ASOF LEFT JOIN (SELECT cid, time FROM ev WHERE f${k} = 1) e ON c.cid = e.cid AND ${prev} < e.time)`);
  }
  const level = ['1', ...ks.map((k) => `CASE WHEN c${k} IS NOT NULL AND c${k} <= t0 + ${W} THEN 1 ELSE 0 END`)].join(' + ');
  cte.push(`lv AS (SELECT *, ${level} AS level FROM c${steps - 1})`);
  return `WITH ${cte.join(',\n')}
      SELECT cid, level, bv AS seg, [0::BIGINT${ks.map((k) => `, c${k} - t0`).join('')}] AS durs
      FROM lv QUALIFY row_number() OVER (PARTITION BY cid ORDER BY level DESC, t0, bv) = 1`;
}
