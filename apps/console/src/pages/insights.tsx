import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { useShell } from '../context.js';
import { Link, navigate } from '../router.js';
import { RangePicker } from '../components/range-picker.js';
import { FiltersEditor } from '../components/filters-editor.js';
import { ResultChart, ResultTable } from '../components/result.js';
import { download, toCsv, toTable, toView, type FunnelGroup, type View } from '../components/view.js';
import { personHref } from '../links.js';
import { INTERNAL_PROPERTIES, unknownName } from '../components/names.js';
import type { SeriesKind } from '../components/series-chart.js';
import type {
  BoardListItem, Cohort, DateRangeSpec, DrilldownPage, DrilldownSelection, LexiconEvent, LexiconProperty, PropertyFilter, QueryV2, ReportType, SavedReport,
} from '../types.js';
import { SaveAsCohort } from './people/save-as-cohort.js';
import { CohortBreakdown, CohortFilters, MAX_QUERY_COHORTS, type CohortFilterDraft } from '../components/cohort-pickers.js';

type Kind = 'trend' | 'funnel' | 'retention' | 'flows' | 'sessions';
type Agg = 'count' | 'unique' | 'sum' | 'avg' | 'min' | 'max' | 'p50' | 'p90' | 'p99';
interface MetricDraft { event: string; agg: Agg; property: string }
interface Draft {
  kind: Kind;
  dateRange: DateRangeSpec;
  metrics: MetricDraft[];
  filters: PropertyFilter[];
  breakdown: string;
  /** Trends: up to two more breakdown properties (segments are combinations, "fr / chrome"). */
  thenBy: string[];
  /** "In cohort" / "not in cohort" filters (trends and funnels). */
  cohortFilters: CohortFilterDraft[];
  /** Breakdown by cohorts (instead of a property): one segment per cohort, and "Not in any cohort" when asked. */
  cohorts: number[];
  notInAny: boolean;
  formula: string;
  compare: boolean;
  unit: 'hour' | 'day' | 'week' | 'month';
  chart: SeriesKind;
  windowDays: number;
  retentionUnit: 'day' | 'week';
  retentionBuckets: number;
  flowsDirection: 'after' | 'before';
  flowsSteps: number;
}

const LETTERS = ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J'] as const;
const KINDS: Array<[Kind, string]> = [['trend', 'Trends'], ['funnel', 'Funnel'], ['retention', 'Retention'], ['flows', 'Flows'], ['sessions', 'Sessions']];
const AGGS: Array<[Agg, string]> = [['count', 'Total events'], ['unique', 'Unique users'], ['sum', 'Sum of'], ['avg', 'Average of'], ['min', 'Minimum of'], ['max', 'Maximum of'], ['p50', 'Median of'], ['p90', '90th percentile of'], ['p99', '99th percentile of']];

const blank = (): Draft => ({
  kind: 'trend', dateRange: { kind: 'preset', preset: '30d' }, metrics: [{ event: '', agg: 'count', property: '' }], filters: [], breakdown: '', thenBy: [], cohortFilters: [], cohorts: [], notInAny: false, formula: '',
  compare: false, unit: 'day', chart: 'line', windowDays: 30, retentionUnit: 'week', retentionBuckets: 8, flowsDirection: 'after', flowsSteps: 3,
});

/** The days a range covers, for the v0 endpoints (retention, flows, sessions) that take dates. */
export function rangeDays(r: DateRangeSpec, now = new Date()): { from: string; to: string } {
  if (r.kind === 'absolute') return { from: r.from, to: r.to };
  const day = (d: Date) => d.toISOString().slice(0, 10);
  const back = (days: number) => new Date(now.getTime() - days * 86400_000);
  const months = (m: number) => { const d = new Date(now); d.setUTCMonth(d.getUTCMonth() - m); return d; };
  switch (r.preset) {
    case 'today': return { from: day(now), to: day(now) };
    case 'yesterday': return { from: day(back(1)), to: day(back(1)) };
    case '7d': return { from: day(back(6)), to: day(now) };
    case '30d': return { from: day(back(29)), to: day(now) };
    case '3m': return { from: day(months(3)), to: day(now) };
    case '6m': return { from: day(months(6)), to: day(now) };
    case '12m': return { from: day(months(12)), to: day(now) };
  }
}

