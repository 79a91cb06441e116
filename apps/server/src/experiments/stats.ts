/**
 * The arithmetic of an experiment's results: per-variant summaries, the relative lift against the
 * control with its delta-method variance, the Bayesian and frequentist comparisons, multiple-testing
 * corrections, sequential (always-valid) intervals and the sample-ratio-mismatch test. Pure
 * functions over the per-variant totals the event store's aggregation returns; docs/experiments.md
 * has every formula in words. Where the product's definitions are silent this follows GrowthBook's
 * engine (gbstats), as the docs say case by case.
 */
import { chiSquareSf, normalCdf, normalQuantile, studentTQuantile, studentTSf } from './distributions.js';

export type MetricKind = 'conversion' | 'count' | 'sum';
export type Engine = 'bayesian' | 'frequentist';
export type Correction = 'none' | 'holm' | 'bh';

/** GrowthBook's default tuning parameter of the sequential interval (the sample size it is tightest near). */
export const SEQUENTIAL_TUNING_DEFAULT = 5000;
/** Below this SRM p-value the observed split is called broken. */
export const SRM_P_VALUE_THRESHOLD = 0.001;

/** Why a variant has no comparison against the control: the comparison fields are null and `reason` says which. */
export const NO_COMPARISON = {
  controlHasNoUnits: 'the control has no units',
  variantHasNoUnits: 'the variant has no units',
  tooFewUnits: 'a variance needs at least 2 units in the control and in the variant',
  controlMeanZero: 'the control mean is 0, so a relative lift is undefined',
  zeroVariance: 'the control or the variant has zero variance (every unit has the same value)',
  notFinite: 'the values are too large to compute with',
} as const;

/** What the per-unit aggregation returns for one metric and one variant. */
export interface VariantTotals {
  /** Exposed units of the variant. */
  units: number;
  /** Sum of the per-unit values (for a conversion, the units that converted). */
  total: number;
  /** Sum of the squared per-unit values; needed for count and sum metrics. */
  sumOfSquares?: number;
}

/** mean, variance (and total, on overflow) are null when they are undefined or not finite, never NaN. */
export interface VariantSummary {
  units: number;
  total: number | null;
  mean: number | null;
  variance: number | null;
}

export interface LiftInterval {
  mean: number;
  low: number;
  high: number;
}

/** A variant against the control. Every field but `reason` is null when `reason` is set. */
export interface Comparison {
  lift: LiftInterval | null;
  /** Bayesian engine: P(lift > 0). */
  chanceToWin?: number | null;
  /** Frequentist engine: Welch's two-sided p-value, 2·(1 − F_t(|t|; ν)), sequential or not. */
  pValue?: number | null;
  /**
   * Frequentist engine with `sequential`: the always-valid p-value (below 1 − level exactly when the
   * widened interval excludes 0). `significant` is then decided on it, so looking at the results as
   * often as one likes keeps the error rate: the fixed-sample pValue is reported as the contract
   * defines it, not used for the decision.
   */
  sequentialPValue?: number | null;
  /** Frequentist engine with a correction: the corrected p-value. */
  adjustedPValue?: number | null;
  significant: boolean | null;
  reason?: string;
}

export interface AnalysisSettings {
  engine: Engine;
  /** In (0, 1); the API accepts (0.5, 1). */
  confidenceLevel: number;
  /** Frequentist only; ignored by the Bayesian engine. */
  sequential?: boolean;
  /** Frequentist only; ignored by the Bayesian engine. */
  correction?: Correction;
  sequentialTuning?: number;
}

const finiteOrNull = (x: number): number | null => (Number.isFinite(x) ? x : null);

function checkCount(name: string, x: number): void {
  if (!Number.isInteger(x) || x < 0) throw new RangeError(`${name} must be a whole number ≥ 0, got ${x}`);
}

