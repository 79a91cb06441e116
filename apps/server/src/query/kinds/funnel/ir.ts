import type { EventStore } from '../../../ports/events/index.js';
import type { QueryContext } from '../../engine/context.js';
import { runFunnel, type FunnelSpec } from './compile.js';
import type { DateRange } from '../../engine/range.js';
import { MISSING_VALUE } from '../segmentation/compile.js';
import { metricEventName } from '../../engine/ir-context.js';
import { NOT_IN_ANY_COHORT, isCohortBreakdown, propertyFilters, type FunnelAnalysis, type IrDocument } from '../../ir/schema.js';
import { cohortSegments, withCohorts } from '../../engine/cohorts.js';
import type { IrFunnelResult, IrFunnelStep } from '../../ir/results.js';
import { rangeLabel } from '../trend/ir.js';

export const funnelWindowDays = (a: FunnelAnalysis) => a.window.value * (a.window.unit === 'week' ? 7 : 1);

export function funnelSpec(doc: Pick<IrDocument<unknown>, 'breakdown' | 'filters'>, a: FunnelAnalysis): FunnelSpec {
  return { steps: a.steps.map(metricEventName), windowDays: funnelWindowDays(a), breakdown: isCohortBreakdown(doc.breakdown) ? undefined : doc.breakdown?.property, filters: propertyFilters(doc.filters) };
}

/** The v0 funnel compiler over the steps' metric names (each step: its event AND its own filters). */
export async function runIrFunnel(events: EventStore, q: QueryContext, doc: IrDocument<FunnelAnalysis>, a: FunnelAnalysis, range: DateRange, cmp?: DateRange): Promise<IrFunnelResult> {
  if (isCohortBreakdown(doc.breakdown)) {
    // By cohorts: the funnel of everyone, then once per segment with its condition on every read;
    // each step's segments are the segments' counts at that step, in the order listed.
    const { byId, now } = q.cohorts!;
    const segs = cohortSegments(doc.breakdown, byId, NOT_IN_ANY_COHORT);
    const plain: IrDocument<FunnelAnalysis> = { ...doc, breakdown: undefined };
    const all = await runIrFunnel(events, q, plain, a, range, cmp);
    const per: IrFunnelResult[] = [];
    for (const s of segs) per.push(await runIrFunnel(events, withCohorts(q, s.conds, now), plain, a, range, cmp));
    const merge = (steps: IrFunnelStep[], of: (r: IrFunnelResult) => IrFunnelStep[]) => steps.map((st, k) => ({
      ...st, segments: per.map((r, i) => ({ segment: segs[i].name, count: of(r)[k].count, conversionFromStart: of(r)[k].conversionFromStart })),
    }));
    return {
      ...all, steps: merge(all.steps, (r) => r.steps),
      ...(all.comparison ? { comparison: { ...all.comparison, steps: merge(all.comparison.steps, (r) => r.comparison!.steps) } } : {}),
    };
  }
  const spec = funnelSpec(doc, a);
  const run = async (r: DateRange): Promise<IrFunnelStep[]> => {
    const steps = await runFunnel(events, q, spec, r);
    return steps.map((s, k) => {
      const m = doc.metrics.find((x) => x.id === a.steps[k]);
      const event = m?.kind === 'event' ? m.event : '';
      return {
        metricId: a.steps[k], event, name: m?.name ?? event, count: s.count,
        conversionFromPrevious: s.conversionFromPrevious, conversionFromStart: s.conversionFromStart,
        droppedCount: s.droppedCount, dropoffRate: s.dropoffRate,
        // The v0 result names a missing value "(none)" (a real "(none)" value reads as missing too).
        segments: s.segments.map((g) => ({ segment: g.name === MISSING_VALUE ? null : g.name, count: g.count, conversionFromStart: g.conversionFromStart })),
        meanSecondsToConvert: s.meanSecondsToConvert, medianSecondsToConvert: s.medianSecondsToConvert,
      };
    });
  };
  const [primary, comparison] = await Promise.all([run(range), cmp ? run(cmp) : Promise.resolve(undefined)]);
  return {
    kind: 'funnel', range: rangeLabel(range), windowDays: spec.windowDays, steps: primary,
    ...(cmp && comparison ? { comparison: { ...rangeLabel(cmp), steps: comparison } } : {}),
  };
}