/** A trend's further breakdown properties, those filled in. */
function thenByOf(d: Draft): { thenBy?: string[] } {
  const more = d.kind === 'trend' ? d.thenBy.map((p) => p.trim()).filter(Boolean) : [];
  return more.length ? { thenBy: more } : {};
}

/** The draft as an IR document (trend and funnel). */
function toIr(d: Draft): QueryV2 {
  const metrics = d.metrics.map((m, i) => ({
    id: LETTERS[i], kind: 'event' as const, event: m.event.trim(),
    aggregation: m.agg === 'count' || m.agg === 'unique' ? { op: m.agg } : { op: m.agg, property: m.property.trim() },
  }));
  const base = {
    v: 2 as const, dateRange: d.dateRange, metrics: metrics as QueryV2['metrics'],
    ...(d.filters.length || d.cohortFilters.length ? { filters: [...d.filters, ...d.cohortFilters] } : {}),
    ...(d.cohorts.length ? { breakdown: { cohorts: d.cohorts, notInAny: d.notInAny } }
      : d.breakdown.trim() ? { breakdown: { property: d.breakdown.trim(), ...thenByOf(d), limit: 10 } } : {}),
  };
  const compare = d.compare ? { compare: { kind: 'previous_period' as const } } : {};
  if (d.kind === 'funnel') {
    return { ...base, analysis: { kind: 'funnel', steps: metrics.map((m) => m.id), window: { value: d.windowDays, unit: 'day' }, order: 'ordered', chart: 'steps', ...compare } } as QueryV2;
  }
  return { ...base, analysis: { kind: 'trend', unit: d.unit, chart: d.chart === 'stacked' ? 'area' : d.chart, ...(d.formula.trim() ? { formula: d.formula.trim() } : {}), ...compare } } as QueryV2;
}

/** The v0 body of retention, flows and sessions (sessions' dates resolved now; retention and flows keep a preset as `dateRange`, so a saved report rolls). */
function toV0(d: Draft): Record<string, unknown> {
  const days = rangeDays(d.dateRange);
  const range = d.dateRange.kind === 'preset' ? { dateRange: d.dateRange } : days;
  if (d.kind === 'retention') return { bornEvent: d.metrics[0]?.event.trim() || '$all_events', returnEvent: (d.metrics[1]?.event ?? d.metrics[0]?.event ?? '').trim() || '$all_events', ...range, unit: d.retentionUnit, buckets: d.retentionBuckets };
  if (d.kind === 'flows') return { event: d.metrics[0]?.event.trim() ?? '', direction: d.flowsDirection, steps: d.flowsSteps, ...range, limit: 20 };
  return { ...days, unit: d.unit };
}

const REPORT_TYPE: Record<Kind, ReportType | null> = { trend: 'segmentation', funnel: 'funnel', retention: 'retention', flows: 'flows', sessions: null };

