import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { palette, seriesStyle, SERIES_COLOURS } from '../theme.js';
import { exact, Legend, toggled } from './legend.js';
import type { View } from './view.js';

export type SeriesKind = 'line' | 'bar' | 'stacked';

interface Tip { left: number; top: number; bucket: number; active: number }

/**
 * Line, bar and stacked charts with uPlot on a canvas (about 20 KB compressed, fast on
 * thousands of points). The x axis is the bucket index labelled with the API's bucket names;
 * annotations are dashed lines on their day. A formula drawn next to metrics gets its own axis on
 * the right (a percentage beside counts). Hovering, or the arrow keys on the focused chart, shows
 * a tooltip with the bucket's exact values; a click or Enter drills down into the nearest point.
 * The legend's buttons hide and show series.
 */
export function SeriesChart(props: {
  view: View & { kind: 'series' };
  kind: SeriesKind;
  height: number;
  label: string;
  onPoint?: (seriesIndex: number, bucketIndex: number) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<HTMLDivElement>(null);
  const chartRef = useRef<{ chart: uPlot; order: number[] } | null>(null);
  const [theme, setTheme] = useState(0);
  const [hidden, setHidden] = useState<Set<number>>(new Set());
  const [tip, setTip] = useState<Tip | null>(null);
  const tipRef = useRef<Tip | null>(null);
  tipRef.current = tip;
  useEffect(() => {
    const l = () => setTheme((t) => t + 1);
    window.addEventListener('tally-theme', l);
    return () => window.removeEventListener('tally-theme', l);
  }, []);
  // A new view shows every series; the same set kept when none is hidden, so mounting does not build the chart twice.
  useEffect(() => setHidden((h) => (h.size ? new Set() : h)), [props.view]);

  const { view } = props;
  // A formula beside metrics has its own scale (e.g. a percentage next to counts).
  const isFormula = (k: number) => view.series[k].metricId === 'formula';
  const twoAxes = view.series.some((_, k) => isFormula(k)) && view.series.some((_, k) => !isFormula(k));

  // Built in a layout effect: the chart is drawn in the frame that shows its card, not in the one after.
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const { kind } = props;
    const colors = palette();
    const xs = view.labels.map((_, i) => i);
    const shown = view.series.map((_, k) => k).filter((k) => !hidden.has(k));
    const raw = view.series.map((s) => view.labels.map((_, i) => s.data[i] ?? 0));
    // Stacked: each shown series of the left axis drawn as the running sum of those before it (the table keeps raw values).
    const stackable = shown.filter((k) => !(twoAxes && isFormula(k)));
    const drawn = raw.map((r, k) => {
      if (kind !== 'stacked' || !stackable.includes(k)) return r;
      const below = stackable.slice(0, stackable.indexOf(k) + 1);
      return r.map((_, i) => below.reduce((a, j) => a + raw[j][i], 0));
    });
    const order = kind === 'stacked' ? [...shown].reverse() : shown;
    const bars = uPlot.paths.bars!({ size: [0.8, 80], align: 0 });
    const annotationIdx = view.annotations.map((a) => ({ i: annotationBucket(view.labels, a.date), a })).filter((x) => x.i >= 0);
    const axis = (side?: number): uPlot.Axis => ({ stroke: colors.text, grid: { stroke: colors.grid, width: 1, show: side !== 1 }, ticks: { stroke: colors.grid }, size: 50, ...(side ? { side, scale: 'y2' } : {}) });

    const opts: uPlot.Options = {
      width: Math.max(120, el.clientWidth),
      height: props.height,
      // uPlot's legend is an HTML table: a card's only table must be its Table view, so the legend is a list below.
      legend: { show: false },
      cursor: { points: { size: 8 }, drag: { x: false, y: false } },
      scales: { x: { time: false }, ...(twoAxes ? { y2: { auto: true } } : {}) },
      axes: [
        {
          stroke: colors.text, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid },
          values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? shortLabel(view.labels[t] ?? '') : '')),
        },
        axis(),
        ...(twoAxes ? [axis(1)] : []),
      ],
      series: [
        { label: 'Bucket' },
        ...order.map((k, j) => {
          const color = colors.series[k % SERIES_COLOURS];
          const s = view.series[k];
          const right = twoAxes && isFormula(k);
          return {
            label: s.name,
            scale: right ? 'y2' : 'y',
            stroke: color,
            width: kind === 'line' || right ? 2 : 1,
            dash: s.range === 'comparison' ? [6, 4] : seriesStyle(k).dash,
            fill: kind === 'line' || right ? undefined : color,
            paths: kind === 'line' || right ? undefined : kind === 'bar' ? offsetBars(j, order.length) : bars,
            points: { show: kind === 'line' && view.labels.length < 40 },
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
            const drawnAt: number[] = [];
            for (const { i } of annotationIdx) {
              const x = Math.round(u.valToPos(i, 'x', true));
              drawnAt.push(x);
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
            }
            ctx.restore();
            // Where the lines are (canvas pixels), for tests and tools reading the chart.
            el.dataset.annotationX = drawnAt.join(' ');
          },
        ],
        setCursor: [
          (u) => {
            const idx = u.cursor.idx;
            if (idx === null || idx === undefined || u.cursor.left === undefined || u.cursor.left < 0) return setTip(null);
            setTip({ left: u.cursor.left, top: u.cursor.top ?? 0, bucket: idx, active: nearest(u, order, idx, u.cursor.top ?? 0) });
          },
        ],
      },
    };
    if (kind === 'bar' || kind === 'stacked') opts.scales!.x = { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] };
    const chart = new uPlot(opts, [xs, ...order.map((k) => drawn[k])] as uPlot.AlignedData, el);
    chart.root.querySelector('canvas')?.setAttribute('aria-hidden', 'true');
    chartRef.current = { chart, order };

    const onClick = () => {
      const idx = chart.cursor.idx;
      if (idx === null || idx === undefined || !props.onPoint) return;
      props.onPoint(nearest(chart, order, idx, chart.cursor.top ?? 0), idx);
    };
    chart.over.addEventListener('click', onClick);
    // The observer's first call comes at once with the width the chart was built at: setSize redraws, so only on a change.
    const ro = new ResizeObserver(() => {
      const width = Math.max(120, el.clientWidth);
      if (width !== chart.width) chart.setSize({ width, height: props.height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      chart.destroy();
      chartRef.current = null;
      setTip(null);
    };
  }, [props.view, props.kind, props.height, theme, hidden]);

  /** The keyboard moves the cursor over the points: ←/→ buckets, ↑/↓ series, Enter drills down. */
  const onKey = (e: KeyboardEvent) => {
    const c = chartRef.current;
    if (!c || c.order.length === 0) return;
    const cur = tipRef.current;
    let bucket = cur?.bucket ?? 0;
    let active = cur?.active ?? c.order[0];
    const pos = c.order.indexOf(active);
    if (e.key === 'ArrowRight') bucket = cur ? Math.min(view.labels.length - 1, bucket + 1) : 0;
    else if (e.key === 'ArrowLeft') bucket = cur ? Math.max(0, bucket - 1) : 0;
    else if (e.key === 'Home') bucket = 0;
    else if (e.key === 'End') bucket = view.labels.length - 1;
    else if (e.key === 'ArrowUp') active = c.order[(pos + 1) % c.order.length];
    else if (e.key === 'ArrowDown') active = c.order[(pos - 1 + c.order.length) % c.order.length];
    else if ((e.key === 'Enter' || e.key === ' ') && cur && props.onPoint) {
      e.preventDefault();
      props.onPoint(cur.active, cur.bucket);
      return;
    } else if (e.key === 'Escape') {
      setTip(null);
      return;
    } else return;
    e.preventDefault();
    const u = c.chart;
    const j = c.order.indexOf(active);
    const v = (u.data[j + 1]?.[bucket] as number | null) ?? 0;
    const left = u.valToPos(bucket, 'x');
    const top = u.valToPos(v, u.series[j + 1]?.scale ?? 'y');
    setTip({ left, top, bucket, active });
  };

  const overOffset = () => {
    const over = chartRef.current?.chart.over;
    const wrap = plot.current;
    if (!over || !wrap) return { x: 0, y: 0 };
    const a = over.getBoundingClientRect();
    const b = wrap.getBoundingClientRect();
    return { x: a.left - b.left, y: a.top - b.top };
  };
  const tipId = `${props.label.replace(/\W+/g, '-')}-tip`;
  const visible = view.series.map((_, k) => k).filter((k) => !hidden.has(k));
  let tipBox = null;
  if (tip) {
    const off = overOffset();
    const width = plot.current?.clientWidth ?? 0;
    const x = off.x + tip.left;
    const style = { left: `${x}px`, top: `${Math.max(0, off.y + tip.top - 10)}px`, transform: x > width / 2 ? 'translate(calc(-100% - 12px), 0)' : 'translate(12px, 0)' };
    tipBox = (
      <div role="tooltip" id={tipId} class="chart-tip" style={style}>
        <div class="tip-head">{view.labels[tip.bucket]}</div>
        {visible.map((k) => (
          <div class={k === tip.active ? 'tip-row active' : 'tip-row'}>
            <span class="swatch" style={{ background: seriesStyle(k).color }} aria-hidden="true" />
            <span class="tip-name">{view.series[k].name}</span> <span class="tip-value">{exact(view.series[k].data[tip.bucket] ?? 0)}</span>
          </div>
        ))}
      </div>
    );
  }
  const totals = view.series.map((s) => (typeof s.total === 'number' ? `total ${exact(s.total)}` : ''));
  return (
    <div class="chart">
      <div class="chart-plot" ref={plot}>
        <div ref={box} class="chart-canvas" role="img" tabIndex={0} aria-label={`${props.label}. Arrow keys read the points${props.onPoint ? ', Enter shows the people behind one' : ''}.`}
          aria-describedby={tip ? tipId : undefined} onKeyDown={onKey} onBlur={() => setTip(null)} />
        {tipBox}
      </div>
      {view.series.length > 1 ? (
        <Legend hidden={hidden} onToggle={(k) => setHidden((h) => toggled(h, k))}
          items={view.series.map((s, k) => ({ name: s.name, dashed: s.range === 'comparison', note: [twoAxes && isFormula(k) ? 'right axis' : '', totals[k]].filter(Boolean).join(', ') || undefined }))} />
      ) : totals[0] ? <p class="muted small legend-note">{view.series[0].name}: {totals[0]}</p> : null}
      {view.annotations.length > 0 && (
        <ul class="annotations" aria-label="Annotations">
          {view.annotations.map((a) => {
            const i = annotationBucket(view.labels, a.date);
            return <li data-bucket={i >= 0 ? view.labels[i] : undefined}><time dateTime={a.date}>{a.date.slice(0, 10)}</time> {a.description}</li>;
          })}
        </ul>
      )}
    </div>
  );
}

/**
 * The bucket an annotation's day falls in: the last bucket starting on or before it (a week's
 * bucket is labelled with its Monday, a month's with its first day, an hour's with its hour), so
 * a note on a Wednesday is drawn on its week. -1 before the first bucket or when labels are not dates.
 */
export function annotationBucket(labels: string[], date: string): number {
  const at = Date.parse(`${date.slice(0, 10)}T00:00:00Z`);
  if (!Number.isFinite(at)) return -1;
  let found = -1;
  for (let i = 0; i < labels.length; i++) {
    const start = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(labels[i]) ? `${labels[i]}T00:00:00Z` : labels[i]);
    if (!Number.isFinite(start) || start > at) break;
    found = i;
  }
  return found;
}

/** The drawn series (by its index in the view) whose point at `idx` is closest to `top`. */
function nearest(u: uPlot, order: number[], idx: number, top: number): number {
  let best = order[0] ?? 0;
  let bestDist = Infinity;
  order.forEach((k, j) => {
    const v = u.data[j + 1]?.[idx];
    if (v === null || v === undefined) return;
    const d = Math.abs(u.valToPos(v as number, u.series[j + 1].scale ?? 'y') - top);
    if (d < bestDist) (bestDist = d), (best = k);
  });
  return best;
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
