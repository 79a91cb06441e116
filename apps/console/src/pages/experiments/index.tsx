import { useEffect, useState } from 'preact/hooks';
import { api } from '../../api.js';
import { useShell } from '../../context.js';
import { Link, navigate } from '../../router.js';
import { flagsApi, type Flag } from '../flags/api.js';
import { experimentsApi, type Correction, type Engine, type Experiment, type ExperimentAnalysis, type MetricKind } from './api.js';
import { ExperimentDetail } from './detail.js';
import { DECISION_TEXT } from './format.js';
import './experiments.css';

/** The exposure events themselves are not something to measure. */
const EXPOSURE_EVENTS = new Set(['$experiment_started', '$feature_flag_called']);

/** Each experiment's decision (`GET /api/experiments/{id}/analysis`), a few requests at a time. */
async function decisionsOf(list: Experiment[], set: (id: number, d: ExperimentAnalysis | string) => void) {
  let next = 0;
  const worker = async () => {
    while (next < list.length) {
      const e = list[next++];
      await experimentsApi.analysis(e.id).then((a) => set(e.id, a), (err) => set(e.id, (err as Error).message));
    }
  };
  await Promise.all([worker(), worker(), worker()]);
}

/**
 * `/projects/{projectId}/experiments` (and `/experiments/{id}` for one): the project's
 * experiments with status and decision, a form to create one on a flag with variants (member
 * or more), and the chosen experiment's results.
 */
