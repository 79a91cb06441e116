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
  /** The API's total over the range (null where a total has no meaning, e.g. a formula). */
  total?: number | null;
}
export interface FunnelStepView { name: string; count: number; conversionFromPrevious: number; conversionFromStart: number; droppedCount: number; meanSecondsToConvert: number | null; medianSecondsToConvert: number | null }
/**
 * One set of funnel bars: all users, a breakdown's segment, or the previous period. `segment` is
 * set (null: users without the property) only when the query has a breakdown, since the
 * drill-down must then name it.
 */
export interface FunnelGroup { name: string; range: 'primary' | 'comparison'; segment?: string | null; steps: FunnelStepView[] }
export type View =
  | { kind: 'series'; labels: string[]; series: SeriesLine[]; annotations: Array<{ date: string; description: string }> }
  | { kind: 'funnel'; steps: FunnelStepView[]; groups: FunnelGroup[] }
  | { kind: 'retention'; rows: Array<{ cohort: string; size: number; counts: Array<number | null> }> }
  | { kind: 'flows'; paths: FlowsResult['paths']; total: number };

export function toView(type: ReportType | 'sessions' | 'trend' | 'funnel', result: unknown, opts: { retentionUnit?: 'day' | 'week'; now?: number } = {}): View {
  const r = result as any;
  if (r && r.kind === 'trend') return trendView(r as TrendResult);
  if (r && r.kind === 'funnel') return irFunnelView(r as IrFunnelResult);
  if (type === 'funnel' && Array.isArray(r)) {
    const steps = (r as FunnelStep[]).map((s) => ({ ...s, name: s.event }));
    const segments = segmentGroups(steps.map((s) => ({ name: s.name, segments: s.segments.map((g) => ({ segment: g.name, count: g.count, conversionFromStart: g.conversionFromStart })) })), 'primary', '');
    return { kind: 'funnel', steps, groups: segments.length ? segments.map((g) => ({ ...g, segment: undefined })) : [{ name: '', range: 'primary', steps }] };
  }
  if (type === 'retention' && Array.isArray(r)) return retentionView(r as RetentionRow[], opts.retentionUnit, opts.now ?? Date.now());
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
        // The series' total over the range (an answer cached before the API gave it has none).
        return { name: x.name, data: s.buckets.map((b) => byBucket.get(b) ?? 0), ...(typeof x.total === 'number' ? { total: x.total } : {}) };
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
      data: s.data, metricId: s.metricId, segment: s.segment, range: s.range, total: s.total,
    })),
  };
}

/**
 * Retention with the periods a cohort has not reached yet left empty (null), so the newest
 * cohorts' later buckets do not read as 0 % (churn). Bucket i of a cohort starts i units after
 * the cohort's day; the unit is the query's, else read off the cohorts' spacing.
 */
function retentionView(rows: RetentionRow[], unit: 'day' | 'week' | undefined, now: number): View {
  const dayMs = 86400_000;
  const start = (c: string) => Date.parse(`${c.slice(0, 10)}T00:00:00Z`);
  const spacing = rows.length > 1 ? Math.abs(start(rows[1].cohort) - start(rows[0].cohort)) : dayMs;
  const step = (unit ?? (spacing >= 7 * dayMs ? 'week' : 'day')) === 'week' ? 7 * dayMs : dayMs;
  const today = Math.floor(now / dayMs) * dayMs;
  return {
    kind: 'retention',
    rows: rows.map((r) => {
      const born = start(r.cohort);
      return { ...r, counts: r.counts.map((c, i) => (Number.isFinite(born) && born + i * step > today ? null : c)) };
    }),
  };
}

type StepWithSegments = { name: string; segments: Array<{ segment: string | null; count: number; conversionFromStart: number }> };

