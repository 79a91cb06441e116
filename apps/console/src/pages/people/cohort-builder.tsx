import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../../api.js';
import { peopleApi, type Cohort, type CohortCriterion, type CohortDefinition, type CohortPreview } from './api.js';

type PropertyOp = 'eq' | 'neq' | 'contains' | 'set' | 'not_set';
type BehaviorOp = 'gte' | 'lt' | 'gt' | 'lte' | 'eq';
/** A criterion as the form holds it: every field a string while it is typed. */
type Draft =
  | { kind: 'property'; key: string; op: PropertyOp; value: string }
  | { kind: 'behavior'; op: BehaviorOp; event: string; count: string; windowDays: string }
  | { kind: 'static'; ids: string };

const PROPERTY_OPS: Array<[PropertyOp, string]> = [['eq', 'is'], ['neq', 'is not'], ['contains', 'contains'], ['set', 'is set'], ['not_set', 'is not set']];
/** "did / did not do <event> at least N times"; the other comparisons of the API read as they are. */
const BEHAVIOR_OPS: Array<[BehaviorOp, string]> = [['gte', 'did'], ['lt', 'did not'], ['gt', 'did, more than'], ['lte', 'did, at most'], ['eq', 'did, exactly']];

const toDraft = (c: CohortCriterion): Draft => {
  if (c.kind === 'property') return { kind: 'property', key: c.filter.key, op: c.filter.op, value: c.filter.value ?? '' };
  if (c.kind === 'behavior') return { kind: 'behavior', op: c.op, event: c.event, count: String(c.count), windowDays: String(c.windowDays) };
  return { kind: 'static', ids: c.ids.join('\n') };
};

const idsOf = (text: string) => [...new Set(text.split(/[\n,]/).map((s) => s.trim()).filter(Boolean))];

/** The API's definition, or the first thing the form still misses (said as the form says it). */
function toDefinition(op: 'and' | 'or', drafts: Draft[]): { definition: CohortDefinition } | { problem: string } {
  const criteria: CohortCriterion[] = [];
  for (const [i, d] of drafts.entries()) {
    const n = i + 1;
    if (d.kind === 'property') {
      if (!d.key.trim()) return { problem: `Criterion ${n}: choose a property.` };
      const needsValue = d.op !== 'set' && d.op !== 'not_set';
      if (needsValue && d.value === '') return { problem: `Criterion ${n}: enter a value.` };
      criteria.push({ kind: 'property', filter: { key: d.key.trim(), op: d.op, ...(needsValue ? { value: d.value } : {}) } });
    } else if (d.kind === 'behavior') {
      if (!d.event.trim()) return { problem: `Criterion ${n}: choose an event.` };
      const count = Number(d.count);
      const windowDays = Number(d.windowDays);
      if (d.count.trim() === '' || !Number.isInteger(count) || count < 0) return { problem: `Criterion ${n}: times must be a whole number, 0 or more.` };
      if (d.windowDays.trim() === '' || !Number.isInteger(windowDays) || windowDays < 0) return { problem: `Criterion ${n}: days must be a whole number, 0 or more (0 is all time).` };
      criteria.push({ kind: 'behavior', event: d.event.trim(), op: d.op, count, windowDays });
    } else {
      const ids = idsOf(d.ids);
      if (!ids.length) return { problem: `Criterion ${n}: list at least one distinct id.` };
      criteria.push({ kind: 'static', ids });
    }
  }
  return { definition: { op, criteria } };
}

/**
 * A cohort's builder: name, description, criteria matched all or any (a property of the person,
 * a behaviour, or a saved list of people), a live size preview (debounced), Save and Delete.
 * Without `canWrite` it shows the same form read-only. A refused save shows the API's words and
 * keeps every edit.
 */
