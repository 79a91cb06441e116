import type { FlowsResult, FunnelStep, IrFunnelResult, ReportType, RetentionRow, SegmentationResult, SessionsResult, TrendResult } from '../types.js';

/**
 * Every analysis answer, whichever endpoint produced it (IR trend/funnel, v0 segmentation,
 * funnel, retention, flows, sessions, metric), turned into one of four views. The chart and the
 * table of a card or an insight are both drawn from the same view, so they show the same numbers.
 */
export interface SeriesLine {
  name: string;
  data: number[];
  metricId?: string;
  segment?: string | null;
  range?: 'primary' | 'comparison';
}
export type View =
  | { kind: 'series'; labels: string[]; series: SeriesLine[]; annotations: Array<{ date: string; description: string }> }
  | { kind: 'funnel'; steps: Array<{ name: string; count: number; conversionFromPrevious: number; conversionFromStart: number; droppedCount: number; meanSecondsToConvert: number | null; medianSecondsToConvert: number | null }>; comparison?: View & { kind: 'funnel' } }
  | { kind: 'retention'; rows: RetentionRow[] }
  | { kind: 'flows'; paths: FlowsResult['paths']; total: number };

export function toView(type: ReportType | 'sessions' | 'trend' | 'funnel', result: unknown): View {
  const r = result as any;
  if (r && r.kind === 'trend') return trendView(r as TrendResult);
  if (r && r.kind === 'funnel') return irFunnelView(r as IrFunnelResult);
  if (type === 'funnel' && Array.isArray(r)) return { kind: 'funnel', steps: (r as FunnelStep[]).map((s) => ({ ...s, name: s.event })) };
  if (type === 'retention' && Array.isArray(r)) return { kind: 'retention', rows: r as RetentionRow[] };
  if (type === 'flows' && r && Array.isArray(r.paths)) return { kind: 'flows', paths: r.paths, total: r.total };
  if (type === 'sessions' && r && Array.isArray(r.series)) {
    const s = r as SessionsResult;
    return {
      kind: 'series', labels: s.series.map((b) => b.bucket), annotations: [],
      series: [{ name: 'Sessions', data: s.series.map((b) => b.sessions) }, { name: 'Average duration (s)', data: s.series.map((b) => Math.round(b.avgDurationSec)) }],
    };
  }
  if (r && Array.isArray(r.buckets) && Array.isArray(r.series)) {
    const s = r as SegmentationResult;
    return {
      kind: 'series', labels: s.buckets, annotations: s.annotations ?? [],
      series: s.series.map((x) => {
        const byBucket = new Map(x.data.map((d) => [d.bucket, d.value]));
        return { name: x.name, data: s.buckets.map((b) => byBucket.get(b) ?? 0) };
      }),
    };
  }
  throw new Error('This answer has a shape the console cannot draw.');
}

function trendView(r: TrendResult): View {
  return {
    kind: 'series',
    labels: r.buckets,
    annotations: r.annotations,
    series: r.series.map((s) => ({
      name: [s.name, s.segment ?? undefined].filter(Boolean).join(' · ') + (s.range === 'comparison' ? ' (previous period)' : ''),
      data: s.data, metricId: s.metricId, segment: s.segment, range: s.range,
    })),
  };
}

function irFunnelView(r: IrFunnelResult): View {
  const steps = (list: IrFunnelResult['steps']) => list.map((s) => ({ ...s, name: s.name || s.event }));
  return { kind: 'funnel', steps: steps(r.steps), comparison: r.comparison ? { kind: 'funnel', steps: steps(r.comparison.steps) } : undefined };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
export const duration = (s: number | null) => {
  if (s === null || !Number.isFinite(s)) return '–';
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86400).toFixed(1)} d`;
};

/** The table of a view: header row and body rows (numbers stay numbers for CSV). */
export function toTable(view: View): { columns: string[]; rows: Array<Array<string | number>> } {
  switch (view.kind) {
    case 'series':
      return { columns: ['Bucket', ...view.series.map((s) => s.name)], rows: view.labels.map((b, i) => [b, ...view.series.map((s) => s.data[i] ?? 0)]) };
    case 'funnel':
      return {
        columns: ['Step', 'Users', 'Conversion from previous', 'Conversion from start', 'Dropped', 'Median time to convert', 'Mean time to convert'],
        rows: view.steps.map((s, i) => [`${i + 1}. ${s.name}`, s.count, pct(s.conversionFromPrevious), pct(s.conversionFromStart), s.droppedCount, duration(s.medianSecondsToConvert), duration(s.meanSecondsToConvert)]),
      };
    case 'retention': {
      const n = Math.max(0, ...view.rows.map((r) => r.counts.length));
      return { columns: ['Cohort', 'Size', ...Array.from({ length: n }, (_, i) => `Bucket ${i}`)], rows: view.rows.map((r) => [r.cohort, r.size, ...Array.from({ length: n }, (_, i) => r.counts[i] ?? 0)]) };
    }
    case 'flows':
      return { columns: ['Path', 'Users', 'Share'], rows: view.paths.map((p) => [p.path.join(' → '), p.count, view.total ? pct(p.count / view.total) : '–']) };
  }
}

export function toCsv(table: { columns: string[]; rows: Array<Array<string | number>> }): string {
  const cell = (v: string | number) => {
    const s = String(v);
    // A leading =, +, - or @ would run as a formula in a spreadsheet.
    const safe = /^[=+\-@]/.test(s) && typeof v === 'string' ? `'${s}` : s;
    return /[",\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  return [table.columns, ...table.rows].map((r) => r.map(cell).join(',')).join('\n') + '\n';
}

export function download(name: string, text: string, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
