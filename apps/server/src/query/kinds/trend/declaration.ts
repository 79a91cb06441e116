import { checkCells } from '../../engine/guard.js';
import { formulaRefs, parseFormula } from '../../engine/formula.js';
import { bucketCount } from '../../engine/range.js';
import { cohortSpan } from '../../engine/cohorts.js';
import { runTrend, runTrendByCohorts } from './ir.js';
import { TREND_CHARTS, TrendAnalysisSchema, isCohortBreakdown } from '../../ir/schema.js';
import type { IrKindDef } from '../define.js';

/**
 * The IR's trend: lettered metrics per bucket (and segment), an optional formula and comparison.
 * The v0 segmentation and calculated-metric analyses upgrade to it.
 */
export const TREND: IrKindDef<typeof TrendAnalysisSchema> = {
  kind: 'trend',
  analysis: TrendAnalysisSchema,
  fromV1(a, { ids, chart, dropped, compare }) {
    let formula = a.formula;
    if (formula !== undefined) {
      // v1 evaluated letters it did not know as 0 and any parse failure as "no formula".
      try {
        const unknown = [...formulaRefs(parseFormula(formula))].filter((id) => !ids.includes(id));
        if (unknown.length) { dropped('formula', `letters ${unknown.join(', ')} name no metric (v1 read them as 0)`); formula = undefined; }
      } catch {
        dropped('formula', 'it does not parse (v1 ignored it)'); formula = undefined;
      }
    }
    if (a.steps) dropped('steps', 'a trend has no steps');
    if (a.windowDays !== undefined) dropped('windowDays', 'a trend has no conversion window');
    return { kind: 'trend', unit: a.unit ?? 'day', ...chart(TREND_CHARTS), ...(formula ? { formula } : {}), ...compare };
  },
  resolve(query, _ref, out) {
    if (query.metrics.length === 0) out.push({ path: 'metrics', message: 'a trend needs at least one metric', code: 'missing_metric' });
    const a = query.analysis;
    if (a.formula === undefined) return;
    const ids = new Set<string>(query.metrics.map((m) => m.id));
    try {
      for (const id of formulaRefs(parseFormula(a.formula))) {
        if (!ids.has(id)) out.push({ path: 'analysis.formula', message: `formula letter ${id} is not a metric id`, code: 'unknown_reference' });
      }
    } catch (e) {
      out.push({ path: 'analysis.formula', message: (e as Error).message, code: 'invalid_formula' });
    }
  },
  compare: (a) => a.compare,
  span: (query, range, cmp) => cohortSpan(query, range, cmp),
  estimate(guard, query, range, cmp) {
    const a = query.analysis;
    const buckets = Math.max(bucketCount(a.unit, range), cmp ? bucketCount(a.unit, cmp) : 0);
    // A breakdown by cohorts: one segment per cohort (and `Not in any`), each a run of its own.
    const segments = !query.breakdown ? 1 : isCohortBreakdown(query.breakdown) ? query.breakdown.cohorts.length + (query.breakdown.notInAny ? 1 : 0) : query.breakdown.limit;
    const series = (query.metrics.length + (a.formula ? 1 : 0)) * segments * (cmp ? 2 : 1);
    checkCells(guard, series, buckets, [
      ...(a.unit === 'month' ? [] : ['analysis.unit']), 'dateRange', ...(query.breakdown ? [isCohortBreakdown(query.breakdown) ? 'breakdown.cohorts' : 'breakdown.limit'] : []), 'metrics', ...(cmp ? ['analysis.compare'] : []),
    ]);
  },
  run: (deps, q, query, range, cmp) => (isCohortBreakdown(query.breakdown) ? runTrendByCohorts : runTrend)(deps, q, query, query.analysis, range, cmp),
};
