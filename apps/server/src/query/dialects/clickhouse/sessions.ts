import { sqlInt } from '../../../ports/events/index.js';
import type { Dialect, Unit } from '../dialect.js';

/**
 * Per identity: sorted times and one linear pass (arrayDifference): starts are times whose gap
 * before is >= the gap (or the first), ends are times whose gap after is >= it (or the last).
 */
export function sessions(d: Dialect, events: string, unit: Unit, gapMs: number): string {
  const GAP = sqlInt(gapMs);
  return `SELECT ${d.bucket(unit, 's')} AS b, count() AS n, avg(toFloat64(e - s)) AS avg_ms FROM (
      SELECT arraySort(groupArray(time)) AS ts, arrayDifference(ts) AS g,
        arrayFilter((t, x) -> x >= ${GAP}, ts, arrayPushFront(arrayPopFront(g), toInt64(${GAP}))) AS ss,
        arrayFilter((t, x) -> x >= ${GAP}, ts, arrayPushBack(arrayPopFront(g), toInt64(${GAP}))) AS es
      FROM ${events} ev GROUP BY cid
    ) ARRAY JOIN ss AS s, es AS e GROUP BY b`;
}