export function CohortBuilder(props: {
  projectId: string;
  cohort?: Cohort;
  canWrite: boolean;
  onSaved: (c: Cohort) => void;
  onDeleted?: () => void;
  onCancel?: () => void;
}) {
  const c = props.cohort;
  const [name, setName] = useState(c?.name ?? '');
  const [description, setDescription] = useState(c?.description ?? '');
  const [op, setOp] = useState<'and' | 'or'>(c?.definition.op ?? 'and');
  const [drafts, setDrafts] = useState<Draft[]>(c ? c.definition.criteria.map(toDraft) : [{ kind: 'behavior', op: 'gte', event: '', count: '1', windowDays: '30' }]);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  const [preview, setPreview] = useState<{ result?: CohortPreview; note?: string; busy?: boolean }>({});
  const [events, setEvents] = useState<string[]>([]);
  const [props_, setProps] = useState<Array<{ key: string; sampleValues: string[] }>>([]);
  const focusAfter = useRef<string | null>(null);

  useEffect(() => {
    api.lexiconEvents(props.projectId).then((e) => setEvents(e.filter((x) => !x.hidden).map((x) => x.name)), () => {});
    api.lexiconProperties(props.projectId).then((p) => setProps(p.filter((x) => !x.hidden)), () => {});
  }, [props.projectId]);

  const built = useMemo(() => toDefinition(op, drafts), [op, drafts]);
  const builtKey = 'definition' in built ? JSON.stringify(built.definition) : '';
  // The size now, asked 400 ms after the last edit; an older answer never replaces a newer one.
  useEffect(() => {
    if (!('definition' in built)) { setPreview({ note: built.problem }); return; }
    let live = true;
    setPreview((p) => ({ ...p, busy: true }));
    const t = setTimeout(() => {
      peopleApi.previewCohort(props.projectId, built.definition).then(
        (result) => live && setPreview({ result }),
        (e) => live && setPreview({ note: (e as Error).message }),
      );
    }, 400);
    return () => { live = false; clearTimeout(t); };
  }, [props.projectId, builtKey]);

  useEffect(() => {
    if (!focusAfter.current) return;
    document.getElementById(focusAfter.current)?.focus();
    focusAfter.current = null;
  });

  const set = (i: number, p: Partial<Draft>) => setDrafts((ds) => ds.map((d, j) => (j === i ? ({ ...d, ...p } as Draft) : d)));
  const add = (d: Draft) => {
    focusAfter.current = `crit-${drafts.length}-first`;
    setDrafts((ds) => [...ds, d]);
  };
  const remove = (i: number) => {
    focusAfter.current = drafts.length > 1 ? `crit-${Math.min(i, drafts.length - 2)}-first` : 'cohort-add-behavior';
    setDrafts((ds) => ds.filter((_, j) => j !== i));
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    if (!('definition' in built)) { setError(built.problem); return; }
    setSaving(true);
    try {
      const body = { name: name.trim(), description: description.trim() ? description : null, definition: built.definition };
      props.onSaved(c ? await peopleApi.updateCohort(c.id, body) : await peopleApi.createCohort(props.projectId, body));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setSaving(false);
    }
  };
  const del = async () => {
    if (!c || !confirm(`Delete the cohort “${c.name}”? Flags targeting it must be changed first.`)) return;
    setError(null);
    try {
      await peopleApi.deleteCohort(c.id);
      props.onDeleted?.();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const keys = props_.map((p) => p.key);
  const readOnly = !props.canWrite;
  return (
    <form class="panel cohort-builder" aria-label={c ? `Cohort ${c.name}` : 'New cohort'} onSubmit={save} noValidate>
      <h2>{c ? (readOnly ? c.name : `Edit cohort: ${c.name}`) : 'New cohort'}</h2>
      {readOnly && <p class="muted small">Viewers see cohorts read-only.</p>}
      <datalist id="cohort-event-names">{events.map((e) => <option value={e} />)}</datalist>
      <datalist id="cohort-property-keys">{keys.map((k) => <option value={k} />)}</datalist>
      <fieldset disabled={readOnly} class="cohort-fields">
        <legend class="sr-only">Cohort</legend>
        <div class="row">
          <div class="field grow"><label for="cohort-name">Name</label>
            <input id="cohort-name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></div>
          <div class="field grow"><label for="cohort-description">Description</label>
            <input id="cohort-description" maxLength={5000} value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} /></div>
        </div>
        <div class="row">
          <label for="cohort-op">People who match</label>
          <select id="cohort-op" value={op} onChange={(e) => setOp((e.target as HTMLSelectElement).value as 'and' | 'or')}>
            <option value="and">all of the criteria</option>
            <option value="or">any of the criteria</option>
          </select>
        </div>
        <ol class="cohort-criteria" aria-label="Criteria">
          {drafts.map((d, i) => {
            const id = `crit-${i}`;
            const n = i + 1;
            return (
              <li class="row cohort-criterion" key={i}>
                {d.kind === 'property' && (
                  <>
                    <span class="muted">Property</span>
                    <input id={`${id}-first`} aria-label={`Criterion ${n} property`} list="cohort-property-keys" placeholder="property" value={d.key} onInput={(e) => set(i, { key: (e.target as HTMLInputElement).value })} />
                    <select aria-label={`Criterion ${n} operator`} value={d.op} onChange={(e) => set(i, { op: (e.target as HTMLSelectElement).value as PropertyOp })}>
                      {PROPERTY_OPS.map(([v, label]) => <option value={v}>{label}</option>)}
                    </select>
                    {d.op !== 'set' && d.op !== 'not_set' && (
                      <>
                        <input aria-label={`Criterion ${n} value`} list={`${id}-values`} placeholder="value" value={d.value} onInput={(e) => set(i, { value: (e.target as HTMLInputElement).value })} />
                        <datalist id={`${id}-values`}>{(props_.find((p) => p.key === d.key)?.sampleValues ?? []).map((v) => <option value={v} />)}</datalist>
                      </>
                    )}
                  </>
                )}
                {d.kind === 'behavior' && (
                  <>
                    <select id={`${id}-first`} aria-label={`Criterion ${n} did or did not`} value={d.op} onChange={(e) => set(i, { op: (e.target as HTMLSelectElement).value as BehaviorOp })}>
                      {BEHAVIOR_OPS.filter(([v]) => v === 'gte' || v === 'lt' || v === d.op).map(([v, label]) => <option value={v}>{label}</option>)}
                    </select>
                    <input aria-label={`Criterion ${n} event`} list="cohort-event-names" placeholder="event" value={d.event} onInput={(e) => set(i, { event: (e.target as HTMLInputElement).value })} />
                    {(d.op === 'gte' || d.op === 'lt') && <span>at least</span>}
                    <input class="cohort-number" type="number" min={0} step={1} aria-label={`Criterion ${n} times`} value={d.count} onInput={(e) => set(i, { count: (e.target as HTMLInputElement).value })} />
                    <span>times in the last</span>
                    <input class="cohort-number" type="number" min={0} max={366} step={1} aria-label={`Criterion ${n} days`} value={d.windowDays} onInput={(e) => set(i, { windowDays: (e.target as HTMLInputElement).value })} />
                    <span>days <span class="muted small">(0: all time)</span></span>
                  </>
                )}
                {d.kind === 'static' && (
                  <div class="field grow">
                    <label for={`${id}-first`}>Criterion {n}: one of these people ({idsOf(d.ids).length.toLocaleString()} distinct ids, one a line)</label>
                    <textarea id={`${id}-first`} rows={3} value={d.ids} onInput={(e) => set(i, { ids: (e.target as HTMLTextAreaElement).value })} />
                  </div>
                )}
                {!readOnly && <button type="button" aria-label={`Remove criterion ${n}`} onClick={() => remove(i)}>Remove</button>}
              </li>
            );
          })}
        </ol>
        {drafts.length === 0 && <p class="muted">No criterion: {op === 'and' ? 'everyone matches' : 'nobody matches'}.</p>}
        {!readOnly && (
          <div class="toolbar">
            <button type="button" onClick={() => add({ kind: 'property', key: '', op: 'eq', value: '' })}>Add property criterion</button>
            <button type="button" id="cohort-add-behavior" onClick={() => add({ kind: 'behavior', op: 'gte', event: '', count: '1', windowDays: '30' })}>Add behaviour criterion</button>
            <button type="button" onClick={() => add({ kind: 'static', ids: '' })}>Add list of people</button>
          </div>
        )}
      </fieldset>
      <p class="cohort-preview" role="status" aria-live="polite" aria-busy={preview.busy ? 'true' : 'false'}>
        {preview.result
          ? <><strong>{preview.result.count.toLocaleString()}</strong> {preview.result.count === 1 ? 'person matches' : 'people match'} now{preview.result.sample.length ? <span class="muted">: {preview.result.sample.join(', ')}{preview.result.count > preview.result.sample.length ? ', …' : ''}</span> : ''}</>
          : <span class="muted">{preview.note ?? 'Counting…'}</span>}
      </p>
      {error && <p class="error" role="alert">{error}</p>}
      {!readOnly && (
        <div class="toolbar">
          <button type="submit" class="primary" disabled={saving}>{saving ? 'Saving…' : c ? 'Save' : 'Save cohort'}</button>
          {props.onCancel && <button type="button" onClick={props.onCancel}>Cancel</button>}
          {c && <button type="button" onClick={del}>Delete cohort</button>}
        </div>
      )}
    </form>
  );
}