/** A saved report back into a draft (IR documents and the v0 bodies the console saves). */
function fromReport(r: SavedReport): Draft {
  const d = blank();
  const q = ((r.queryV1 ?? r.query) as any) ?? {};
  if (q.v) {
    d.dateRange = q.dateRange ?? d.dateRange;
    d.filters = (q.filters ?? []).filter((f: any) => !('cohort' in f));
    d.cohortFilters = (q.filters ?? []).filter((f: any) => 'cohort' in f);
    d.cohorts = q.breakdown?.cohorts ?? [];
    d.notInAny = !!q.breakdown?.notInAny;
    d.breakdown = q.breakdown?.property ?? '';
    d.thenBy = q.breakdown?.thenBy ?? [];
    d.metrics = (q.metrics ?? []).filter((m: any) => m.kind === 'event').map((m: any) => ({ event: m.event, agg: m.aggregation?.op ?? 'count', property: m.aggregation?.property ?? '' }));
    const a = q.analysis ?? {};
    if (a.kind === 'funnel') {
      d.kind = 'funnel';
      d.windowDays = a.window ? a.window.value * (a.window.unit === 'week' ? 7 : 1) : 30;
      const byId = new Map<string, MetricDraft>((q.metrics ?? []).map((m: any, i: number) => [m.id, d.metrics[i]]));
      d.metrics = (a.steps ?? []).map((id: string) => byId.get(id)).filter(Boolean);
    } else if (a.kind === 'trend') {
      d.kind = 'trend';
      d.unit = a.unit ?? 'day';
      d.chart = a.chart === 'bar' || a.chart === 'number' ? 'bar' : a.chart === 'area' ? 'stacked' : 'line';
      d.formula = a.formula ?? '';
    } else if (a.kind === 'retention') {
      Object.assign(d, { kind: 'retention', retentionUnit: a.unit ?? 'week', retentionBuckets: a.buckets ?? 8 });
    } else if (a.kind === 'flows') {
      Object.assign(d, { kind: 'flows', flowsDirection: a.direction ?? 'after', flowsSteps: a.steps ?? 3 });
    }
    d.compare = !!a.compare;
  } else {
    const abs = q.from && q.to ? { kind: 'absolute' as const, from: String(q.from).slice(0, 10), to: String(q.to).slice(0, 10) } : d.dateRange;
    d.dateRange = abs;
    if (r.type === 'retention') Object.assign(d, { kind: 'retention', metrics: [{ event: q.bornEvent, agg: 'unique', property: '' }, { event: q.returnEvent, agg: 'unique', property: '' }], retentionUnit: q.unit ?? 'week', retentionBuckets: q.buckets ?? 8 });
    else if (r.type === 'flows') Object.assign(d, { kind: 'flows', metrics: [{ event: q.event, agg: 'unique', property: '' }], flowsDirection: q.direction ?? 'after', flowsSteps: q.steps ?? 3 });
    else if (r.type === 'funnel') Object.assign(d, { kind: 'funnel', metrics: (q.steps ?? []).map((e: string) => ({ event: e, agg: 'unique', property: '' })), windowDays: q.windowDays ?? 30, filters: q.filters ?? [], breakdown: q.breakdown ?? '' });
    else if (r.type === 'segmentation') Object.assign(d, { kind: 'trend', metrics: [{ event: q.event, agg: q.type === 'unique' ? 'unique' : 'count', property: '' }], unit: q.unit ?? 'day', filters: q.filters ?? [], breakdown: (Array.isArray(q.breakdown) ? q.breakdown[0] : q.breakdown) ?? '', thenBy: Array.isArray(q.breakdown) ? q.breakdown.slice(1) : [] });
  }
  if (d.metrics.length === 0) d.metrics = [{ event: '', agg: 'count', property: '' }];
  return d;
}

interface Ran { view: View; ir?: QueryV2; warnings: string[] }

/**
 * Insights: trends and funnels on the Query IR (POST /api/query), retention, flows and sessions on
 * their endpoints; pickers fed by the lexicon; drill-down from a point or a step; save as a report
 * and add to a board.
 */