export function ExperimentsPage(props: { projectId: string; experimentId?: string }) {
  const { canWrite, projects } = useShell();
  const [list, setList] = useState<Experiment[] | null>(null);
  const [decisions, setDecisions] = useState<Record<number, ExperimentAnalysis | string>>({});
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const project = projects.find((p) => String(p.id) === props.projectId);

  useEffect(() => {
    if (!props.experimentId) document.title = `Experiments · ${project?.name ?? 'Tally'}`;
  }, [props.projectId, props.experimentId]);
  useEffect(() => {
    let live = true;
    setList(null);
    experimentsApi.list(props.projectId).then((l) => {
      if (!live) return;
      setList(l);
      setDecisions({});
      void decisionsOf(l, (id, d) => live && setDecisions((all) => ({ ...all, [id]: d })));
    }, (e) => setError(e.message));
    return () => void (live = false);
  }, [props.projectId, version]);

  const decisionCell = (e: Experiment) => {
    const d = decisions[e.id];
    if (d === undefined) return <span class="muted">…</span>;
    if (typeof d === 'string') return <span class="muted" title={d}>— <span class="sr-only">{d}</span></span>;
    return <span class={`decision ${d.decision}`}>{DECISION_TEXT[d.decision]}{d.winner ? `: ${d.winner}` : ''}</span>;
  };

  return (
    <section class="page experiments-page">
      <div class="page-head"><h1>Experiments</h1></div>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="experiments-layout">
        <div class="experiments-list">
          {!list ? <p role="status" class="loading">Loading experiments…</p> : list.length === 0 ? <p class="muted">No experiment yet.</p> : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Experiments</caption>
                <thead><tr><th scope="col">Name</th><th scope="col">Flag</th><th scope="col">Status</th><th scope="col">Decision</th></tr></thead>
                <tbody>
                  {list.map((e) => {
                    const current = String(e.id) === props.experimentId;
                    return (
                      <tr class={current ? 'selected' : ''} data-experiment={e.key}>
                        <td><Link href={`/projects/${props.projectId}/experiments/${e.id}`} aria-current={current ? 'page' : undefined}>{e.name}</Link></td>
                        <td><code>{e.flagKey}</code></td>
                        <td>{e.status === 'running' ? 'Running' : 'Stopped'}</td>
                        <td>{decisionCell(e)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
          {canWrite && !props.experimentId && <NewExperiment projectId={props.projectId} onCreated={() => setVersion((v) => v + 1)} />}
          {canWrite && props.experimentId && (
            <p><Link href={`/projects/${props.projectId}/experiments`} class="button">New experiment</Link></p>
          )}
        </div>
        {props.experimentId && (
          <ExperimentDetail key={props.experimentId} projectId={props.projectId} experimentId={props.experimentId} onChanged={() => setVersion((v) => v + 1)} />
        )}
      </div>
    </section>
  );
}

interface MetricDraft {
  event: string;
  kind: MetricKind;
  property: string;
  windowHours: string;
}
const emptyMetric = (): MetricDraft => ({ event: '', kind: 'conversion', property: '', windowHours: '' });

/** A metric id from its event: `Purchased` → `purchased`, kept unique within the experiment. */
function metricIds(metrics: MetricDraft[]): string[] {
  const seen = new Set<string>();
  return metrics.map((m, i) => {
    const base = `${m.kind}-${m.event.trim().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || `metric-${i + 1}`}`.slice(0, 180);
    let id = base;
    for (let n = 2; seen.has(id); n++) id = `${base}-${n}`;
    seen.add(id);
    return id;
  });
}

const dayStart = (day: string) => (day ? Date.parse(`${day}T00:00:00Z`) : null);
const dayEnd = (day: string) => (day ? Date.parse(`${day}T00:00:00Z`) + 86_400_000 - 1 : null);

/** The form: a flag with variants, its control, metrics from the lexicon's events, the statistics and the dates. */
function NewExperiment(props: { projectId: string; onCreated: () => void }) {
  const [flags, setFlags] = useState<Flag[] | null>(null);
  const [events, setEvents] = useState<string[]>([]);
  const [properties, setProperties] = useState<string[]>([]);
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [flagKey, setFlagKey] = useState('');
  const [control, setControl] = useState('');
  const [metrics, setMetrics] = useState<MetricDraft[]>([emptyMetric()]);
  const [engine, setEngine] = useState<Engine>('bayesian');
  const [level, setLevel] = useState('0.95');
  const [sequential, setSequential] = useState(false);
  const [correction, setCorrection] = useState<Correction>('none');
  const [startDay, setStartDay] = useState('');
  const [endDay, setEndDay] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    flagsApi.list(props.projectId, false).then((fs) => setFlags(fs.filter((f) => f.variants.length > 0)), (e) => setError(e.message));
    api.lexiconEvents(props.projectId).then((es) => setEvents(es.filter((e) => !e.hidden && !EXPOSURE_EVENTS.has(e.name)).map((e) => e.name)), () => {});
    api.lexiconProperties(props.projectId).then((ps) => setProperties(ps.filter((p) => !p.hidden).map((p) => p.key)), () => {});
  }, [props.projectId]);

  const flag = flags?.find((f) => f.key === flagKey);
  const chooseFlag = (k: string) => {
    setFlagKey(k);
    const variants = flags?.find((f) => f.key === k)?.variants.map((v) => v.key) ?? [];
    setControl(variants.includes('control') ? 'control' : variants[0] ?? '');
    if (!key) setKey(k);
  };
  const setMetric = (i: number, patch: Partial<MetricDraft>) => setMetrics((ms) => ms.map((m, j) => (j === i ? { ...m, ...patch } : m)));

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    const ids = metricIds(metrics);
    try {
      const created = await experimentsApi.create(props.projectId, {
        key: key.trim(),
        name: name.trim() || undefined,
        flagKey,
        control: control || undefined,
        metrics: metrics.map((m, i) => ({
          id: ids[i],
          name: `${m.kind === 'conversion' ? 'Converted' : m.kind === 'count' ? 'Count' : `Sum of ${m.property.trim()}`}: ${m.event.trim()}`.slice(0, 200),
          kind: m.kind,
          event: m.event.trim(),
          ...(m.kind === 'sum' ? { property: m.property.trim() } : {}),
          ...(m.windowHours.trim() ? { windowHours: Number(m.windowHours) } : {}),
        })),
        engine,
        confidenceLevel: Number(level),
        ...(engine === 'frequentist' ? { sequential, correction } : {}),
        startAt: dayStart(startDay),
        endAt: dayEnd(endDay),
      });
      props.onCreated();
      navigate(`/projects/${props.projectId}/experiments/${created.id}`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };

  return (
    <form class="new-experiment panel" onSubmit={submit} aria-labelledby="new-experiment-head">
      <h2 id="new-experiment-head">New experiment</h2>
      {flags && flags.length === 0 && (
        <p class="muted">No flag of this project has variants yet: give one variants on the <Link href={`/projects/${props.projectId}/flags`}>Flags</Link> page first.</p>
      )}
      <datalist id="experiment-events">{events.map((e) => <option value={e} />)}</datalist>
      <datalist id="experiment-properties">{properties.map((p) => <option value={p} />)}</datalist>
      <div class="form-grid">
        <div class="field">
          <label for="exp-flag">Flag</label>
          <select id="exp-flag" value={flagKey} required onChange={(e) => chooseFlag((e.target as HTMLSelectElement).value)}>
            <option value="">Choose a flag with variants</option>
            {flags?.map((f) => <option value={f.key}>{f.key} ({f.variants.map((v) => `${v.key} ${v.rolloutPct} %`).join(', ')})</option>)}
          </select>
        </div>
        <div class="field">
          <label for="exp-control">Control</label>
          <select id="exp-control" value={control} required disabled={!flag} onChange={(e) => setControl((e.target as HTMLSelectElement).value)}>
            {flag?.variants.map((v) => <option value={v.key}>{v.key}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="exp-key">Experiment key</label>
          <input id="exp-key" value={key} required maxLength={200} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="exp-name">Experiment name</label>
          <input id="exp-name" value={name} maxLength={200} placeholder={key} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </div>
      </div>
      <fieldset>
        <legend>Metrics (the first is the primary one)</legend>
        {metrics.map((m, i) => (
          <div class="metric-row" role="group" aria-label={`Metric ${i + 1}`}>
            <div class="field">
              <label for={`exp-metric-${i}-event`}>Metric {i + 1} event</label>
              <input id={`exp-metric-${i}-event`} list="experiment-events" value={m.event} required maxLength={255} onInput={(e) => setMetric(i, { event: (e.target as HTMLInputElement).value })} />
            </div>
            <div class="field">
              <label for={`exp-metric-${i}-kind`}>Metric {i + 1} kind</label>
              <select id={`exp-metric-${i}-kind`} value={m.kind} onChange={(e) => setMetric(i, { kind: (e.target as HTMLSelectElement).value as MetricKind })}>
                <option value="conversion">Conversion (did it at least once)</option>
                <option value="count">Count (how many times)</option>
                <option value="sum">Sum of a property</option>
              </select>
            </div>
            {m.kind === 'sum' && (
              <div class="field">
                <label for={`exp-metric-${i}-property`}>Metric {i + 1} property</label>
                <input id={`exp-metric-${i}-property`} list="experiment-properties" value={m.property} required maxLength={255} onInput={(e) => setMetric(i, { property: (e.target as HTMLInputElement).value })} />
              </div>
            )}
            <div class="field">
              <label for={`exp-metric-${i}-window`}>Metric {i + 1} window (hours)</label>
              <input id={`exp-metric-${i}-window`} type="number" min="0" step="any" value={m.windowHours} placeholder="none" onInput={(e) => setMetric(i, { windowHours: (e.target as HTMLInputElement).value })} />
            </div>
            {metrics.length > 1 && (
              <button type="button" class="icon" aria-label={`Remove metric ${i + 1}`} onClick={() => setMetrics((ms) => ms.filter((_, j) => j !== i))}>×</button>
            )}
          </div>
        ))}
        <button type="button" onClick={() => setMetrics((ms) => [...ms, emptyMetric()])}>Add metric</button>
      </fieldset>
      <div class="form-grid">
        <div class="field">
          <label for="exp-engine">Engine</label>
          <select id="exp-engine" value={engine} onChange={(e) => setEngine((e.target as HTMLSelectElement).value as Engine)}>
            <option value="bayesian">Bayesian (chance to win)</option>
            <option value="frequentist">Frequentist (p-value)</option>
          </select>
        </div>
        <div class="field">
          <label for="exp-level">Confidence level</label>
          <input id="exp-level" type="number" min="0.5" max="1" step="any" value={level} onInput={(e) => setLevel((e.target as HTMLInputElement).value)} />
        </div>
        {engine === 'frequentist' && (
          <>
            <div class="field">
              <label for="exp-correction">Correction</label>
              <select id="exp-correction" value={correction} onChange={(e) => setCorrection((e.target as HTMLSelectElement).value as Correction)}>
                <option value="none">None</option>
                <option value="holm">Holm</option>
                <option value="bh">Benjamini–Hochberg</option>
              </select>
            </div>
            <label class="switch"><input type="checkbox" checked={sequential} onChange={(e) => setSequential((e.target as HTMLInputElement).checked)} /> Sequential (safe to look often)</label>
          </>
        )}
        <div class="field">
          <label for="exp-start">First day (UTC)</label>
          <input id="exp-start" type="date" value={startDay} onInput={(e) => setStartDay((e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="exp-end">Last day (UTC)</label>
          <input id="exp-end" type="date" value={endDay} onInput={(e) => setEndDay((e.target as HTMLInputElement).value)} />
        </div>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <button type="submit" class="primary" disabled={busy}>Create experiment</button>
    </form>
  );
}
