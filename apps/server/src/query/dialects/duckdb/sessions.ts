import { sqlInt } from '../../../ports/events/index.js';
import type { Dialect, Unit } from '../dialect.js';

/**
 * The ClickHouse shape with lists: sorted times per identity, zipped with their predecessor
 * (successor) list so the lambdas capture nothing (list_zip is linear).
 */
export function sessions(d: Dialect, events: string, unit: Unit, gapMs: number): string {
  const GAP = sqlInt(gapMs);
  const prev = `list_zip(ts, list_prepend(NULL::BIGINT, ts[1:len(ts) - 1]))`;
  const next = `list_zip(ts, list_append(ts[2:], NULL::BIGINT))`;
  return `SELECT ${d.bucket(unit, 'st')} AS b, count(*) AS n, avg(CAST(en - st AS DOUBLE)) AS avg_ms FROM (
    SELECT unnest(list_transform(list_filter(${prev}, p -> p[2] IS NULL OR p[1] - p[2] >= ${GAP}), p -> p[1])) AS st,
      unnest(list_transform(list_filter(${next}, p -> p[2] IS NULL OR p[2] - p[1] >= ${GAP}), p -> p[1])) AS en
    FROM (SELECT cid, list(time ORDER BY time) AS ts FROM ${events} ev GROUP BY cid) pi
  ) x GROUP BY b`;
}
