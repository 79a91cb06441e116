import { runFunnel } from './compile.js';
import { FunnelQuerySchema, FunnelResultSchema } from '../../schema.js';
import { runIrFunnel } from './ir.js';
import { FUNNEL_CHARTS, FunnelAnalysisSchema, METRIC_IDS } from '../../ir/schema.js';
import { cohortSpan } from '../../engine/cohorts.js';
import { defineAnalysis, type IrKindDef } from '../define.js';

/** The IR's funnel: metric letters as steps, a window from step 0, an optional comparison. */
const FUNNEL: IrKindDef<typeof FunnelAnalysisSchema> = {
  kind: 'funnel',
  analysis: FunnelAnalysisSchema,
  fromV1(a, { ids, warnings, chart, dropped, compare, extras }) {
    if (a.formula !== undefined) dropped('formula', 'funnels have no formula');
    const steps = (a.steps ?? ids).map((s) => (typeof s === 'number' ? (ids[s] ?? METRIC_IDS[s]) : s));
    let windowDays = a.windowDays ?? 30;
    if (windowDays === 0 && !('window' in extras)) { warnings.push('analysis.windowDays: 0 meant no window in v1; now the longest window, 366 days'); windowDays = 366; }
    return { kind: 'funnel', steps, window: { value: windowDays, unit: 'day' }, ...chart(FUNNEL_CHARTS), ...compare };
  },
  resolve(query, ref, out) {
    if (query.metrics.length === 0) out.push({ path: 'metrics', message: 'a funnel needs at least one metric', code: 'missing_metric' });
    const a = query.analysis;
    a.steps.forEach((id, i) => ref(id, `analysis.steps.${i}`, true));
    if (a.window.unit === 'week' && a.window.value * 7 > 366) out.push({ path: 'analysis.window.value', message: 'the window is at most 366 days (52 weeks)' });
    if (query.breakdown && 'thenBy' in query.breakdown && query.breakdown.thenBy) out.push({ path: 'breakdown.thenBy', message: 'a funnel breaks down by one property' });
  },
  compare: (a) => a.compare,
  span: (query, range, cmp) => cohortSpan(query, range, cmp),
  run: (deps, q, query, range, cmp) => runIrFunnel(deps.events, q, query, query.analysis, range, cmp),
};

/** Ordered conversion through 2-10 steps; no buckets, so no estimate (its rows are bounded by `maxRows`). */
export const funnel = defineAnalysis({
  name: 'funnel',
  summary: 'Ordered conversion through 2-10 steps within a window from step 0',
  body: FunnelQuerySchema,
  response: FunnelResultSchema,
  estimate: () => {},
  run: (env, q, body, range) => runFunnel(env.events, q, body, range),
  report: { filterable: true },
  guess: { order: 0, when: (doc) => Array.isArray(doc.steps) },
  ir: FUNNEL,
  toIr: (f) => ({
    ...(f.filters?.length ? { filters: f.filters } : {}),
    metrics: f.steps.map((event, i) => ({ id: METRIC_IDS[i], kind: 'event', event, aggregation: { op: 'unique' } })),
    ...(f.breakdown ? { breakdown: { property: f.breakdown } } : {}),
    analysis: { kind: 'funnel', steps: f.steps.map((_, i) => METRIC_IDS[i]), window: { value: f.windowDays, unit: 'day' } },
  }),
});
