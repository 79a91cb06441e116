import { sqlInt } from '../../../ports/events/index.js';
import { dedupOf, type QueryContext } from '../../engine/context.js';
import { filtersSql } from '../../engine/filters.js';
import type { DateRange } from '../../engine/range.js';
import type { Unit } from '../../dialects/index.js';
import type { PropertyFilter } from '../../schema.js';
import { metricEventName } from '../../engine/ir-context.js';
import { breakdownHas, breakdownValueOr, type BreakdownProps } from '../../breakdowns.js';
import type { EventMetric, PropertyOp } from '../../ir/schema.js';

/**
 * SQL the IR adds to the v0 builders, on the same dialect primitives: property aggregations
 * (sum, avg, min, max, nearest-rank percentiles) and the identity sets behind a number.
 * Segments are spelled like the funnel's: '*' without a breakdown, '0' for a missing property,
 * '1' + value otherwise.
 */
export interface MetricScope {
  metric: EventMetric;
  filters?: PropertyFilter[];
  breakdown?: BreakdownProps;
}

export const segExpr = (q: QueryContext, breakdown: BreakdownProps | undefined) =>
  breakdown ? `CASE WHEN ${breakdownHas(q.d, breakdown)} THEN concat('1', ${breakdownValueOr(q.d, breakdown, "''")}) ELSE '0' END` : `'*'`;

/** Conditions on raw event columns: the metric (its event and own filters), the global filters, numeric values for property ops. */
export function metricWhere(q: QueryContext, s: MetricScope, range: DateRange): string[] {
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`, q.events.condition(metricEventName(s.metric.id)), filtersSql(q.d, s.filters)];
  const agg = s.metric.aggregation;
  if (agg.op !== 'count' && agg.op !== 'unique') where.push(q.d.propIsNumber(agg.property));
  return where;
}

const PCT: Record<string, number> = { p50: 50, p75: 75, p90: 90, p95: 95, p99: 99 };

/** Per (bucket, segment) — or per segment over the whole range when `unit` is null — the property aggregate `v`. */
export function propertyAggregateSql(q: QueryContext, s: MetricScope, op: PropertyOp, property: string, unit: Unit | null, range: DateRange): string {
  const { d } = q;
  const exprs: Array<[string, string]> = [['b', unit ? d.bucket(unit, 'time') : '0'], ['seg', segExpr(q, s.breakdown)], ['x', d.propNumber(property)]];
  const ev = d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, where: metricWhere(q, s, range), exprs, identity: false, dedup: dedupOf(q) });
  if (op in PCT) {
    // Nearest rank: the ceil(p/100 * n)-th smallest value (1-based), the same on both engines.
    return `SELECT b, seg, xs[${d.intDiv(`${PCT[op]} * n + 99`, '100')}] AS v FROM (
      SELECT b, seg, count(*) AS n, ${d.sortStrings(d.groupArray('x'))} AS xs FROM ${ev} ev GROUP BY b, seg) pa`;
  }
  const fn = op === 'avg' ? 'avg' : op;
  return `SELECT b, seg, ${fn}(x) AS v FROM ${ev} ev GROUP BY b, seg`;
}

/** Distinct (cid, seg) of the identities behind a metric in a range, optionally one segment only. */
export function identitiesSql(q: QueryContext, s: MetricScope, range: DateRange, segment?: string): string {
  const ev = q.d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, where: metricWhere(q, s, range), exprs: [['seg', segExpr(q, s.breakdown)]], dedup: false });
  return `SELECT DISTINCT cid, seg FROM ${ev} ev${segment === undefined ? '' : ` WHERE seg = ${q.d.str(segment)}`}`;
}

/** Unique identities per (bucket, segment) and, as bucket -1, over the whole range per segment, in one scan (Dialect.uniqueBuckets). */
export function uniqueBucketsSql(q: QueryContext, s: MetricScope, unit: Unit, range: DateRange): string {
  const { d } = q;
  const ev = d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, key: true, where: metricWhere(q, s, range), exprs: [['bk', d.bucket(unit, 'time')], ['seg', segExpr(q, s.breakdown)]], dedup: false });
  return d.uniqueBuckets(ev);
}

/** Per segment: identities of `cmp` absent from `primary` (the series' `dropped`). */
export function droppedCountsSql(q: QueryContext, s: MetricScope, primary: DateRange, cmp: DateRange): string {
  return `SELECT seg, count(*) AS n FROM (${droppedSql(q, s, primary, cmp)}) dr GROUP BY seg`;
}

/** Identities (cid, seg) behind the metric in `cmp` that are absent from `primary` in the same segment. */
export function droppedSql(q: QueryContext, s: MetricScope, primary: DateRange, cmp: DateRange, segment?: string): string {
  const key = `concat(seg, ${q.d.str('\u001f')}, cid)`;
  return `SELECT cid, seg FROM (${identitiesSql(q, s, cmp, segment)}) ic WHERE ${key} NOT IN (SELECT ${key} FROM (${identitiesSql(q, s, primary, segment)}) ipr)`;
}

/** The deepest page end (offset + limit) that pageSql reaches without sorting the whole set. */
export const PAGE_SMALLEST_MAX = 10_000;

/**
 * One page of a set of `cid`s (ascending) and its size, in one pass over the set (the set is often
 * a whole funnel: computing it twice, for the page and for the count, would double the cost).
 */
export function pageSql(q: QueryContext, setSql: string, limit: number, offset: number): string {
  const { d } = q;
  // Pages near the start keep only the ids up to the page's end (a bounded aggregate) instead of
  // sorting the whole set; deep pages sort it.
  const upTo = offset + limit <= PAGE_SMALLEST_MAX ? d.smallestIf('cid', '1 = 1', sqlInt(offset + limit)) : d.sortStrings(d.groupArray('cid'));
  return `SELECT count(*) AS n, ${d.slice(upTo, sqlInt(offset + 1), sqlInt(limit))} AS ids FROM (${setSql}) ps`;
}