/**
 * mean = total/units; variance: conversion mean·(1 − mean), count and sum the sample variance
 * (sumOfSquares − total²/units)/(units − 1). Throws on totals no aggregation can produce.
 */
export function summarizeVariant(kind: MetricKind, totals: VariantTotals): VariantSummary {
  const { units, total } = totals;
  checkCount('units', units);
  if (Number.isNaN(total)) throw new RangeError('total must be a number');
  if (kind === 'conversion') {
    checkCount('total of a conversion', total);
    if (total > units) throw new RangeError(`a conversion's total (${total}) cannot exceed its units (${units})`);
    if (units === 0) return { units, total, mean: null, variance: null };
    const mean = total / units;
    return { units, total, mean, variance: mean * (1 - mean) };
  }
  const sumOfSquares = totals.sumOfSquares;
  if (sumOfSquares === undefined || Number.isNaN(sumOfSquares) || sumOfSquares < 0) {
    throw new RangeError(`a ${kind} metric needs sumOfSquares ≥ 0`);
  }
  if (kind === 'count' && !(total >= 0)) throw new RangeError(`a count's total must be ≥ 0, got ${total}`);
  if (units === 0) return { units, total: finiteOrNull(total), mean: null, variance: null };
  const mean = total / units;
  if (units === 1) return { units, total: finiteOrNull(total), mean: finiteOrNull(mean), variance: null };
  // Rounding can leave a tiny negative where every value is equal; the variance is then 0.
  const variance = Math.max(0, (sumOfSquares - total * mean) / (units - 1));
  return { units, total: finiteOrNull(total), mean: finiteOrNull(mean), variance: finiteOrNull(variance) };
}

/** The relative lift of a variant over the control and its delta-method variance, or why there is none. */
export type RelativeLift =
  | { ok: true; mean: number; variance: number; unitsControl: number; unitsVariant: number; varianceControl: number; varianceVariant: number }
  | { ok: false; reason: string };

/**
 * lift = mean_v/mean_c − 1; var(lift) = var_c·mean_v²/(mean_c⁴·n_c) + var_v/(mean_c²·n_v).
 * Like gbstats, a zero variance on either side gives no comparison.
 */
export function relativeLift(control: VariantSummary, variant: VariantSummary): RelativeLift {
  if (control.units === 0) return { ok: false, reason: NO_COMPARISON.controlHasNoUnits };
  if (variant.units === 0) return { ok: false, reason: NO_COMPARISON.variantHasNoUnits };
  const { mean: mc, variance: vc, units: nc } = control;
  const { mean: mv, variance: vv, units: nv } = variant;
  if (mc === null || mv === null) return { ok: false, reason: NO_COMPARISON.notFinite };
  if (mc === 0) return { ok: false, reason: NO_COMPARISON.controlMeanZero };
  if (nc < 2 || nv < 2) return { ok: false, reason: NO_COMPARISON.tooFewUnits };
  if (vc === null || vv === null) return { ok: false, reason: NO_COMPARISON.notFinite };
  if (vc <= 0 || vv <= 0) return { ok: false, reason: NO_COMPARISON.zeroVariance };
  const mean = mv / mc - 1;
  const variance = (vc * mv * mv) / (mc * mc * mc * mc * nc) + vv / (mc * mc * nv);
  if (!Number.isFinite(mean) || !(variance > 0) || !Number.isFinite(variance)) return { ok: false, reason: NO_COMPARISON.notFinite };
  return { ok: true, mean, variance, unitsControl: nc, unitsVariant: nv, varianceControl: vc, varianceVariant: vv };
}

/** A lift that can be compared: the inputs of the engines below. */
export type Lift = Extract<RelativeLift, { ok: true }>;

function checkLevel(level: number): void {
  if (!(level > 0 && level < 1)) throw new RangeError(`confidenceLevel must be in (0, 1), got ${level}`);
}

