import type { IrDeps } from '../define.js';
import { badRequest } from '../../../http/errors.js';
import type { QueryContext } from '../../engine/context.js';
import { evalFormula, parseFormula } from '../../engine/formula.js';
import { runCalculatedMetric } from '../calculated-metric/compile.js';
import { bucketLabel, bucketStarts, type DateRange } from '../../engine/range.js';
import { MISSING_VALUE, segmentationSql } from '../segmentation/compile.js';
import { metricEventName } from '../../engine/ir-context.js';
import { NOT_IN_ANY_COHORT, isCohortBreakdown, propertyFilters, type CohortBreakdown, type IrDocument, type Metric, type TrendAnalysis } from '../../ir/schema.js';
import { cohortSegments, withCohorts } from '../../engine/cohorts.js';
import type { TrendResult, TrendSeries } from '../../ir/results.js';
import { droppedCountsSql, propertyAggregateSql, uniqueBucketsSql, type MetricScope } from './sql.js';
import { breakdownOf } from '../../breakdowns.js';

type SegValues = Map<string, { values: Map<number, number>; total: number | null; dropped?: number }>;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
export const rangeLabel = (r: DateRange) => ({ from: day(r.fromMs), to: day(r.toEndMs - 1) });
export const segmentKey = (segment: string | null | undefined) => (segment === undefined ? '*' : segment === null ? '0' : `1${segment}`);

/**
 * A trend: every metric per bucket (and segment), over the primary and the comparison range.
 * Counts are the v0 segmentation SQL on the metric's name (so they agree with
 * /api/query/segmentation); uniques per bucket and over the range come from one grouping per
 * identity (sql.ts, tested equal to the v0 answer); property aggregations from sql.ts; calculated
 * metrics run as /api/query/metric does. The formula is evaluated per bucket and segment in Node.
 */
export async function runTrend(deps: Pick<IrDeps, 'analyses' | 'events'>, q: QueryContext, doc: IrDocument<TrendAnalysis>, a: TrendAnalysis, range: DateRange, cmp?: DateRange): Promise<TrendResult> {
  // A breakdown by cohorts runs through runTrendByCohorts, once per cohort without one.
  const byProperty = doc.breakdown && !isCohortBreakdown(doc.breakdown) ? doc.breakdown : undefined;
  const breakdown = byProperty?.property;
  const perRange = async (r: DateRange, other?: DateRange) => Promise.all(doc.metrics.map((m) => metricValues(deps, q, doc, m, a, r, other)));
  const [primary, comparison] = await Promise.all([perRange(range, cmp), cmp ? perRange(cmp) : Promise.resolve(undefined)]);
  // Segments ranked as v0 ranks series: by the first metric's bucket sum, then by name.
  const first = primary[0];
  const name = (key: string) => (key === '0' ? MISSING_VALUE : key.slice(1));
  const sum = (key: string) => [...(first.get(key)?.values.values() ?? [])].reduce((x, y) => x + y, 0);
  let segs = breakdown ? [...new Set(primary.flatMap((m) => [...m.keys()].filter((k) => k !== '*')))] : ['*'];
  segs.sort((x, y) => sum(y) - sum(x) || (name(x) < name(y) ? -1 : name(x) > name(y) ? 1 : 0));
  const omittedSegments = Math.max(0, segs.length - (byProperty?.limit ?? Infinity));
  segs = segs.slice(0, segs.length - omittedSegments);
  const formula = a.formula ? parseFormula(a.formula) : undefined;
  const series: TrendSeries[] = [];
  const emit = (which: 'primary' | 'comparison', vals: SegValues[], r: DateRange) => {
    const starts = bucketStarts(a.unit, r);
    for (const seg of segs) {
      const valueOf = (i: number, b: number) => (vals[i].get(seg) ?? (doc.metrics[i].kind === 'calculated' ? vals[i].get('*') : undefined))?.values.get(b) ?? 0;
      const segment = breakdown ? { segment: seg === '0' ? null : seg.slice(1) } : {};
      doc.metrics.forEach((m, i) => {
        const v = vals[i].get(seg) ?? (m.kind === 'calculated' ? vals[i].get('*') : undefined);
        series.push({
          metricId: m.id, name: m.name ?? (m.kind === 'event' ? m.event : `metric ${m.definitionId}`), ...segment, range: which,
          data: starts.map((b) => valueOf(i, b)), total: v ? v.total : m.kind === 'calculated' ? null : 0,
          ...(which === 'primary' && cmp && m.kind === 'event' ? { dropped: v?.dropped ?? 0 } : {}),
        });
      });
      if (formula) {
        const totals = doc.metrics.map((m, i) => (vals[i].get(seg) ?? { total: m.kind === 'calculated' ? null : 0 }).total);
        series.push({
          metricId: 'formula', name: a.formula!, ...segment, range: which,
          data: starts.map((b) => evalFormula(formula, Object.fromEntries(doc.metrics.map((m, i) => [m.id, valueOf(i, b)])))),
          total: totals.some((t) => t === null) ? null : evalFormula(formula, Object.fromEntries(doc.metrics.map((m, i) => [m.id, totals[i]!]))),
        });
      }
    }
  };
  emit('primary', primary, range);
  if (cmp && comparison) emit('comparison', comparison, cmp);
  return {
    kind: 'trend', unit: a.unit, range: rangeLabel(range), buckets: bucketStarts(a.unit, range).map((b) => bucketLabel(a.unit, b)),
    ...(cmp ? { comparison: { ...rangeLabel(cmp), buckets: bucketStarts(a.unit, cmp).map((b) => bucketLabel(a.unit, b)) } } : {}),
    series, omittedSegments, annotations: await deps.analyses.annotations.inRange(q.projectId, range),
  };
}

