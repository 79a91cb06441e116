import { useEffect, useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import { Link, navigate } from '../../router.js';
import { flagsApi, type Flag } from '../flags/api.js';
import { experimentsApi, type Correction, type Engine, type Experiment, type ExperimentAnalysis, type ExperimentResults } from './api.js';
import { DECISION_TEXT, utcDay } from './format.js';
import { ExposuresOverTimeView, ExposuresView, MetricResultView } from './results.js';

/**
 * One experiment: its settings, the decision on the primary metric, exposures with the
 * sample-ratio check, and each metric's results; the engine and, for the frequentist one,
 * sequential testing and the correction can be changed for this view (`?engine=` … of the
 * results call). Members stop and delete it.
 */
export function ExperimentDetail(props: { projectId: string; experimentId: string; onChanged: () => void }) {
  const { canWrite } = useShell();
  const [exp, setExp] = useState<Experiment | null>(null);
  const [flag, setFlag] = useState<Flag | null | undefined>(undefined);
  const [results, setResults] = useState<ExperimentResults | null>(null);
  const [analysis, setAnalysis] = useState<ExperimentAnalysis | null>(null);
  const [engine, setEngine] = useState<Engine | null>(null);
  const [sequential, setSequential] = useState(false);
  const [correction, setCorrection] = useState<Correction>('none');
  const [error, setError] = useState<string | null>(null);
  const [resultsError, setResultsError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    experimentsApi.get(props.experimentId).then((e) => {
      setExp(e);
      setEngine(e.engine);
      setSequential(e.sequential);
      setCorrection(e.correction);
      document.title = `${e.name} · Experiments`;
      flagsApi.list(props.projectId, true).then((fs) => setFlag(fs.find((f) => f.key === e.flagKey) ?? null), () => setFlag(null));
    }, (err) => setError(err.message));
  }, [props.experimentId]);

  // The verdict a canary gate reads uses the experiment's own settings, so it is asked once per experiment change.
  useEffect(() => {
    if (!exp) return;
    setAnalysis(null);
    experimentsApi.analysis(exp.id).then(setAnalysis, () => setAnalysis(null));
  }, [exp]);

  useEffect(() => {
    if (!exp || !engine) return;
    setResults(null);
    setResultsError(null);
    const frequentist = engine === 'frequentist';
    // Only the answer to the latest settings is shown (an earlier one may arrive after it).
    let latest = true;
    experimentsApi
      .results(exp.id, { engine, sequential: frequentist ? sequential : undefined, correction: frequentist ? correction : undefined })
      .then((r) => latest && setResults(r), (err) => latest && setResultsError(err.message));
    return () => void (latest = false);
  }, [exp, engine, sequential, correction]);

  const stop = async () => {
    if (!exp) return;
    setBusy(true);
    setError(null);
    try {
      setExp(await experimentsApi.stop(exp.id));
      props.onChanged();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const remove = async () => {
    if (!exp || !confirm(`Delete the experiment "${exp.name}"? Its flag and events stay.`)) return;
    setBusy(true);
    setError(null);
    try {
      await experimentsApi.remove(exp.id);
      props.onChanged();
      navigate(`/projects/${props.projectId}/experiments`);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };

  if (!exp) return <section class="experiment-detail panel">{error ? <p class="error" role="alert">{error}</p> : <p role="status" class="loading">Loading the experiment…</p>}</section>;
  const split = flag ? flag.variants.map((v) => ({ key: v.key, rolloutPct: v.rolloutPct })) : Object.keys(results?.exposures ?? {}).map((key) => ({ key, rolloutPct: 0 }));
  const frequentist = engine === 'frequentist';
  return (
    <section class="experiment-detail panel" aria-labelledby="experiment-title">
      <div class="page-head">
        <h2 id="experiment-title">{exp.name}</h2>
        {canWrite && (
          <div class="toolbar">
            {exp.status === 'running' && <button type="button" onClick={stop} disabled={busy}>Stop experiment</button>}
            <button type="button" onClick={remove} disabled={busy}>Delete experiment</button>
          </div>
        )}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <dl class="facts" aria-label="Experiment settings">
        <div><dt>Key</dt><dd><code>{exp.key}</code></dd></div>
        <div><dt>Flag</dt><dd>{flag ? <Link href={`/projects/${props.projectId}/flags/${flag.id}`}>{exp.flagKey}</Link> : exp.flagKey}</dd></div>
        <div><dt>Control</dt><dd>{exp.control}</dd></div>
        <div><dt>Status</dt><dd>{exp.status === 'running' ? 'Running' : `Stopped ${utcDay(exp.stoppedAt ?? exp.updatedAt)}`}</dd></div>
        <div><dt>Dates (UTC)</dt><dd>{exp.startAt === null ? 'from the first exposure' : utcDay(exp.startAt)} – {exp.endAt === null ? 'open' : utcDay(exp.endAt)}</dd></div>
        <div><dt>Decision</dt><dd data-decision={analysis?.decision ?? ''}>{analysis ? `${DECISION_TEXT[analysis.decision]}${analysis.winner ? `: ${analysis.winner}` : ''}` : '…'}</dd></div>
      </dl>
      <fieldset class="engine-choice">
        <legend>Statistics</legend>
        <div class="row">
          <div class="tabs" role="group" aria-label="Engine">
            <button type="button" aria-pressed={engine === 'bayesian'} onClick={() => setEngine('bayesian')}>Bayesian</button>
            <button type="button" aria-pressed={engine === 'frequentist'} onClick={() => setEngine('frequentist')}>Frequentist</button>
          </div>
          {frequentist && (
            <>
              <label class="switch"><input type="checkbox" checked={sequential} onChange={(e) => setSequential((e.target as HTMLInputElement).checked)} /> Sequential</label>
              <label class="switch" for="results-correction">Correction</label>
              <select id="results-correction" value={correction} onChange={(e) => setCorrection((e.target as HTMLSelectElement).value as Correction)}>
                <option value="none">None</option>
                <option value="holm">Holm</option>
                <option value="bh">Benjamini–Hochberg</option>
              </select>
            </>
          )}
          <span class="muted small">Level {Math.round(exp.confidenceLevel * 1000) / 10} %{engine !== exp.engine || (frequentist && (sequential !== exp.sequential || correction !== exp.correction)) ? ' · this view only; the decision uses the saved settings' : ''}</span>
        </div>
      </fieldset>
      {resultsError && <p class="error" role="alert">{resultsError}</p>}
      {!results ? !resultsError && <p role="status" class="loading">Computing results…</p> : (
        <div class="experiment-results" data-settings={`${results.engine} ${results.sequential ? 'sequential' : 'fixed'} ${results.correction}`}>
          <ExposuresView results={results} split={split} />
          <ExposuresOverTimeView results={results} />
          <h2>Metrics</h2>
          {results.metrics.map((m) => (
            <MetricResultView results={results} metric={m} def={exp.metrics.find((d) => d.id === m.id)} primary={m.id === exp.primaryMetricId} />
          ))}
          <p class="muted small">Computed {new Date(results.computedAt).toLocaleString()}{results.cached_at !== undefined ? ' (from the cache)' : ''}.</p>
        </div>
      )}
    </section>
  );
}
