import { sqlInt } from '../../../ports/events/index.js';
import type { EventStore } from '../../../ports/events/index.js';
import { dedupOf, type QueryContext } from '../../engine/context.js';
import type { Unit } from '../../dialects/index.js';
import { filtersSql } from '../../engine/filters.js';
import { bucketCount, bucketLabel, bucketStarts, type DateRange } from '../../engine/range.js';
import { checkBreakdownCells, type QueryGuard } from '../../engine/guard.js';
import { breakdownHas, breakdownName, breakdownValueOr, type BreakdownProps } from '../../breakdowns.js';
import type { PropertyFilter, SegmentationResult } from '../../schema.js';

/** Series name of events without the breakdown property. */
export const MISSING_VALUE = '(none)';

export interface SegmentationSpec {
  event: string;
  unit: Unit;
  type: 'total' | 'unique';
  /** One property, or up to three whose values make one segment (breakdowns.ts). */
  breakdown?: BreakdownProps;
  filters?: PropertyFilter[];
}

export function rangeWhere(q: QueryContext, range: DateRange): string[] {
  return [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`];
}

/**
 * total (events) or unique (canonical identities) per bucket, optionally per breakdown value;
 * with `wholeRange`, one row per breakdown value over the whole range (b = 0): a series' exact
 * unique total, which the buckets' sum is not (a person counts once per bucket there).
 */
export function segmentationSql(q: QueryContext, s: SegmentationSpec, range: DateRange, wholeRange = false): string {
  const { d } = q;
  const where = [...rangeWhere(q, range), q.events.condition(s.event), filtersSql(d, s.filters)];
  // Bucket and breakdown are computed in the scan, before the identity join (which then carries
  // two scalars instead of the property arrays).
  const exprs: Array<[string, string]> = [
    ['b', wholeRange ? '0' : d.bucket(s.unit, 'time')],
    ['bh', s.breakdown ? `CASE WHEN ${breakdownHas(d, s.breakdown)} THEN 1 ELSE 0 END` : '0'],
    ['bv', s.breakdown ? breakdownValueOr(d, s.breakdown, "''") : "''"],
  ];
  const value = s.type === 'total' ? 'count(*)' : d.uniq('cid');
  return `SELECT b, bh, bv, ${value} AS v FROM ${d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, key: true, where, exprs, identity: s.type === 'unique', dedup: s.type === 'total' && dedupOf(q) })} ev
    GROUP BY b, bh, bv`;
}

/**
 * Each series with its `total` over the range: the buckets' sum for events, for unique identities
 * a second statement over the whole range (both run at once).
 * `guard`: a breakdown whose series × buckets pass the limit is refused before it is zero-filled.
 */
export async function runSegmentation(events: EventStore, q: QueryContext, s: SegmentationSpec, range: DateRange, guard?: QueryGuard): Promise<SegmentationResult> {
  type Row = { b: number; bh: number; bv: string; v: number };
  const [rows, wholeRows] = await Promise.all([
    events.query<Row>(segmentationSql(q, s, range)),
    s.type === 'unique' ? events.query<Row>(segmentationSql(q, s, range, true)) : Promise.resolve(null),
  ]);
  if (guard && s.breakdown) checkBreakdownCells(guard, new Set(rows.map((r) => (Number(r.bh) ? `v:${r.bv}` : 'missing'))).size, bucketCount(s.unit, range), breakdownName(s.breakdown));
  const starts = bucketStarts(s.unit, range);
  const labels = starts.map((b) => bucketLabel(s.unit, b));
  const bySeries = new Map<string, { name: string; values: Map<number, number>; sum: number }>();
  const keyOf = (r: Row) => (s.breakdown ? (Number(r.bh) ? `v:${r.bv}` : 'missing') : 'all');
  const uniqueTotals = new Map((wholeRows ?? []).map((r) => [keyOf(r), Number(r.v)]));
  for (const r of rows) {
    const key = keyOf(r);
    const name = s.breakdown ? (Number(r.bh) ? String(r.bv) : MISSING_VALUE) : s.event;
    const series = bySeries.get(key) ?? { name, values: new Map(), sum: 0 };
    series.values.set(Number(r.b), Number(r.v));
    series.sum += Number(r.v);
    bySeries.set(key, series);
  }
  if (!s.breakdown && bySeries.size === 0) bySeries.set('all', { name: s.event, values: new Map(), sum: 0 });
  const ordered = [...bySeries.entries()].map(([key, ser]) => ({ ...ser, total: s.type === 'unique' ? uniqueTotals.get(key) ?? 0 : ser.sum })).sort((a, b) => b.sum - a.sum || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    buckets: labels,
    series: ordered.map((ser) => ({ name: ser.name, data: starts.map((b, i) => ({ bucket: labels[i], value: ser.values.get(b) ?? 0 })), total: ser.total })),
  };
}