/**
 * A trend broken down by cohorts: the trend once per segment (a cohort, then `Not in any cohort`
 * when asked) with the segment's condition on every read, its series named by the segment, in the
 * order listed (no ranking, nothing omitted). A person in two cohorts counts in both.
 */
export async function runTrendByCohorts(deps: Pick<IrDeps, 'analyses' | 'events'>, q: QueryContext, doc: IrDocument<TrendAnalysis>, a: TrendAnalysis, range: DateRange, cmp?: DateRange): Promise<TrendResult> {
  const { byId, now } = q.cohorts!;
  const segs = cohortSegments(doc.breakdown as CohortBreakdown, byId, NOT_IN_ANY_COHORT);
  const plain: IrDocument<TrendAnalysis> = { ...doc, breakdown: undefined };
  const results: TrendResult[] = [];
  // One segment after another: each holds the run's slot already, and several at once would only queue in the engine.
  for (const s of segs) results.push(await runTrend(deps, withCohorts(q, s.conds, now), plain, a, range, cmp));
  const series = (['primary', 'comparison'] as const).flatMap((which) =>
    results.flatMap((r, i) => r.series.filter((x) => x.range === which).map((x) => ({ ...x, segment: segs[i].name }))));
  return { ...results[0], series, omittedSegments: 0 };
}

/** One metric over one range: per segment, its value per bucket start and its whole-range figure. */
async function metricValues(
  deps: Pick<IrDeps, 'analyses' | 'events'>, q: QueryContext, doc: IrDocument<TrendAnalysis>, m: Metric, a: TrendAnalysis, range: DateRange, cmp?: DateRange,
): Promise<SegValues> {
  const out: SegValues = new Map();
  const at = (key: string) => {
    let e = out.get(key);
    if (!e) out.set(key, (e = { values: new Map(), total: 0 }));
    return e;
  };
  if (m.kind === 'calculated') {
    const def = await deps.analyses.definitions.metrics.get(m.definitionId);
    const index = doc.metrics.indexOf(m);
    if (!def || def.project_id !== q.projectId) {
      throw badRequest('invalid query', { body: { errors: [{ path: `metrics.${index}.definitionId`, message: `no calculated metric ${m.definitionId} in this project`, code: 'unknown_reference' }] } });
    }
    const r = await runCalculatedMetric(deps.events, q, def.name, def.definition, a.unit, range);
    const starts = bucketStarts(a.unit, range);
    const e = at('*');
    starts.forEach((b, i) => e.values.set(b, r.series[0].data[i].value));
    e.total = null;
    return out;
  }
  const scope: MetricScope = { metric: m, filters: propertyFilters(doc.filters), breakdown: breakdownOf(doc.breakdown) };
  const op = m.aggregation.op;
  const key = (bh: number, bv: string) => (scope.breakdown ? (Number(bh) ? `1${bv}` : '0') : '*');
  const dropped = cmp
    ? deps.events.query<{ seg: string; n: number }>(droppedCountsSql(q, scope, range, cmp)).then((rows) => {
      for (const r of rows) at(String(r.seg)).dropped = Number(r.n);
    })
    : Promise.resolve();
  if (op === 'count') {
    // The v0 segmentation SQL itself: the same answer as /api/query/segmentation, at its cost.
    const seg = { event: metricEventName(m.id), unit: a.unit, type: 'total' as const, breakdown: scope.breakdown, filters: scope.filters };
    const [rows] = await Promise.all([deps.events.query<{ b: number; bh: number; bv: string; v: number }>(segmentationSql(q, seg, range)), dropped]);
    for (const r of rows) {
      const e = at(key(r.bh, String(r.bv)));
      e.values.set(Number(r.b), Number(r.v));
      e.total = (e.total ?? 0) + Number(r.v);
    }
    return out;
  }
  if (op === 'unique') {
    const [rows] = await Promise.all([deps.events.query<{ b: number; seg: string; v: number }>(uniqueBucketsSql(q, scope, a.unit, range)), dropped]);
    for (const r of rows) {
      if (Number(r.b) === -1) at(String(r.seg)).total = Number(r.v);
      else at(String(r.seg)).values.set(Number(r.b), Number(r.v));
    }
    return out;
  }
  const [buckets, totals] = await Promise.all([
    deps.events.query<{ b: number; seg: string; v: number }>(propertyAggregateSql(q, scope, op, m.aggregation.property, a.unit, range)),
    deps.events.query<{ b: number; seg: string; v: number }>(propertyAggregateSql(q, scope, op, m.aggregation.property, null, range)),
    dropped,
  ]);
  for (const r of buckets) at(String(r.seg)).values.set(Number(r.b), Number(r.v));
  for (const r of totals) at(String(r.seg)).total = Number(r.v);
  return out;
}