/** Flat prior: the posterior of the lift is N(lift, var). chanceToWin = Φ(lift/√var); interval lift ∓ z·√var. */
export function bayesianComparison(lift: Lift, level: number): { lift: LiftInterval; chanceToWin: number; significant: boolean } {
  checkLevel(level);
  const sd = Math.sqrt(lift.variance);
  const z = normalQuantile((1 + level) / 2);
  const chanceToWin = normalCdf(lift.mean / sd);
  return {
    lift: { mean: lift.mean, low: lift.mean - z * sd, high: lift.mean + z * sd },
    chanceToWin,
    significant: chanceToWin > level || chanceToWin < 1 - level,
  };
}

/** Welch–Satterthwaite: ν = (a + b)²/(a²/(n_c − 1) + b²/(n_v − 1)) with a = var_c/n_c, b = var_v/n_v. */
export function welchDegreesOfFreedom(varianceControl: number, unitsControl: number, varianceVariant: number, unitsVariant: number): number {
  const a = varianceControl / unitsControl;
  const b = varianceVariant / unitsVariant;
  return ((a + b) * (a + b)) / ((a * a) / (unitsControl - 1) + (b * b) / (unitsVariant - 1));
}

/** t = lift/√var(lift); pValue = 2·(1 − F_t(|t|; ν)); interval lift ∓ t_ν·√var(lift). */
export function welchComparison(lift: Lift, level: number): { lift: LiftInterval; pValue: number; degreesOfFreedom: number } {
  checkLevel(level);
  const se = Math.sqrt(lift.variance);
  const df = welchDegreesOfFreedom(lift.varianceControl, lift.unitsControl, lift.varianceVariant, lift.unitsVariant);
  const t = lift.mean / se;
  // 2·(1 − F_t(|t|)) taken as 2·P(T > |t|), which keeps small p-values' digits.
  const pValue = Math.min(1, 2 * studentTSf(Math.abs(t), df));
  const halfwidth = studentTQuantile((1 + level) / 2, df) * se;
  return { lift: { mean: lift.mean, low: lift.mean - halfwidth, high: lift.mean + halfwidth }, pValue, degreesOfFreedom: df };
}

/**
 * ρ of the normal-mixture confidence sequence (Waudby-Smith et al., arXiv 2103.06476 eq. 161, as in
 * gbstats): ρ = √((−2·ln α + ln(1 − 2·ln α))/τ), which makes the sequence tightest near τ units.
 */
export function sequentialRho(alpha: number, tuning = SEQUENTIAL_TUNING_DEFAULT): number {
  const l = -2 * Math.log(alpha);
  return Math.sqrt((l + Math.log(l + 1)) / tuning);
}

/**
 * Half-width of the always-valid interval (ibid. eq. 9, as in gbstats), with N = n_c + n_v and
 * s² = var(lift)·N: √s²·√(2·(Nρ² + 1)·ln(√(Nρ² + 1)/α)/(N²ρ²)).
 */
export function sequentialHalfwidth(varianceOfLift: number, totalUnits: number, alpha: number, tuning = SEQUENTIAL_TUNING_DEFAULT): number {
  const rho = sequentialRho(alpha, tuning);
  const n = totalUnits;
  const s2 = varianceOfLift * n;
  const nr2p1 = n * rho * rho + 1;
  return Math.sqrt(s2) * Math.sqrt((2 * nr2p1 * Math.log(Math.sqrt(nr2p1) / alpha)) / (n * rho * (n * rho)));
}

/**
 * The always-valid p-value (ibid. eq. 155, as in gbstats): 1/e-value, capped at 1, with
 * e = exp(ρ²·N·lift²/(2·var(lift)·(Nρ² + 1)))/√(Nρ² + 1). It is below α exactly when the
 * sequential interval excludes 0.
 */
