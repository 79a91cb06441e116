import { z } from 'zod';
import '../../http/route.js';
import { badRequest } from '../../http/errors.js';
import { LIMITS } from '../../limits.js';
import { funnelPathsSql } from '../kinds/funnel/compile.js';
import { bucketStarts, nextBucket, type DateRange } from '../engine/range.js';
import type { QueryContext } from '../engine/context.js';
import { irContext } from '../engine/ir-context.js';
import { funnelSpec } from '../kinds/funnel/ir.js';
import { irRanges, notImplemented } from './run.js';
import type { IrDeps } from '../kinds/define.js';
import { NOT_IN_ANY_COHORT, isCohortBreakdown, propertyFilters, type IrIssue } from './schema.js';
import { cohortSegments, withCohorts } from '../engine/cohorts.js';
import type { QueryV2 } from './document.js';
import { droppedSql, identitiesSql, pageSql, type MetricScope } from '../kinds/trend/sql.js';
import { segmentKey } from '../kinds/trend/ir.js';
import { breakdownOf } from '../breakdowns.js';

/** A breakdown value as the result shows it; null selects events without the property. */
const Segment = z.string().max(10_000).nullable().optional();
const RangeSel = z.enum(['primary', 'comparison']).default('primary');
export const DrilldownSelectionSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('trend'), metricId: z.string().min(1).max(20), bucket: z.union([z.number().int().min(0), z.literal('total')]), range: RangeSel, segment: Segment }).strict(),
    z.object({ kind: z.literal('trend_dropped'), metricId: z.string().min(1).max(20), segment: Segment }).strict(),
    z.object({ kind: z.literal('funnel'), step: z.number().int().min(0), mode: z.enum(['reached', 'dropped']), range: RangeSel, segment: Segment }).strict(),
  ])
  .openapi('DrilldownSelection');
export type DrilldownSelection = z.infer<typeof DrilldownSelectionSchema>;
export const DrilldownPageRequestSchema = z
  .object({
    limit: z.number().int().min(1).max(LIMITS.drilldownPageLimit.max).default(LIMITS.drilldownPageLimit.default),
    offset: z.number().int().min(0).max(1_000_000_000).default(0),
  })
  .strict()
  .openapi('DrilldownPageRequest');
export const DrilldownPageSchema = z
  .object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int(), users: z.array(z.object({ distinctId: z.string() })) })
  .openapi('DrilldownPage');
export type DrilldownPage = z.infer<typeof DrilldownPageSchema>;

const invalid = (path: string, message: string, code: string) => badRequest('invalid query', { body: { errors: [{ path, message, code } satisfies IrIssue] } });

/**
 * The canonical ids behind one number of a trend or funnel: computed in the engine as a set
 * (the same conditions as the figure), counted (`total`) and paged in ascending id order.
 * Trend: identities with at least one of the metric's events in the bucket (or the whole range) and
 * segment — for a `unique` metric exactly the figure, for other aggregations the identities whose
 * events make it. trend_dropped: identities of the comparison range absent from the primary one.
 * Funnel: identities whose path reached step k (`reached`), or reached step k-1 but not k (`dropped`).
 */
export async function runDrilldown(deps: IrDeps, projectId: number, query: QueryV2, sel: DrilldownSelection, page: { limit: number; offset: number }): Promise<DrilldownPage> {
  const a = query.analysis;
  if (a.kind !== 'trend' && a.kind !== 'funnel') throw notImplemented(a.kind);
  const { range, cmp } = irRanges(deps, query);
  const q = await irContext(deps, projectId, query);
  const [row] = await deps.events.query<{ n: number; ids: string[] | null }>(drilldownSql(q, query, sel, page, range, cmp));
  return { total: Number(row?.n ?? 0), limit: page.limit, offset: page.offset, users: (row?.ids ?? []).map((id) => ({ distinctId: String(id) })) };
}

