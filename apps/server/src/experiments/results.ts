import { conflict } from '../http/errors.js';
import type { QueryExecutor, ProjectScope } from '../query/executor.js';
import type { QueryContexts } from '../query/engine/context.js';
import type { DateRange } from '../query/engine/range.js';
import type { FeatureFlag } from '../flags/schema.js';
import { analyzeMetrics, sampleRatioMismatch, type AnalysisSettings, type MetricResult } from './stats.js';
import { checkCells, type QueryGuard } from '../query/engine/guard.js';
import { experimentTotals, type ExposureDay, type ExposureSpec } from './sql.js';
import type { DECISIONS, Experiment, ExperimentResults, ExposuresOverTime } from './schema.js';

/** Settings a results request may override (`?engine=&sequential=&correction=`). */
export interface ResultsOverrides {
  engine?: Experiment['engine'];
  sequential?: boolean;
  correction?: Experiment['correction'];
}

export interface ResultsDeps {
  executor: QueryExecutor;
  contexts: QueryContexts;
  guard: QueryGuard;
}

const DAY_MS = 86_400_000;
const NARROW = ["the experiment's dates (startAt/endAt)"];

/**
 * The cost guard's estimate before running (400 `query too large: V series × D buckets exceeds N:
 * narrow the experiment's dates`): the exposures over time have one value per variant and UTC day
 * from startAt to endAt (or now, if sooner). Without a startAt the days are known only after
 * running: `checkSeries` then checks the days the answer has.
 */
export function estimateResults(guard: QueryGuard, e: Pick<Experiment, 'startAt' | 'endAt'>, variants: number, now: number): void {
  if (e.startAt === null) return;
  const last = Math.max(e.startAt, Math.min(e.endAt ?? now, now));
  checkCells(guard, variants, Math.floor(last / DAY_MS) - Math.floor(e.startAt / DAY_MS) + 1, NARROW);
}

/**
 * New exposed units per UTC day per variant, from the first exposure's day to the last one's
 * (days without any are 0), and their running sum: the last cumulative value is the variant's
 * exposures. Days are `YYYY-MM-DD`.
 */
export function exposuresOverTime(guard: QueryGuard, daily: ExposureDay[], variants: string[]): ExposuresOverTime {
  if (daily.length === 0) return { days: [], variants: variants.map((key) => ({ key, new: [], cumulative: [] })) };
  const first = Math.min(...daily.map((x) => x.day));
  const n = Math.round((Math.max(...daily.map((x) => x.day)) - first) / DAY_MS) + 1;
  checkCells(guard, variants.length, n, NARROW);
  const fresh = new Map(variants.map((v) => [v, new Array<number>(n).fill(0)]));
  for (const x of daily) fresh.get(x.variant)![Math.round((x.day - first) / DAY_MS)] += x.units;
  const days = Array.from({ length: n }, (_, i) => new Date(first + i * DAY_MS).toISOString().slice(0, 10));
  return {
    days,
    variants: variants.map((key) => {
      let sum = 0;
      const f = fresh.get(key)!;
      return { key, new: f, cumulative: f.map((x) => (sum += x)) };
    }),
  };
}

/** The experiment's variants as its flag has them now: 409 when the flag or the control is gone, so the results never guess. */
function variantsOf(e: Experiment, flag: FeatureFlag | undefined): FeatureFlag['variants'] {
  if (!flag) throw conflict('experiment flag missing', { message: `the flag "${e.flagKey}" of this experiment no longer exists` });
  if (!flag.variants.some((v) => v.key === e.control)) {
    throw conflict('experiment control missing', { message: `the flag "${e.flagKey}" no longer has the control variant "${e.control}"` });
  }
  return flag.variants;
}

/** The event times an experiment reads, for the results cache: [startAt, endAt], open ends up to now. */
function spanOf(e: Experiment, now: number): DateRange {
  const fromMs = e.startAt ?? 0;
  return { fromMs, toEndMs: Math.max(fromMs + 1, (e.endAt ?? now) + 1) };
}