export function sequentialPValue(lift: number, varianceOfLift: number, totalUnits: number, alpha: number, tuning = SEQUENTIAL_TUNING_DEFAULT): number {
  const rho = sequentialRho(alpha, tuning);
  const nr2p1 = totalUnits * rho * rho + 1;
  const lnE = (rho * rho * totalUnits * lift * lift) / (2 * varianceOfLift * nr2p1) - 0.5 * Math.log(nr2p1);
  return Math.min(1, Math.exp(-lnE));
}

/** The sequential comparison: the interval widened to the confidence sequence and its always-valid p-value. */
export function sequentialComparison(lift: Lift, level: number, tuning = SEQUENTIAL_TUNING_DEFAULT): { lift: LiftInterval; pValue: number } {
  checkLevel(level);
  const alpha = 1 - level;
  const n = lift.unitsControl + lift.unitsVariant;
  const halfwidth = sequentialHalfwidth(lift.variance, n, alpha, tuning);
  return {
    lift: { mean: lift.mean, low: lift.mean - halfwidth, high: lift.mean + halfwidth },
    pValue: sequentialPValue(lift.mean, lift.variance, n, alpha, tuning),
  };
}

/**
 * Holm (step-down, family-wise error) or Benjamini–Hochberg (step-up, false discovery rate)
 * adjusted p-values, in the order given; the same values as statsmodels' `multipletests` with
 * `holm` and `fdr_bh`, and as GrowthBook.
 */
export function adjustPValues(pValues: readonly number[], method: Correction): number[] {
  for (const p of pValues) if (!(p >= 0 && p <= 1)) throw new RangeError(`p-values must be in [0, 1], got ${p}`);
  const m = pValues.length;
  if (method === 'none' || m === 0) return [...pValues];
  const order = pValues.map((p, i) => ({ p, i }));
  const adjusted = new Array<number>(m);
  if (method === 'holm') {
    order.sort((x, y) => x.p - y.p);
    let running = 0;
    order.forEach(({ p, i }, rank) => {
      running = Math.max(running, Math.min(1, (m - rank) * p));
      adjusted[i] = running;
    });
  } else {
    order.sort((x, y) => y.p - x.p);
    let running = 1;
    order.forEach(({ p, i }, k) => {
      running = Math.min(running, (p * m) / (m - k));
      adjusted[i] = running;
    });
  }
  return adjusted;
}

/** One metric as the aggregation hands it over: the control's and every variant's totals. */
export interface MetricTotals {
  id: string;
  kind: MetricKind;
  variants: Array<{ key: string } & VariantTotals>;
}

export type VariantResult = { key: string } & VariantSummary & Partial<Comparison>;

export interface MetricResult {
  id: string;
  kind: MetricKind;
  variants: VariantResult[];
}

const nullComparison = (engine: Engine, correction: Correction, sequential: boolean, reason: string): Comparison =>
  engine === 'bayesian'
    ? { lift: null, chanceToWin: null, significant: null, reason }
    : {
        lift: null, pValue: null, ...(sequential ? { sequentialPValue: null } : {}), ...(correction === 'none' ? {} : { adjustedPValue: null }),
        significant: null, reason,
      };

/**
 * Every metric's variants with their summaries and, for each variant but the control, the
 * comparison under the settings. A correction runs over every (metric, variant) pair that has a
 * p-value.
 */
