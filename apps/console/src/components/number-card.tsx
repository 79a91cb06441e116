import { exact } from './legend.js';
import type { FunnelGroup, View } from './view.js';

/** One figure of a number card: what it counts, its value, and the previous period's when the report compares. */
export interface Figure { name: string; value: number | null; previous?: number | null; unit?: '%'; note?: string }

/**
 * The figures a view shows as a number: each series' total over the range (the API's `total`,
 * else none where a total has no meaning, as for a formula), each funnel group's conversion from
 * the first step to the last. A series or group of the previous period is not a figure of its own
 * but the `previous` of the one it compares to. Null for views without such a figure (retention, flows).
 */
export function figuresOf(view: View): Figure[] | null {
  if (view.kind === 'series') {
    const current = view.series.filter((s) => s.range !== 'comparison');
    return current.map((s) => {
      const prev = view.series.find((p) => p.range === 'comparison' && p.metricId === s.metricId && (p.segment ?? null) === (s.segment ?? null));
      // An answer without totals (a v0 segmentation cached before the API gave them) shows the sum
      // of its buckets, and says so: for unique users that counts a person once per bucket.
      const total = (x: typeof s) => (typeof x.total === 'number' ? x.total : x.total === null ? null : x.data.reduce((a, v) => a + (v ?? 0), 0));
      return { name: s.name, value: total(s), ...(s.total === undefined ? { note: 'sum of the buckets' } : {}), ...(prev ? { previous: total(prev) } : {}) };
    });
  }
  if (view.kind === 'funnel') {
    const current = view.groups.filter((g) => g.range === 'primary');
    return current.map((g, i) => {
      const prev = view.groups.filter((p) => p.range === 'comparison')[i];
      const rate = (x: FunnelGroup) => (x.steps.length ? x.steps[x.steps.length - 1].conversionFromStart * 100 : null);
      return { name: g.name || 'Conversion', value: rate(g), unit: '%', ...(prev ? { previous: rate(prev) } : {}) };
    });
  }
  return null;
}

const show = (v: number | null, unit?: '%') => (v === null ? '–' : unit ? `${v.toFixed(1)}%` : exact(v));

/** The change from the previous period as words: "+12.5% vs previous period (1,024)". */
export function changeText(f: Figure): string | null {
  if (f.previous === undefined) return null;
  const before = `previous period ${show(f.previous ?? null, f.unit)}`;
  if (f.value === null || f.previous === null || f.previous === undefined) return before;
  if (f.unit === '%') {
    const d = f.value - f.previous;
    return `${d >= 0 ? '+' : '−'}${Math.abs(d).toFixed(1)} points vs ${before}`;
  }
  if (f.previous === 0) return f.value === 0 ? `no change vs ${before}` : `up from 0 vs ${before}`;
  const pct = ((f.value - f.previous) / f.previous) * 100;
  return `${pct >= 0 ? '+' : '−'}${Math.abs(pct).toFixed(1)}% vs ${before}`;
}

/**
 * A report as big numbers (a board's number card): one figure per series (or funnel group), its
 * value over the card's range and, when the report compares, the change from the previous period.
 */
export function NumberCard(props: { view: View; title: string }) {
  const figures = figuresOf(props.view);
  if (!figures) return <p class="muted">This report has no single number; choose Show as chart or Show as table.</p>;
  if (figures.length === 0) return <p class="muted">No data in this range.</p>;
  return (
    <ul class={`number-card${figures.length > 1 ? ' several' : ''}`} aria-label={`${props.title}: number`}>
      {figures.map((f) => {
        const change = changeText(f);
        const dir = f.value !== null && typeof f.previous === 'number' ? Math.sign(f.value - f.previous) : 0;
        return (
          <li>
            <span class="figure-value">{show(f.value, f.unit)}</span>
            <span class="figure-name">{f.name}{f.note ? ` (${f.note})` : ''}</span>
            {change && <span class={`figure-change${dir > 0 ? ' up' : dir < 0 ? ' down' : ''}`}>{change}</span>}
          </li>
        );
      })}
    </ul>
  );
}