/**
 * The experiment's results: the cost guard's estimate, then the per-unit aggregation in the
 * engine (one statement through the query executor's slot, served from the results cache while the project's events in its span and
 * the experiment are unchanged), then the statistics of stats.ts on the per-variant totals.
 */
export async function experimentResults(
  deps: ResultsDeps, project: ProjectScope, e: Experiment, flag: FeatureFlag | undefined, overrides: ResultsOverrides = {}, now = Date.now(),
): Promise<ExperimentResults> {
  const variants = variantsOf(e, flag);
  estimateResults(deps.guard, e, variants.length, now);
  const spec: ExposureSpec = {
    experimentKey: e.key, flagKey: e.flagKey, variants: variants.map((v) => v.key), startAt: e.startAt, endAt: e.endAt, metrics: e.metrics,
  };
  // The aggregation does not depend on the statistics' settings: every setting shares one entry.
  // `v: 2`: entries since the totals carry the days of first exposure.
  const parts = { x: 'experiment', v: 2, spec };
  // When the answer was computed: the cache's clock, which a later hit's cached_at repeats.
  let computedAt = now;
  const { cached_at, ...totals } = await deps.executor.cached(project, now, parts, spanOf(e, now), () =>
    deps.executor.compiled(project, async (events) => experimentTotals(events, await deps.contexts.forProject(project.id), spec)),
  { onComputed: (at) => { computedAt = at; } });
  const settings: AnalysisSettings = {
    engine: overrides.engine ?? e.engine,
    confidenceLevel: e.confidenceLevel,
    sequential: overrides.sequential ?? e.sequential,
    correction: overrides.correction ?? e.correction,
  };
  const srm = sampleRatioMismatch(variants.map((v) => totals.exposures[v.key] ?? 0), variants.map((v) => v.rolloutPct));
  const frequentist = settings.engine === 'frequentist';
  return {
    experimentId: e.id,
    computedAt: cached_at ?? computedAt,
    engine: settings.engine,
    confidenceLevel: settings.confidenceLevel,
    sequential: frequentist && settings.sequential === true,
    correction: frequentist ? settings.correction ?? 'none' : 'none',
    control: e.control,
    exposures: totals.exposures,
    excludedMultipleVariants: totals.excludedMultipleVariants,
    srm: { pValue: srm.pValue, ok: srm.ok },
    metrics: analyzeMetrics(totals.metrics, e.control, settings),
    exposuresOverTime: exposuresOverTime(deps.guard, totals.daily, variants.map((v) => v.key)),
    ...(cached_at !== undefined ? { cached_at } : {}),
  };
}

export interface ExperimentAnalysis {
  ok: boolean;
  srmOk: boolean;
  decision: (typeof DECISIONS)[number];
  winner: string | null;
  primary: MetricResult;
}

/**
 * The verdict a canary gate reads (Argo Rollouts' `web` provider, `successCondition: result.ok`):
 * ok when the split is as expected and no variant is significantly worse than the control on the
 * primary metric. decision: SampleRatioMismatch first, then Loser (some variant significantly
 * worse), Winner (some variant significantly better: the one with the largest lift), else
 * Inconclusive.
 */
export function analysisOf(results: ExperimentResults, primaryMetricId: string): ExperimentAnalysis {
  const primary = results.metrics.find((m) => m.id === primaryMetricId) ?? results.metrics[0];
  const compared = primary.variants.filter((v) => v.key !== results.control && v.significant === true && v.lift);
  const worse = compared.filter((v) => v.lift!.mean < 0);
  const better = compared.filter((v) => v.lift!.mean > 0).sort((a, b) => b.lift!.mean - a.lift!.mean);
  const srmOk = results.srm.ok;
  const decision = !srmOk ? 'SampleRatioMismatch' : worse.length > 0 ? 'Loser' : better.length > 0 ? 'Winner' : 'Inconclusive';
  return { ok: srmOk && worse.length === 0, srmOk, decision, winner: decision === 'Winner' ? better[0].key : null, primary };
}
