import { useState } from 'preact/hooks';
import { SeriesChart } from '../../components/series-chart.js';
import { ResultTable } from '../../components/result.js';
import type { View } from '../../components/view.js';
import type { ExperimentMetric, ExperimentResults, MetricResult, VariantResult } from './api.js';
import { decidingValue, exact, num, pct, pLabel, pValue, signedPct, verdict } from './format.js';

/** The scale every lift interval of one metric shares: it always includes 0, with a little room each side. */
function scaleOf(variants: VariantResult[]): { min: number; max: number } {
  let min = 0;
  let max = 0;
  for (const v of variants) {
    if (!v.lift) continue;
    min = Math.min(min, v.lift.low);
    max = Math.max(max, v.lift.high);
  }
  if (min === max) return { min: -0.1, max: 0.1 };
  const pad = (max - min) * 0.08;
  return { min: min - pad, max: max + pad };
}

const toneOf = (v: VariantResult) => (!v.lift || !v.significant ? 'neutral' : v.lift.mean > 0 ? 'better' : 'worse');

/** One variant's lift interval against the zero line (the whole row's SVG stretches; strokes keep their width). */
function LiftInterval(props: { v: VariantResult; scale: { min: number; max: number } }) {
  const { v, scale } = props;
  if (!v.lift) return null;
  const x = (value: number) => ((value - scale.min) / (scale.max - scale.min)) * 100;
  const lo = x(v.lift.low);
  const hi = x(v.lift.high);
  return (
    <svg class={`lift-svg ${toneOf(v)}`} viewBox="0 0 100 20" preserveAspectRatio="none" role="img"
      aria-label={`Lift of ${v.key}: ${signedPct(v.lift.mean)}, interval ${signedPct(v.lift.low)} to ${signedPct(v.lift.high)}`}>
      <rect class="interval" x={lo} width={Math.max(hi - lo, 0.3)} y="6" height="8" />
      <line class="zero" x1={x(0)} x2={x(0)} y1="0" y2="20" vector-effect="non-scaling-stroke" />
      <line class="estimate" x1={x(v.lift.mean)} x2={x(v.lift.mean)} y1="3" y2="17" vector-effect="non-scaling-stroke" />
    </svg>
  );
}

/**
 * One metric: per variant its units, mean, lift with the interval drawn against zero, and the
 * engine's deciding figure; `Table` shows every number of the API's answer instead.
 */
