import { SeriesChart, type SeriesKind } from './series-chart.js';
import { FunnelChart } from './funnel-chart.js';
import { RetentionChart } from './retention-chart.js';
import { SankeyChart } from './sankey-chart.js';
import { toTable, type FunnelGroup, type View } from './view.js';

/** The chart of any view. */
export function ResultChart(props: {
  view: View; title: string; height: number; seriesKind?: SeriesKind;
  onPoint?: (series: number, bucket: number) => void;
  onStep?: (step: number, mode: 'reached' | 'dropped', group: FunnelGroup) => void;
}) {
  const { view, title, height } = props;
  const label = `${title}: chart`;
  switch (view.kind) {
    case 'series':
      return view.labels.length === 0 ? <p class="muted">No data in this range.</p> : <SeriesChart view={view} kind={props.seriesKind ?? 'line'} height={height} label={label} onPoint={props.onPoint} />;
    case 'funnel':
      return <FunnelChart view={view} height={height} label={label} onStep={props.onStep} />;
    case 'retention':
      return <RetentionChart view={view} height={height} label={label} />;
    case 'flows':
      return view.paths.length === 0 ? <p class="muted">No paths in this range.</p> : <SankeyChart view={view} height={height} label={label} />;
  }
}

/** The same numbers as an HTML table (retention cells shaded as a heat map). */
export function ResultTable(props: { view: View; title: string }) {
  const t = toTable(props.view);
  const heat = props.view.kind === 'retention';
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${props.title}: table`}>
      <table>
        <caption class="sr-only">{props.title}</caption>
        <thead><tr>{t.columns.map((c) => <th scope="col">{c}</th>)}</tr></thead>
        <tbody>
          {t.rows.map((r) => (
            <tr>
              {r.map((v, i) =>
                i === 0 ? <th scope="row">{v}</th> : (
                  <td class={typeof v === 'number' ? 'num' : undefined} style={heat && i > 1 && typeof v === 'number' && typeof r[1] === 'number' && r[1] > 0 ? { background: `color-mix(in srgb, var(--accent) ${Math.round((v / r[1]) * 70)}%, transparent)` } : undefined}>
                    {typeof v === 'number' ? v.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 4 }) : v}
                  </td>
                ),
              )}
            </tr>
          ))}
        </tbody>
        {t.footer && (
          <tfoot>
            <tr>{t.footer.map((v, i) => (i === 0 ? <th scope="row">{v}</th> : <td class={typeof v === 'number' ? 'num' : undefined}>{typeof v === 'number' ? v.toLocaleString('en-US', { useGrouping: false, maximumFractionDigits: 4 }) : v}</td>))}</tr>
          </tfoot>
        )}
      </table>
    </div>
  );
}
