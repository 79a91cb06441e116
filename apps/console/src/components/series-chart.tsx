import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { palette } from '../theme.js';
import type { View } from './view.js';

export type SeriesKind = 'line' | 'bar' | 'stacked';

/**
 * Line, bar and stacked charts with uPlot on a canvas (about 20 KB compressed, fast on
 * thousands of points). The x axis is the bucket index labelled with the API's bucket names;
 * annotations are dashed lines on their day. A click picks the nearest point of the nearest
 * series (drill-down).
 */
export function SeriesChart(props: {
  view: View & { kind: 'series' };
  kind: SeriesKind;
  height: number;
  label: string;
  onPoint?: (seriesIndex: number, bucketIndex: number) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const [theme, setTheme] = useState(0);
  useEffect(() => {
    const l = () => setTheme((t) => t + 1);
    window.addEventListener('tally-theme', l);
    return () => window.removeEventListener('tally-theme', l);
  }, []);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const { view, kind } = props;
    const colors = palette();
    const xs = view.labels.map((_, i) => i);
    // Stacked: each series drawn as the running sum of those before it (the table keeps raw values).
    const raw = view.series.map((s) => view.labels.map((_, i) => s.data[i] ?? 0));
    const drawn = kind === 'stacked' ? raw.map((_, k) => raw[0].map((__, i) => raw.slice(0, k + 1).reduce((a, s) => a + s[i], 0))) : raw;
    const order = kind === 'stacked' ? drawn.map((_, k) => drawn.length - 1 - k) : drawn.map((_, k) => k);
    const bars = uPlot.paths.bars!({ size: [0.8, 80], align: 0 });
    const annotationIdx = view.annotations.map((a) => ({ i: view.labels.findIndex((b) => b.slice(0, 10) === a.date.slice(0, 10)), a })).filter((x) => x.i >= 0);

    const opts: uPlot.Options = {
      width: Math.max(120, el.clientWidth),
      height: props.height,
      // uPlot's legend is an HTML table: a card's only table must be its Table view, so the legend is a list below.
      legend: { show: false },
      cursor: { points: { size: 8 }, drag: { x: false, y: false } },
      scales: { x: { time: false } },
      axes: [
        {
          stroke: colors.text, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid },
          values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? shortLabel(view.labels[t] ?? '') : '')),
        },
        { stroke: colors.text, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid }, size: 50 },
      ],
      series: [
        { label: 'Bucket', value: (_u, v) => (v === null || v === undefined ? '' : view.labels[v] ?? '') },
        ...order.map((k, j) => {
          const color = colors.series[k % colors.series.length];
          const s = view.series[k];
          return {
            label: s.name,
            stroke: color,
            width: kind === 'line' ? 2 : 1,
            dash: s.range === 'comparison' ? [6, 4] : undefined,
            fill: kind === 'line' ? undefined : color,
            paths: kind === 'line' ? undefined : kind === 'bar' ? offsetBars(j, view.series.length) : bars,
            points: { show: kind === 'line' && view.labels.length < 40 },
            value: (_u: uPlot, v: number | null) => (v === null ? '' : String(kind === 'stacked' ? raw[k][_u.cursor.idx ?? 0] : v)),
          } as uPlot.Series;
        }),
      ],
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            ctx.save();
            ctx.strokeStyle = colors.accent;
            ctx.setLineDash([4, 4]);
            ctx.lineWidth = 1;
            for (const { i } of annotationIdx) {
              const x = Math.round(u.valToPos(i, 'x', true));
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
            }
            ctx.restore();
          },
        ],
      },
    };
    if (kind === 'bar' || kind === 'stacked') opts.scales!.x = { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] };
    const chart = new uPlot(opts, [xs, ...order.map((k) => drawn[k])] as uPlot.AlignedData, el);
    chart.root.querySelector('canvas')?.setAttribute('aria-hidden', 'true');

    const onClick = () => {
      const idx = chart.cursor.idx;
      if (idx === null || idx === undefined || !props.onPoint) return;
      const top = chart.cursor.top ?? 0;
      let best = 0;
      let bestDist = Infinity;
      order.forEach((k, j) => {
        const v = chart.data[j + 1][idx];
        if (v === null || v === undefined) return;
        const d = Math.abs(chart.valToPos(v as number, 'y') - top);
        if (d < bestDist) (bestDist = d), (best = k);
      });
      props.onPoint(best, idx);
    };
    chart.over.addEventListener('click', onClick);
    const ro = new ResizeObserver(() => chart.setSize({ width: Math.max(120, el.clientWidth), height: props.height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      chart.destroy();
    };
  }, [props.view, props.kind, props.height, theme]);

  return (
    <div class="chart" role="img" aria-label={props.label}>
      <div ref={box} class="chart-canvas" />
      {props.view.series.length > 1 && (
        <ul class="legend" aria-label="Series">
          {props.view.series.map((s, k) => (
            <li><span class={`swatch${s.range === 'comparison' ? ' dashed' : ''}`} style={{ background: `var(--series-${(k % 8) + 1})` }} aria-hidden="true" />{s.name}</li>
          ))}
        </ul>
      )}
      {props.view.annotations.length > 0 && (
        <ul class="annotations" aria-label="Annotations">
          {props.view.annotations.map((a) => <li><time dateTime={a.date}>{a.date.slice(0, 10)}</time> {a.description}</li>)}
        </ul>
      )}
    </div>
  );
}

/** Several series as bars: nested, each narrower than the one before, so every bar stays visible. */
function offsetBars(j: number, n: number): uPlot.Series.PathBuilder {
  return uPlot.paths.bars!({ size: [0.8 * (1 - j / (n + 1)), 80], align: 0 });
}

function shortLabel(b: string): string {
  // 2024-05-01 → 05-01; 2024-05-01T13:00 → 13:00
  if (/^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}/.test(b)) return b.slice(11, 16);
  if (/^\d{4}-\d{2}-\d{2}/.test(b)) return b.slice(5, 10);
  return b;
}