/** The page and the count of one selection (400 `invalid query` with a code when it does not fit the query). */
export function drilldownSql(q: QueryContext, query: QueryV2, sel: DrilldownSelection, page: { limit: number; offset: number }, range: DateRange, cmp?: DateRange): string {
  const a = query.analysis;
  if (a.kind !== 'trend' && a.kind !== 'funnel') throw notImplemented(a.kind);
  if (sel.kind === 'funnel' ? a.kind !== 'funnel' : a.kind !== 'trend') {
    throw invalid('selection.kind', `a ${sel.kind} selection does not apply to a ${a.kind} analysis`, 'illegal_position');
  }
  if (query.breakdown && sel.segment === undefined) throw invalid('selection.segment', 'the query has a breakdown: name the segment', 'missing_segment');
  if (!query.breakdown && sel.segment !== undefined) throw invalid('selection.segment', 'the query has no breakdown', 'illegal_position');
  if (isCohortBreakdown(query.breakdown)) {
    // A cohort's segment: the same selection without a breakdown, that segment's condition on every read.
    const segs = cohortSegments(query.breakdown, q.cohorts!.byId, NOT_IN_ANY_COHORT);
    const seg = segs.find((s) => s.name === sel.segment);
    if (!seg) throw invalid('selection.segment', `no segment ${JSON.stringify(sel.segment)}: the segments are ${segs.map((s) => JSON.stringify(s.name)).join(', ')}`, 'unknown_reference');
    return drilldownSql(withCohorts(q, seg.conds, q.cohorts!.now), { ...query, breakdown: undefined }, { ...sel, segment: undefined }, page, range, cmp);
  }
  const useCmp = sel.kind === 'trend_dropped' || sel.range === 'comparison';
  if (useCmp && !cmp) throw invalid('selection.range', 'the query has no comparison range (analysis.compare)', 'no_comparison');
  const r = sel.kind !== 'trend_dropped' && sel.range === 'comparison' ? cmp! : range;
  const seg = segmentKey(sel.segment);
  let set: string;
  if (sel.kind === 'funnel') {
    if (a.kind !== 'funnel') throw new Error('unreachable');
    if (sel.step >= a.steps.length) throw invalid('selection.step', `step ${sel.step} is out of range: the funnel has ${a.steps.length} steps`, 'out_of_range');
    const spec = funnelSpec(query, a);
    const level = sel.mode === 'reached' ? `level >= ${sel.step + 1}` : `level = ${sel.step}`;
    const segCond = query.breakdown ? ` AND seg = ${q.d.str(seg)}` : '';
    set = `SELECT cid FROM (${funnelPathsSql(q, spec, r)}) fp WHERE ${level}${segCond}`;
  } else {
    if (a.kind !== 'trend') throw new Error('unreachable');
    const index = query.metrics.findIndex((m) => m.id === sel.metricId);
    if (index < 0) throw invalid('selection.metricId', `no metric with id ${sel.metricId}`, 'unknown_reference');
    const m = query.metrics[index];
    if (m.kind !== 'event') throw invalid('selection.metricId', `metric ${m.id} is a calculated metric: it has no identities to list`, 'illegal_position');
    const scope: MetricScope = { metric: m, filters: propertyFilters(query.filters), breakdown: breakdownOf(query.breakdown) };
    const segment = query.breakdown ? seg : undefined;
    if (sel.kind === 'trend_dropped') set = droppedSql(q, scope, range, cmp!, segment);
    else {
      let window: DateRange = r;
      if (sel.bucket !== 'total') {
        const starts = bucketStarts(a.unit, r);
        if (sel.bucket >= starts.length) throw invalid('selection.bucket', `bucket ${sel.bucket} is out of range: the range has ${starts.length} buckets`, 'out_of_range');
        // The bucket, clipped to the range (the first and last buckets may be partial).
        window = { fromMs: Math.max(r.fromMs, starts[sel.bucket]), toEndMs: Math.min(r.toEndMs, nextBucket(a.unit, starts[sel.bucket])) };
      }
      set = identitiesSql(q, scope, window, segment);
    }
  }
  return pageSql(q, `SELECT DISTINCT cid FROM (${set}) s`, page.limit, page.offset);
}