export function MetricResultView(props: { results: ExperimentResults; metric: MetricResult; def?: ExperimentMetric; primary: boolean }) {
  const { results: r, metric, def, primary } = props;
  const [table, setTable] = useState(false);
  const title = def?.name ?? metric.id;
  const scale = scaleOf(metric.variants);
  const what = def ? `${def.kind === 'conversion' ? 'Conversion to' : def.kind === 'count' ? 'Count of' : `Sum of ${def.property} on`} ${def.event}${def.windowHours ? ` within ${def.windowHours} h` : ''}` : metric.kind;
  const level = `${Math.round(r.confidenceLevel * 1000) / 10} %`;
  const headingId = `metric-${metric.id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const frequentist = r.engine === 'frequentist';
  return (
    <section class="metric-result" aria-labelledby={headingId}>
      <div class="card-head">
        <h3 id={headingId}>{title}{primary && <span class="badge">primary</span>}</h3>
        <button type="button" aria-pressed={table} onClick={() => setTable(!table)} aria-label={`Table: ${title}`}>Table</button>
      </div>
      <p class="muted small">{what} · per exposed person</p>
      {table ? (
        <div class="table-wrap" tabIndex={0} role="region" aria-label={`${title}: every number`}>
          <table class="exact-table">
            <caption class="sr-only">{title}: every number</caption>
            <thead>
              <tr>
                <th scope="col">Variant</th><th scope="col">Units</th><th scope="col">Total</th><th scope="col">Mean</th><th scope="col">Variance</th>
                <th scope="col">Lift</th><th scope="col">Lift low</th><th scope="col">Lift high</th>
                {frequentist ? <><th scope="col">p-value</th>{r.sequential && <th scope="col">Sequential p-value</th>}{r.correction !== 'none' && <th scope="col">Adjusted p-value</th>}</> : <th scope="col">Chance to win</th>}
                <th scope="col">Significant</th>
              </tr>
            </thead>
            <tbody>
              {metric.variants.map((v) => (
                <tr data-variant={v.key}>
                  <th scope="row">{v.key}</th>
                  <td class="num" data-field="units">{exact(v.units)}</td>
                  <td class="num" data-field="total">{exact(v.total)}</td>
                  <td class="num" data-field="mean">{exact(v.mean)}</td>
                  <td class="num" data-field="variance">{exact(v.variance)}</td>
                  <td class="num" data-field="lift.mean">{exact(v.lift?.mean)}</td>
                  <td class="num" data-field="lift.low">{exact(v.lift?.low)}</td>
                  <td class="num" data-field="lift.high">{exact(v.lift?.high)}</td>
                  {frequentist ? (
                    <>
                      <td class="num" data-field="pValue">{exact(v.pValue)}</td>
                      {r.sequential && <td class="num" data-field="sequentialPValue">{exact(v.sequentialPValue)}</td>}
                      {r.correction !== 'none' && <td class="num" data-field="adjustedPValue">{exact(v.adjustedPValue)}</td>}
                    </>
                  ) : <td class="num" data-field="chanceToWin">{exact(v.chanceToWin)}</td>}
                  <td data-field="significant">{v.significant == null ? (v.lift === undefined ? '—' : v.reason ?? '—') : v.significant ? 'yes' : 'no'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <div class="table-wrap lift-wrap" tabIndex={0} role="region" aria-label={`${title}: lift`}>
          <table class="lift-table">
            <caption class="sr-only">{title}: lift against {r.control} with its {level} interval</caption>
            <thead>
              <tr>
                <th scope="col">Variant</th><th scope="col" class="num units-col">Units</th><th scope="col" class="num mean-col">Mean</th><th scope="col" class="num">Lift</th>
                <th scope="col" class="interval-col">{level} interval<span class="sr-only"> (a dashed line marks no change)</span></th>
                <th scope="col" class="num">{frequentist ? pLabel(r) : 'Chance to win'}</th>
              </tr>
            </thead>
            <tbody>
              {metric.variants.map((v) => {
                const deciding = decidingValue(r, v);
                return (
                  <tr data-variant={v.key} class={toneOf(v)}>
                    <th scope="row">{v.key}{v.lift === undefined && v.key !== 'control' && <span class="muted small"> (control)</span>}</th>
                    <td class="num units-col">{v.units}</td>
                    <td class="num mean-col">{v.mean === null ? '—' : metric.kind === 'conversion' ? pct(v.mean) : num(v.mean)}</td>
                    <td class="num">{v.lift ? signedPct(v.lift.mean) : '—'}</td>
                    <td class="interval-col">
                      {v.lift ? (
                        <div class="interval-cell">
                          <span class="bound">{signedPct(v.lift.low)}</span>
                          <LiftInterval v={v} scale={scale} />
                          <span class="bound">{signedPct(v.lift.high)}</span>
                        </div>
                      ) : <span class="muted small">{v.lift === undefined ? 'baseline' : verdict(v)}</span>}
                    </td>
                    <td class="num">
                      {deciding ? deciding.text : '—'}
                      {v.lift && <span class={`verdict ${toneOf(v)}`}>{verdict(v)}</span>}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** Exposed people per variant against the flag's split, and the sample-ratio check. */
export function ExposuresView(props: { results: ExperimentResults; split: Array<{ key: string; rolloutPct: number }> }) {
  const { results: r, split } = props;
  const total = Object.values(r.exposures).reduce((a, b) => a + b, 0);
  const shares = split.reduce((a, v) => a + v.rolloutPct, 0);
  return (
    <section class="exposures" aria-labelledby="exposures-head">
      <h2 id="exposures-head">Exposures</h2>
      {!r.srm.ok && (
        <p class="srm-alert" role="alert">
          <strong>Sample ratio mismatch.</strong> The exposures do not split the way the flag assigns its variants (χ² p-value {pValue(r.srm.pValue)}).
          Something loses or adds people in one variant; fix the exposure path before reading these results.
        </p>
      )}
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Exposures per variant">
        <table class="exposure-table">
          <caption class="sr-only">Exposed people per variant</caption>
          <thead><tr><th scope="col">Variant</th><th scope="col" class="num">Exposed</th><th scope="col" class="num">Share</th><th scope="col" class="num">Expected</th><th scope="col" class="share-col">Split</th></tr></thead>
          <tbody>
            {split.map((v) => {
              const n = r.exposures[v.key] ?? 0;
              const share = total ? n / total : 0;
              const expected = shares ? v.rolloutPct / shares : 0;
              return (
                <tr data-variant={v.key}>
                  <th scope="row">{v.key}</th>
                  <td class="num">{n}</td>
                  <td class="num">{total ? pct(share) : '—'}</td>
                  <td class="num">{pct(expected)}</td>
                  <td class="share-col">
                    <svg class="share-svg" viewBox="0 0 100 12" preserveAspectRatio="none" aria-hidden="true">
                      <rect class="share-track" x="0" y="2" width="100" height="8" />
                      <rect class="share-bar" x="0" y="2" width={share * 100} height="8" />
                      <line class="share-expected" x1={expected * 100} x2={expected * 100} y1="0" y2="12" vector-effect="non-scaling-stroke" />
                    </svg>
                  </td>
                </tr>
              );
            })}
          </tbody>
          <tfoot><tr><th scope="row">All</th><td class="num">{total}</td><td colSpan={3} class="muted small">SRM p-value {pValue(r.srm.pValue)}{r.srm.ok ? ': the split is as expected' : ''}</td></tr></tfoot>
        </table>
      </div>
      {r.excludedMultipleVariants > 0 && (
        <p class="muted small">{r.excludedMultipleVariants} {r.excludedMultipleVariants === 1 ? 'person was' : 'people were'} seen in more than one variant and left out.</p>
      )}
    </section>
  );
}

/**
 * Exposed people over time: per variant, those first exposed each UTC day (New) or the running
 * sum (Cumulative, whose last day is the Exposures table's count), drawn by the shared series
 * chart; `Table` shows the same numbers.
 */
export function ExposuresOverTimeView(props: { results: ExperimentResults }) {
  const { days, variants } = props.results.exposuresOverTime;
  const [cumulative, setCumulative] = useState(true);
  const [table, setTable] = useState(false);
  const title = cumulative ? 'Exposed people over time (cumulative)' : 'Newly exposed people per day';
  const view: View & { kind: 'series' } = {
    kind: 'series', labels: days, annotations: [],
    series: variants.map((v) => ({ name: v.key, data: cumulative ? v.cumulative : v.new, total: cumulative ? null : v.new.reduce((a, b) => a + b, 0) })),
  };
  return (
    <section class="exposures-over-time" aria-labelledby="exposures-time-head">
      <div class="card-head">
        <h3 id="exposures-time-head">Exposures over time</h3>
        <div class="tabs" role="group" aria-label="Exposures shown">
          <button type="button" aria-pressed={cumulative} onClick={() => setCumulative(true)}>Cumulative</button>
          <button type="button" aria-pressed={!cumulative} onClick={() => setCumulative(false)}>New per day</button>
        </div>
        <button type="button" aria-pressed={table} onClick={() => setTable(!table)} aria-label="Table: exposures over time">Table</button>
      </div>
      {days.length === 0 ? <p class="muted">No exposures yet.</p>
        : table ? <ResultTable view={view} title={title} />
        : <SeriesChart view={view} kind={cumulative ? 'line' : 'bar'} height={200} label={`${title}: chart`} />}
      <p class="muted small">Days in UTC, by each person's first exposure; people seen in more than one variant are left out.</p>
    </section>
  );
}