/** One group per breakdown segment (in the order of the first step), its steps from each step's segment figures. */
function segmentGroups(steps: StepWithSegments[], range: 'primary' | 'comparison', suffix: string): FunnelGroup[] {
  const keys: Array<string | null> = [];
  for (const s of steps) for (const g of s.segments) if (!keys.includes(g.segment)) keys.push(g.segment);
  return keys.map((segment) => {
    let prev = 0;
    const list = steps.map((s, i) => {
      const g = s.segments.find((x) => x.segment === segment);
      const count = g?.count ?? 0;
      const step: FunnelStepView = {
        name: s.name, count, conversionFromStart: g?.conversionFromStart ?? 0,
        conversionFromPrevious: i === 0 ? 1 : prev ? count / prev : 0, droppedCount: i === 0 ? 0 : Math.max(0, prev - count),
        // The API gives times to convert for all users only.
        meanSecondsToConvert: null, medianSecondsToConvert: null,
      };
      prev = count;
      return step;
    });
    return { name: (segment ?? '(none)') + suffix, range, segment, steps: list };
  });
}

function irFunnelView(r: IrFunnelResult): View {
  const steps = (list: IrFunnelResult['steps']) => list.map((s) => ({ ...s, name: s.name || s.event }));
  const hasBreakdown = r.steps.some((s) => s.segments.length > 0);
  const groupsOf = (list: IrFunnelResult['steps'], range: 'primary' | 'comparison'): FunnelGroup[] => {
    const suffix = range === 'comparison' ? ' (previous period)' : '';
    if (hasBreakdown) return segmentGroups(steps(list), range, suffix);
    return [{ name: range === 'comparison' ? 'Previous period' : r.comparison ? 'This period' : '', range, steps: steps(list) }];
  };
  return { kind: 'funnel', steps: steps(r.steps), groups: [...groupsOf(r.steps, 'primary'), ...(r.comparison ? groupsOf(r.comparison.steps, 'comparison') : [])] };
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
export interface TableData { columns: string[]; rows: Array<Array<string | number>>; footer?: Array<string | number> }
export function toTable(view: View): TableData {
  switch (view.kind) {
    case 'series':
      return {
        columns: ['Bucket', ...view.series.map((s) => s.name)], rows: view.labels.map((b, i) => [b, ...view.series.map((s) => s.data[i] ?? 0)]),
        ...(view.series.some((s) => typeof s.total === 'number') ? { footer: ['Total', ...view.series.map((s) => (typeof s.total === 'number' ? s.total : '–'))] } : {}),
      };
    case 'funnel': {
      const cells = (s: FunnelStepView) => [s.count, pct(s.conversionFromPrevious), pct(s.conversionFromStart), s.droppedCount, duration(s.medianSecondsToConvert), duration(s.meanSecondsToConvert)];
      const after = ['Users', 'Conversion from previous', 'Conversion from start', 'Dropped', 'Median time to convert', 'Mean time to convert'];
      if (view.groups.length <= 1) return { columns: ['Step', ...after], rows: view.steps.map((s, i) => [`${i + 1}. ${s.name}`, ...cells(s)]) };
      // A breakdown or a comparison: one row per step and group.
      return { columns: ['Step', 'Series', ...after], rows: view.steps.flatMap((s, i) => view.groups.map((g) => [`${i + 1}. ${s.name}`, g.name, ...cells(g.steps[i])])) };
    }
    case 'retention': {
      const n = Math.max(0, ...view.rows.map((r) => r.counts.length));
      // A period not reached yet stays an empty cell.
      return { columns: ['Cohort', 'Size', ...Array.from({ length: n }, (_, i) => `Bucket ${i}`)], rows: view.rows.map((r) => [r.cohort, r.size, ...Array.from({ length: n }, (_, i) => r.counts[i] ?? '')]) };
    }
    case 'flows':
      return { columns: ['Path', 'Users', 'Share'], rows: view.paths.map((p) => [p.path.join(' → '), p.count, view.total ? pct(p.count / view.total) : '–']) };
  }
}

export function toCsv(table: TableData): string {
  const cell = (v: string | number) => {
    const s = String(v);
    // A leading =, +, - or @ would run as a formula in a spreadsheet.
    const safe = /^[=+\-@]/.test(s) && typeof v === 'string' ? `'${s}` : s;
    return /[",\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  return [table.columns, ...table.rows, ...(table.footer ? [table.footer] : [])].map((r) => r.map(cell).join(',')).join('\n') + '\n';
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