export function analyzeMetrics(metrics: readonly MetricTotals[], control: string, settings: AnalysisSettings): MetricResult[] {
  const { engine, confidenceLevel: level } = settings;
  checkLevel(level);
  const sequential = engine === 'frequentist' && settings.sequential === true;
  const correction: Correction = engine === 'frequentist' ? (settings.correction ?? 'none') : 'none';
  const tuning = settings.sequentialTuning ?? SEQUENTIAL_TUNING_DEFAULT;
  if (!(tuning > 0)) throw new RangeError(`sequentialTuning must be > 0, got ${tuning}`);

  const results: MetricResult[] = [];
  const tested: Array<{ result: VariantResult; pValue: number; decidingPValue: number }> = [];
  for (const metric of metrics) {
    const controlTotals = metric.variants.find((v) => v.key === control);
    if (!controlTotals) throw new RangeError(`metric ${metric.id} has no totals for the control "${control}"`);
    const controlSummary = summarizeVariant(metric.kind, controlTotals);
    const variants: VariantResult[] = [];
    for (const totals of metric.variants) {
      const summary = totals === controlTotals ? controlSummary : summarizeVariant(metric.kind, totals);
      if (totals.key === control) {
        variants.push({ key: totals.key, ...summary });
        continue;
      }
      const lift = relativeLift(controlSummary, summary);
      if (!lift.ok) {
        variants.push({ key: totals.key, ...summary, ...nullComparison(engine, correction, sequential, lift.reason) });
        continue;
      }
      if (engine === 'bayesian') {
        variants.push({ key: totals.key, ...summary, ...bayesianComparison(lift, level) });
        continue;
      }
      const welch = welchComparison(lift, level);
      let result: VariantResult;
      if (sequential) {
        const always = sequentialComparison(lift, level, tuning);
        result = { key: totals.key, ...summary, lift: always.lift, pValue: welch.pValue, sequentialPValue: always.pValue, significant: always.pValue < 1 - level };
        tested.push({ result, pValue: welch.pValue, decidingPValue: always.pValue });
      } else {
        result = { key: totals.key, ...summary, lift: welch.lift, pValue: welch.pValue, significant: welch.pValue < 1 - level };
        tested.push({ result, pValue: welch.pValue, decidingPValue: welch.pValue });
      }
      variants.push(result);
    }
    results.push({ id: metric.id, kind: metric.kind, variants });
  }
  if (correction !== 'none' && tested.length > 0) {
    // adjustedPValue corrects the reported p-values; the decision corrects the p-values it is made on
    // (the always-valid ones when sequential), so the correction holds for peeking too.
    const adjusted = adjustPValues(tested.map((t) => t.pValue), correction);
    const deciding = sequential ? adjustPValues(tested.map((t) => t.decidingPValue), correction) : adjusted;
    tested.forEach(({ result }, i) => {
      result.adjustedPValue = adjusted[i];
      result.significant = deciding[i] < 1 - level;
    });
  }
  return results;
}

export interface SampleRatioMismatch {
  chiSquare: number;
  pValue: number;
  ok: boolean;
}

/**
 * Pearson's χ² of the observed exposures against the expected split (weights, e.g. the variants'
 * rolloutPct, normalised to shares): x = Σ (o − e)²/e over variants with a positive weight (as
 * gbstats), pValue = P(χ²_{k−1} > x) with k the number of variants; ok unless pValue < 0.001.
 * No exposures, or fewer than two variants, is no evidence of a mismatch: pValue 1.
 */
export function sampleRatioMismatch(observed: readonly number[], weights: readonly number[]): SampleRatioMismatch {
  if (observed.length !== weights.length) throw new RangeError('one weight per variant');
  observed.forEach((o) => checkCount('exposures', o));
  for (const w of weights) if (!(w >= 0 && Number.isFinite(w))) throw new RangeError(`weights must be finite and ≥ 0, got ${w}`);
  const totalWeight = weights.reduce((s, w) => s + w, 0);
  if (!(totalWeight > 0)) throw new RangeError('the weights must not all be 0');
  const totalObserved = observed.reduce((s, o) => s + o, 0);
  if (totalObserved === 0 || observed.length < 2) return { chiSquare: 0, pValue: 1, ok: true };
  let chiSquare = 0;
  observed.forEach((o, i) => {
    if (weights[i] <= 0) return;
    const e = (weights[i] / totalWeight) * totalObserved;
    chiSquare += ((o - e) * (o - e)) / e;
  });
  const pValue = chiSquareSf(chiSquare, observed.length - 1);
  return { chiSquare, pValue, ok: !(pValue < SRM_P_VALUE_THRESHOLD) };
}
