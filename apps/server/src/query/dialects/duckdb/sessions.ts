import { sqlInt } from '../../../ports/events/index.js';
import type { Dialect, Unit } from '../dialect.js';

/**
 * Per identity, its times cut into slots of one gap (`(time - fromMs) // gap`): two times of a
 * slot are less than a gap apart, so a session only starts at a slot's first time and only ends
 * at a slot's last. The events are reduced to (identity, slot, first, last), a hash aggregation
 * (typically a few rows per visit instead of one per event), and the window functions order
 * those: a slot starts a session when the previous slot's last time is a gap or more before its
 * first, ends one when the next slot's first time is a gap or more after its last. Of the slots
 * that start or end one, an end's start is itself or the slot before it. Half the time of
 * sorting every event per identity in lists at 10M events.
 */
export function sessions(d: Dialect, events: string, unit: Unit, gapMs: number, fromMs: number): string {
  const GAP = sqlInt(gapMs);
  return `WITH sl AS (SELECT cid, (time - ${sqlInt(fromMs)}) // ${GAP} AS k, min(time) AS mn, max(time) AS mx FROM ${events} ev GROUP BY cid, k),
    w AS (SELECT cid, k, mn, mx, coalesce(mn - lag(mx) OVER p >= ${GAP}, true) AS st, coalesce(lead(mn) OVER p - mx >= ${GAP}, true) AS en
      FROM sl WINDOW p AS (PARTITION BY cid ORDER BY k)),
    se AS (SELECT mx, en, CASE WHEN st THEN mn ELSE lag(mn) OVER (PARTITION BY cid ORDER BY k) END AS s FROM w WHERE st OR en)
    SELECT ${d.bucket(unit, 's')} AS b, count(*) AS n, avg(CAST(mx - s AS DOUBLE)) AS avg_ms FROM se WHERE en GROUP BY b`;
}
