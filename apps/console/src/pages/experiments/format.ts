import type { Decision, ExperimentResults, VariantResult } from './api.js';

/** A relative change: 0.052 → `+5.2 %`. */
export const signedPct = (x: number) => `${x > 0 ? '+' : x < 0 ? '−' : ''}${Math.abs(x * 100).toFixed(1)} %`;
/** A probability as a share: 0.973 → `97.3 %`. */
export const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
export const pValue = (p: number) => (p < 0.0001 ? '< 0.0001' : p.toFixed(4));
/** A mean shown to 4 decimals at most (conversions are shares, counts and sums are not). */
export const num = (x: number) => x.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 4 });
/** The Table view's figures: six significant digits, so they read as the API's numbers. */
export const exact = (x: number | null | undefined) => (x === null || x === undefined ? '—' : String(Number(x.toPrecision(6))));

export const DECISION_TEXT: Record<Decision, string> = {
  Inconclusive: 'Inconclusive',
  Winner: 'Winner',
  Loser: 'Loser',
  SampleRatioMismatch: 'Sample ratio mismatch',
};

/** The figure that decides a variant under the engine: chance to win (Bayesian) or the p-value the verdict is taken on. */
export function decidingValue(r: ExperimentResults, v: VariantResult): { label: string; text: string } | null {
  if (r.engine === 'bayesian') return v.chanceToWin == null ? null : { label: 'Chance to win', text: pct(v.chanceToWin) };
  const p = r.sequential ? v.sequentialPValue : r.correction !== 'none' ? v.adjustedPValue : v.pValue;
  return p == null ? null : { label: pLabel(r), text: pValue(p) };
}

export const pLabel = (r: Pick<ExperimentResults, 'sequential' | 'correction'>) =>
  r.sequential ? 'p-value (sequential)' : r.correction !== 'none' ? `p-value (${r.correction === 'bh' ? 'Benjamini–Hochberg' : 'Holm'})` : 'p-value';

/** `significantly better`, `significantly worse`, `not significant`, or the reason it cannot be compared. */
export function verdict(v: VariantResult): string {
  if (v.lift === undefined) return 'control';
  if (v.lift === null) return v.reason ?? 'cannot be compared';
  if (v.significant) return v.lift.mean > 0 ? 'significantly better' : 'significantly worse';
  return 'not significant';
}

export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