export function InsightsPage(props: { projectId: string; reportId?: string }) {
  const { canWrite } = useShell();
  const [draft, setDraft] = useState<Draft>(blank);
  const [report, setReport] = useState<SavedReport | null>(null);
  const [name, setName] = useState('');
  const [ran, setRan] = useState<Ran | null>(null);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [showTable, setShowTable] = useState(false);
  const [events, setEvents] = useState<LexiconEvent[]>([]);
  const [props_, setProps] = useState<LexiconProperty[]>([]);
  const [boards, setBoards] = useState<BoardListItem[]>([]);
  const [cohorts, setCohorts] = useState<Cohort[]>([]);
  const [boardId, setBoardId] = useState('');
  const [people, setPeople] = useState<{ title: string; page: DrilldownPage; selection: DrilldownSelection } | null>(null);

  useEffect(() => {
    document.title = `Insights · Tally`;
    // Hidden names are known (a saved report may use one) but not offered in the pickers.
    api.lexiconEvents(props.projectId).then(setEvents, () => {});
    api.lexiconProperties(props.projectId).then((p) => setProps(p.filter((x) => !INTERNAL_PROPERTIES.has(x.key))), () => {});
    api.boards(props.projectId).then((b) => { setBoards(b); if (b[0]) setBoardId(String(b[0].id)); }, () => {});
    api.cohorts(props.projectId).then(setCohorts, () => {});
    if (props.reportId) {
      api.report(props.reportId).then(
        (r) => {
          setReport(r);
          setName(r.name);
          document.title = `${r.name} · Tally`;
          const d = fromReport(r);
          setDraft(d);
          void run(d);
        },
        (e: ApiError) => setError(e.status === 404 ? 'This report does not exist, or is in another organisation.' : e.message),
      );
    }
  }, [props.projectId, props.reportId]);

  const patch = (p: Partial<Draft>) => setDraft((d) => ({ ...d, ...p }));
  const setMetric = (i: number, p: Partial<MetricDraft>) => setDraft((d) => ({ ...d, metrics: d.metrics.map((m, j) => (j === i ? { ...m, ...p } : m)) }));

  const run = async (d = draft) => {
    setRunning(true);
    setError(null);
    setPeople(null);
    try {
      if (d.metrics.some((m) => !m.event.trim()) && d.kind !== 'sessions') throw new Error('Choose an event for every metric.');
      // A name no data has would draw a silent zero: refuse it with the closest known names.
      const unknown = problemsOf(d);
      if (unknown.length) throw new Error(unknown.join(' '));
      if (d.kind === 'trend' || d.kind === 'funnel') {
        if (d.kind === 'funnel' && d.metrics.length < 2) throw new Error('A funnel needs at least two steps.');
        const ir = toIr(d);
        const out = await api.query(props.projectId, ir);
        setRan({ view: toView(d.kind, out), ir, warnings: (out as any).warnings ?? [] });
      } else {
        const out = await api.v0<unknown>(d.kind, props.projectId, toV0(d));
        setRan({ view: toView(d.kind, out, { retentionUnit: d.retentionUnit }), warnings: [] });
      }
    } catch (e) {
      setRan(null);
      setError((e as Error).message);
    } finally {
      setRunning(false);
    }
  };

  const save = async (asNew: boolean): Promise<SavedReport | null> => {
    const type = REPORT_TYPE[draft.kind];
    if (!type) { setError('Sessions cannot be saved as a report.'); return null; }
    if (!name.trim()) { setError('Name the report to save it.'); return null; }
    const query = draft.kind === 'trend' || draft.kind === 'funnel' ? (toIr(draft) as unknown as Record<string, unknown>) : toV0(draft);
    try {
      const saved = report && !asNew
        ? await api.updateReport(report.id, { name: name.trim(), type, query })
        : await api.createReport(props.projectId, { name: name.trim(), type, query });
      setReport(saved);
      setNotice(`Saved "${saved.name}".`);
      if (!report || asNew) navigate(`/projects/${props.projectId}/reports/${saved.id}`, { replace: !report });
      return saved;
    } catch (e) {
      setError((e as Error).message);
      return null;
    }
  };

  const addToBoard = async () => {
    const r = report ?? (await save(false));
    if (!r || !boardId) return;
    try {
      const b = await api.board(boardId);
      const cards = [...b.cards].sort((x, y) => x.position - y.position).map((c, i) => (c.card_type === 'report'
        ? { cardType: 'report' as const, reportId: c.report_id, position: i, span: c.span as 4 | 6 | 8 | 12, height: c.height, display: c.display }
        : { cardType: 'text' as const, text: c.text, position: i, span: c.span as 4 | 6 | 8 | 12, height: c.height, display: 'chart' as const }));
      await api.updateBoard(b.id, { cards: [...cards, { cardType: 'report', reportId: r.id, position: cards.length, span: 6, height: 'medium', display: 'chart' }] });
      setNotice(`Added to board "${b.name}".`);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  const drill = async (selection: DrilldownSelection, title: string) => {
    if (!ran?.ir) return;
    try {
      const page = await api.drilldown(props.projectId, ran.ir, selection, { limit: 100, offset: 0 });
      setPeople({ title, page, selection });
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const onPoint = (s: number, bucket: number) => {
    if (!ran || ran.view.kind !== 'series' || !ran.ir) return;
    const line = ran.view.series[s];
    if (!line.metricId || line.metricId === 'formula') return;
    // With a breakdown the API needs the segment, null (no value) included.
    void drill({ kind: 'trend', metricId: line.metricId as any, bucket, range: line.range ?? 'primary', ...(ran.ir.breakdown ? { segment: line.segment ?? null } : {}) }, `${line.name} · ${ran.view.labels[bucket]}`);
  };
  const onStep = (step: number, mode: 'reached' | 'dropped', group: FunnelGroup) => {
    if (!ran || ran.view.kind !== 'funnel') return;
    const who = group.name ? ` (${group.name})` : '';
    void drill({ kind: 'funnel', step, mode, range: group.range, ...(ran.ir?.breakdown ? { segment: group.segment ?? null } : {}) }, `${mode === 'reached' ? 'Reached' : 'Dropped before'} step ${step + 1}: ${ran.view.steps[step].name}${who}`);
  };

  const eventNames = useMemo(() => events.map((e) => e.name), [events]);
  const keys = useMemo(() => props_.map((p) => p.key), [props_]);
  /** The property keys the pickers offer: the lexicon's hidden ones left out. */
  const shownKeys = useMemo(() => props_.filter((p) => !p.hidden).map((p) => p.key), [props_]);
  /** Every event and property of the draft that no data has, as the builder says it. */
  function problemsOf(d: Draft): string[] {
    if (d.kind === 'sessions') return [];
    const out = d.metrics.map((m) => unknownName('event', m.event, eventNames));
    if (d.kind === 'trend') out.push(...d.metrics.map((m) => (m.agg === 'count' || m.agg === 'unique' ? null : unknownName('property', m.property, keys))));
    if (d.kind === 'trend' || d.kind === 'funnel') out.push(unknownName('property', d.breakdown, keys), ...d.filters.map((f) => unknownName('property', f.key, keys)));
    return out.filter((x): x is string => !!x);
  }
  const values = (key: string) => props_.find((p) => p.key === key)?.sampleValues ?? [];
  const title = name.trim() || 'New insight';
  const d = draft;
  /** Distinct cohorts the draft names (the API takes at most 10 in one query). */
  const cohortsNamed = new Set([...d.cohortFilters.map((f) => f.cohort), ...d.cohorts]).size;
  const maxMetrics = d.kind === 'trend' || d.kind === 'funnel' ? 10 : d.kind === 'retention' ? 2 : d.kind === 'flows' ? 1 : 0;
  const metricLabel = (i: number) => (d.kind === 'funnel' ? `Step ${i + 1}` : d.kind === 'retention' ? (i === 0 ? 'First event' : 'Returning event') : d.kind === 'flows' ? 'Anchor event' : `Metric ${LETTERS[i]}`);

  return (
    <section class="page">
      <div class="page-head">
        <h1>{report ? report.name : 'New insight'}</h1>
        <div class="tabs" role="group" aria-label="Analysis">
          {KINDS.map(([k, l]) => (
            <button type="button" aria-pressed={d.kind === k} onClick={() => {
              const metrics = k === 'funnel' && d.metrics.length < 2 ? [...d.metrics, { event: '', agg: 'unique' as Agg, property: '' }] : k === 'retention' && d.metrics.length < 2 ? [...d.metrics, { event: d.metrics[0]?.event ?? '', agg: 'unique' as Agg, property: '' }] : d.metrics;
              patch({ kind: k, metrics: metrics.slice(0, k === 'retention' ? 2 : k === 'flows' ? 1 : 10) });
              setRan(null);
            }}>{l}</button>
          ))}
        </div>
      </div>
      <div class="builder">
        <aside aria-label="Query">
          <datalist id="event-names">{events.filter((e) => !e.hidden).map((e) => <option value={e.name} />)}</datalist>
          <datalist id="property-keys">{shownKeys.map((k) => <option value={k} />)}</datalist>
          <RangePicker id="insight-range" value={d.dateRange} onChange={(r) => r && patch({ dateRange: r })} />
          {maxMetrics > 0 && (
            <fieldset>
              <legend>{d.kind === 'funnel' ? 'Steps' : d.kind === 'trend' ? 'Metrics' : 'Events'}</legend>
              {d.metrics.map((m, i) => (
                <div class="metric">
                  <span class="letter" aria-hidden="true">{d.kind === 'funnel' ? i + 1 : LETTERS[i]}</span>
                  <label for={`metric-${i}`} class="sr-only">{metricLabel(i)}</label>
                  <input id={`metric-${i}`} list="event-names" placeholder="event" value={m.event} aria-label={metricLabel(i)} onInput={(e) => setMetric(i, { event: (e.target as HTMLInputElement).value })}
                    aria-invalid={unknownName('event', m.event, eventNames) ? true : undefined} aria-describedby={unknownName('event', m.event, eventNames) ? `metric-${i}-hint` : undefined} />
                  {unknownName('event', m.event, eventNames) && <p id={`metric-${i}-hint`} class="hint warn">{unknownName('event', m.event, eventNames)}</p>}
                  {d.kind === 'trend' && (
                    <>
                      <label for={`agg-${i}`} class="sr-only">Measure for {metricLabel(i)}</label>
                      <select id={`agg-${i}`} value={m.agg} onChange={(e) => setMetric(i, { agg: (e.target as HTMLSelectElement).value as Agg })}>
                        {AGGS.map(([k, l]) => <option value={k}>{l}</option>)}
                      </select>
                      {m.agg !== 'count' && m.agg !== 'unique' && (
                        <>
                          <label for={`agg-prop-${i}`} class="sr-only">Property for {metricLabel(i)}</label>
                          <input id={`agg-prop-${i}`} list="property-keys" placeholder="numeric property" value={m.property} onInput={(e) => setMetric(i, { property: (e.target as HTMLInputElement).value })} />
                        </>
                      )}
                    </>
                  )}
                  {d.metrics.length > (d.kind === 'funnel' ? 2 : 1) && d.kind !== 'retention' && (
                    <button type="button" class="icon" aria-label={`Remove ${metricLabel(i)}`} onClick={() => patch({ metrics: d.metrics.filter((_, j) => j !== i) })}>×</button>
                  )}
                </div>
              ))}
              {d.metrics.length < maxMetrics && (
                <button type="button" onClick={() => patch({ metrics: [...d.metrics, { event: '', agg: d.kind === 'funnel' ? 'unique' : 'count', property: '' }] })}>
                  {d.kind === 'funnel' ? 'Add step' : 'Add metric'}
                </button>
              )}
            </fieldset>
          )}
          {(d.kind === 'trend' || d.kind === 'funnel') && (
            <>
              <FiltersEditor id="insight-filters" value={d.filters} onChange={(f) => patch({ filters: f })} keys={shownKeys} known={keys} values={values} checkNames />
              <CohortFilters id="insight-cohort-filters" cohorts={cohorts} value={d.cohortFilters} onChange={(f) => patch({ cohortFilters: f })} full={cohortsNamed >= MAX_QUERY_COHORTS} />
              {d.cohorts.length === 0 && <div class="field">
                <label for="breakdown">Breakdown by property</label>
                <input id="breakdown" list="property-keys" value={d.breakdown} placeholder="none" onInput={(e) => patch({ breakdown: (e.target as HTMLInputElement).value })}
                  aria-invalid={unknownName('property', d.breakdown, keys) ? true : undefined} aria-describedby={unknownName('property', d.breakdown, keys) ? 'breakdown-hint' : undefined} />
                {unknownName('property', d.breakdown, keys) && <p id="breakdown-hint" class="hint warn">{unknownName('property', d.breakdown, keys)}</p>}
              </div>}
              {d.cohorts.length === 0 && d.kind === 'trend' && d.thenBy.map((p, i) => (
                <div class="field">
                  <label for={`then-by-${i}`}>Then by property {i + 2}</label>
                  <div class="row">
                    <input id={`then-by-${i}`} list="property-keys" value={p} onInput={(e) => patch({ thenBy: d.thenBy.map((x, j) => (j === i ? (e.target as HTMLInputElement).value : x)) })}
                      aria-invalid={unknownName('property', p, keys) ? true : undefined} aria-describedby={unknownName('property', p, keys) ? `then-by-${i}-hint` : undefined} />
                    <button type="button" aria-label={`Remove breakdown property ${i + 2}`} onClick={() => patch({ thenBy: d.thenBy.filter((_, j) => j !== i) })}>Remove</button>
                  </div>
                  {unknownName('property', p, keys) && <p id={`then-by-${i}-hint`} class="hint warn">{unknownName('property', p, keys)}</p>}
                </div>
              ))}
              {d.cohorts.length === 0 && d.kind === 'trend' && d.thenBy.length < 2 && (
                <button type="button" disabled={!d.breakdown.trim()} onClick={() => patch({ thenBy: [...d.thenBy, ''] })}>Add breakdown</button>
              )}
              {/* A breakdown by cohorts replaces the property breakdown (the API does not combine them). */}
              <CohortBreakdown id="insight-cohort-breakdown" cohorts={cohorts} value={d.cohorts} notInAny={d.notInAny} full={cohortsNamed >= MAX_QUERY_COHORTS}
                onChange={(ids, notInAny) => patch({ cohorts: ids, notInAny: ids.length ? notInAny : false, ...(ids.length ? { breakdown: '', thenBy: [] } : {}) })} />
              <label class="row"><input type="checkbox" checked={d.compare} onChange={(e) => patch({ compare: (e.target as HTMLInputElement).checked })} /> Compare to previous period</label>
            </>
          )}
          {d.kind === 'trend' && (
            <>
              <div class="field">
                <label for="formula">Formula</label>
                <input id="formula" value={d.formula} placeholder="e.g. A / B * 100" onInput={(e) => patch({ formula: (e.target as HTMLInputElement).value })} />
              </div>
              <div class="row">
                <label for="chart-kind">Chart</label>
                <select id="chart-kind" value={d.chart} onChange={(e) => patch({ chart: (e.target as HTMLSelectElement).value as SeriesKind })}>
                  <option value="line">Line</option><option value="bar">Bar</option><option value="stacked">Stacked</option>
                </select>
              </div>
            </>
          )}
          {(d.kind === 'trend' || d.kind === 'sessions') && (
            <div class="row">
              <label for="unit">Interval</label>
              <select id="unit" value={d.unit} onChange={(e) => patch({ unit: (e.target as HTMLSelectElement).value as Draft['unit'] })}>
                <option value="hour">Hour</option><option value="day">Day</option><option value="week">Week</option><option value="month">Month</option>
              </select>
            </div>
          )}
          {d.kind === 'funnel' && (
            <div class="row">
              <label for="window">Conversion window (days)</label>
              <input id="window" type="number" min={1} max={366} value={d.windowDays} onInput={(e) => patch({ windowDays: Math.min(366, Math.max(1, Number((e.target as HTMLInputElement).value) || 1)) })} />
            </div>
          )}
          {d.kind === 'retention' && (
            <div class="row">
              <label for="ret-unit">Cohorts by</label>
              <select id="ret-unit" value={d.retentionUnit} onChange={(e) => patch({ retentionUnit: (e.target as HTMLSelectElement).value as 'day' | 'week' })}><option value="day">Day</option><option value="week">Week</option></select>
              <label for="ret-buckets">Buckets</label>
              <input id="ret-buckets" type="number" min={1} max={16} value={d.retentionBuckets} onInput={(e) => patch({ retentionBuckets: Math.min(16, Math.max(1, Number((e.target as HTMLInputElement).value) || 1)) })} />
            </div>
          )}
          {d.kind === 'flows' && (
            <div class="row">
              <label for="flows-dir">Direction</label>
              <select id="flows-dir" value={d.flowsDirection} onChange={(e) => patch({ flowsDirection: (e.target as HTMLSelectElement).value as 'after' | 'before' })}><option value="after">After</option><option value="before">Before</option></select>
              <label for="flows-steps">Steps</label>
              <input id="flows-steps" type="number" min={1} max={5} value={d.flowsSteps} onInput={(e) => patch({ flowsSteps: Math.min(5, Math.max(1, Number((e.target as HTMLInputElement).value) || 1)) })} />
            </div>
          )}
          <button type="button" class="primary" onClick={() => run()} disabled={running}>{running ? 'Running…' : 'Run'}</button>
          {d.kind === 'sessions' && (
            <p class="muted small" role="note" id="sessions-unsaved">Sessions cannot be saved as a report or put on a board; they are worked out here each time you run them.</p>
          )}
          {canWrite && REPORT_TYPE[d.kind] && (
            <fieldset>
              <legend>Save</legend>
              <div class="field">
                <label for="report-name">Report name</label>
                <input id="report-name" value={name} maxLength={200} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
              </div>
              <div class="row">
                <button type="button" onClick={() => save(false)}>{report ? 'Save' : 'Save report'}</button>
                {report && <button type="button" onClick={() => save(true)}>Save as new</button>}
              </div>
              {boards.length > 0 && (
                <div class="row">
                  <label for="board-pick">Board</label>
                  <select id="board-pick" value={boardId} onChange={(e) => setBoardId((e.target as HTMLSelectElement).value)}>
                    {boards.map((b) => <option value={String(b.id)}>{b.name}</option>)}
                  </select>
                  <button type="button" onClick={addToBoard}>Add to board</button>
                </div>
              )}
            </fieldset>
          )}
        </aside>
        <div class="result">
          {notice && <p role="status" class="muted">{notice} {notice.startsWith('Added') && boardId && <Link href={`/projects/${props.projectId}/boards/${boardId}`}>Open the board</Link>}</p>}
          {error && <p class="error" role="alert">{error}</p>}
          {!ran && !error && <p class="muted">{running ? 'Running…' : 'Choose events and press Run.'}</p>}
          {ran && (
            <figure role="figure" aria-label={title} class="insight-figure">
              <figcaption class="card-head">
                <span class="card-title">{title}</span>
                <span class="card-actions">
                  <button type="button" aria-expanded={showTable} aria-controls="insight-table" onClick={() => setShowTable(!showTable)}>Table</button>
                  <button type="button" aria-label={`CSV of ${title}`} onClick={() => download(`${title.replace(/[^\w.-]+/g, '-')}.csv`, toCsv(toTable(ran.view)))}>CSV</button>
                </span>
              </figcaption>
              <ResultChart view={ran.view} title={title} height={320} seriesKind={d.chart} onPoint={ran.ir ? onPoint : undefined} onStep={ran.ir ? onStep : undefined} />
              {showTable && <div id="insight-table"><ResultTable view={ran.view} title={title} /></div>}
              {ran.warnings.length > 0 && <p class="muted small">{ran.warnings.join(' ')}</p>}
              {ran.ir && ran.view.kind === 'series' && <p class="muted small">Click a point to see the people behind it.</p>}
            </figure>
          )}
          {people && (
            <section class="people" aria-label="People">
              <h2>{people.title}: {people.page.total.toLocaleString()} {people.page.total === 1 ? 'person' : 'people'}</h2>
              <ul class="list">
                {people.page.users.map((u) => <li><Link href={personHref(props.projectId, u.distinctId)}>{u.distinctId}</Link></li>)}
              </ul>
              {people.page.total > people.page.users.length && <p class="muted">Showing the first {people.page.users.length}.</p>}
              {ran?.ir && <SaveAsCohort key={people.title} projectId={props.projectId} title={people.title} total={people.page.total} loadIds={() => drilldownIds(props.projectId, ran.ir!, people.selection, people.page.total)} />}
            </section>
          )}
        </div>
      </div>
    </section>
  );
}

/** Every id behind a drill-down (its pages of at most 500), for Save as cohort. */
async function drilldownIds(projectId: string, query: QueryV2, selection: DrilldownSelection, total: number): Promise<string[]> {
  const ids: string[] = [];
  for (let offset = 0; offset < total; offset += 500) {
    const page = await api.drilldown(projectId, query, selection, { limit: 500, offset });
    ids.push(...page.users.map((u) => u.distinctId));
    if (page.users.length < 500) break;
  }
  return ids;
}
