import { useEffect, useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import type { Cohort } from '../../types.js';
import { api } from '../../api.js';
import { navigate } from '../../router.js';
import { FieldChangesTable, fieldChanges } from '../../components/diff.js';
import { FLAG_TYPES, flagsApi, type Flag, type FlagEvent, type FlagResult, type FlagRule, type FlagType, type FlagVariant } from './api.js';

/** The editor's copy of a flag: payloads and override lists as the text a person types. */
interface Draft {
  name: string;
  description: string;
  active: boolean;
  type: FlagType;
  variants: Array<{ key: string; rolloutPct: number; payload: string }>;
  rules: Array<{ rolloutPct: number; variant: string; cohortId: string; distinctIds: string }>;
}

const draftOf = (f: Flag): Draft => ({
  name: f.name,
  description: f.description ?? '',
  active: f.active,
  type: f.type,
  variants: f.variants.map((v) => ({ key: v.key, rolloutPct: v.rolloutPct, payload: v.payload === undefined ? '' : JSON.stringify(v.payload) })),
  rules: f.rules.map((r) => ({ rolloutPct: r.rolloutPct, variant: r.variant ?? '', cohortId: r.cohortId === undefined ? '' : String(r.cohortId), distinctIds: (r.distinctIds ?? []).join('\n') })),
});

/** The draft as the API takes it; a payload that is not JSON is named before anything is sent. */
function writeOf(d: Draft): { name: string; description: string | null; active: boolean; type: FlagType; variants: FlagVariant[]; rules: FlagRule[] } {
  const variants = d.variants.map((v, i) => {
    const out: FlagVariant = { key: v.key.trim(), rolloutPct: Number(v.rolloutPct) };
    if (v.payload.trim()) {
      try {
        out.payload = JSON.parse(v.payload);
      } catch {
        throw new Error(`variants.${i}.payload: not valid JSON`);
      }
    }
    return out;
  });
  const rules = d.rules.map((r) => {
    const out: FlagRule = { rolloutPct: Number(r.rolloutPct) };
    if (r.variant) out.variant = r.variant;
    if (r.cohortId) out.cohortId = Number(r.cohortId);
    const ids = r.distinctIds.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
    if (ids.length) out.distinctIds = ids;
    return out;
  });
  return { name: d.name.trim(), description: d.description.trim() || null, active: d.active, type: d.type, variants, rules };
}

const when = (ms: number) => new Date(ms).toLocaleString();
const actor = (e: FlagEvent) =>
  e.actor_resource ? e.actor_resource : e.actor_user_id !== null ? `user ${e.actor_user_id}` : e.actor_mcp_token_id !== null ? `token ${e.actor_mcp_token_id}` : 'superadmin';
const FIELDS = ['name', 'description', 'active', 'type', 'variants', 'rules'] as const;
/** The settings an update changed, with their values before and after (creations and deletions list none). */
const changesOf = (e: FlagEvent) => (!e.before || !e.after ? [] : fieldChanges(e.before, e.after, FIELDS));

export function FlagDetail(props: { projectId: string; flagId: string; onChanged(): void }) {
  const { canWrite } = useShell();
  const [flag, setFlag] = useState<Flag | null>(null);
  const [draft, setDraft] = useState<Draft | null>(null);
  const [history, setHistory] = useState<FlagEvent[] | null>(null);
  const [cohorts, setCohorts] = useState<Cohort[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState('');
  const [distinctId, setDistinctId] = useState('');
  const [result, setResult] = useState<FlagResult | null>(null);
  const [evalError, setEvalError] = useState<string | null>(null);

  const load = async () => {
    try {
      const f = await flagsApi.get(props.flagId);
      setFlag(f);
      setDraft(draftOf(f));
      setHistory(await flagsApi.events(f.id));
    } catch (e) {
      setError((e as Error).message);
    }
  };
  useEffect(() => {
    void load();
    api.cohorts(props.projectId).then(setCohorts, () => setCohorts([]));
  }, [props.flagId]);

  if (error && !flag) return <section class="panel flag-detail"><p class="error" role="alert">{error}</p></section>;
  if (!flag || !draft) return <section class="panel flag-detail"><p role="status" class="loading">Loading flag…</p></section>;

  // A flag a Kubernetes resource owns is changed through that resource, never here.
  const readOnly = flag.managed_by !== null || !canWrite;
  const set = (patch: Partial<Draft>) => setDraft({ ...draft, ...patch });
  const setVariant = (i: number, patch: Partial<Draft['variants'][number]>) => set({ variants: draft.variants.map((v, j) => (j === i ? { ...v, ...patch } : v)) });
  const setRule = (i: number, patch: Partial<Draft['rules'][number]>) => set({ rules: draft.rules.map((r, j) => (j === i ? { ...r, ...patch } : r)) });
  /** Rule `i` swapped with its neighbour `i + by`: order matters, the first matching rule wins. */
  const moveRule = (i: number, by: -1 | 1) => {
    const rules = [...draft.rules];
    [rules[i], rules[i + by]] = [rules[i + by], rules[i]];
    set({ rules });
    // The focus follows the moved rule: the same button, or the other one once it reached an end.
    const to = i + by;
    const atEnd = by === -1 ? to === 0 : to === rules.length - 1;
    const way = (by === -1) !== atEnd ? 'up' : 'down';
    requestAnimationFrame(() => document.getElementById(`rule-${to}-${way}`)?.focus());
  };
  const variantSum = draft.variants.reduce((s, v) => s + (Number(v.rolloutPct) || 0), 0);

  const act = async (what: string, fn: () => Promise<unknown>) => {
    setError(null);
    setNotice('');
    try {
      await fn();
      setNotice(what);
      props.onChanged();
      await load();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const save = (e: Event) => {
    e.preventDefault();
    void act('Saved.', async () => flagsApi.update(flag.id, writeOf(draft)));
  };
  /** On/off saves at once, apart from any other edit; a refusal shows its reason and puts the switch back. */
  const toggle = async (active: boolean) => {
    setError(null);
    setNotice('');
    setDraft({ ...draft, active });
    try {
      const f = await flagsApi.update(flag.id, { active });
      setFlag(f);
      setDraft((d) => (d ? { ...d, active: f.active } : d));
      setNotice(f.active ? 'Turned on.' : 'Turned off.');
      props.onChanged();
      setHistory(await flagsApi.events(f.id));
    } catch (err) {
      setDraft((d) => (d ? { ...d, active: flag.active } : d));
      setError((err as Error).message);
    }
  };
  const evaluate = async (e: Event) => {
    e.preventDefault();
    setEvalError(null);
    setResult(null);
    try {
      setResult(await flagsApi.preview(flag.id, distinctId));
    } catch (err) {
      setEvalError((err as Error).message);
    }
  };

  return (
    <section class="panel flag-detail" aria-labelledby="flag-title">
      <h2 id="flag-title">{flag.name} <code class="muted">{flag.key}</code></h2>
      {flag.managed_by !== null && <p class="managed" role="note">Managed by {flag.managed_by}</p>}
      {flag.archived_at !== null && <p class="muted">Archived {when(flag.archived_at)}.</p>}
      {error && <p class="error" role="alert">{error}</p>}
      <p role="status" class="muted small">{notice}</p>

      <form onSubmit={save} aria-label="Edit flag">
        <fieldset disabled={readOnly} class="bare">
          <legend class="sr-only">Flag settings</legend>
          <div class="flag-grid">
            <div class="field"><label for="flag-name">Name</label>
              <input id="flag-name" value={draft.name} required maxLength={200} onInput={(e) => set({ name: (e.target as HTMLInputElement).value })} /></div>
            <div class="field"><label for="flag-type">Type</label>
              <select id="flag-type" value={draft.type} onChange={(e) => set({ type: (e.target as HTMLSelectElement).value as FlagType })}>
                {FLAG_TYPES.map((t) => <option value={t}>{t.replace('_', ' ')}</option>)}
              </select></div>
            <div class="field wide-field"><label for="flag-description">Description</label>
              <textarea id="flag-description" rows={2} value={draft.description} onInput={(e) => set({ description: (e.target as HTMLTextAreaElement).value })} /></div>
            <div class="field"><label class="switch"><input type="checkbox" checked={draft.active} aria-describedby="flag-active-hint" onChange={(e) => void toggle((e.target as HTMLInputElement).checked)} /> Active</label>
              <span id="flag-active-hint" class="muted small">Turning the flag on or off saves at once.</span></div>
          </div>

          <fieldset>
            <legend>Variants {draft.variants.length > 0 && <span class={variantSum === 100 ? 'muted' : 'error'}>({variantSum} % of 100)</span>}</legend>
            {draft.variants.length === 0 && <p class="muted small">No variants: a matching rule serves the flag as on.</p>}
            {draft.variants.map((v, i) => (
              <div class="row flag-row">
                <div class="field"><label for={`variant-${i}-key`}>Variant {i + 1} key</label>
                  <input id={`variant-${i}-key`} value={v.key} required maxLength={200} onInput={(e) => setVariant(i, { key: (e.target as HTMLInputElement).value })} /></div>
                <div class="field"><label for={`variant-${i}-pct`}>Variant {i + 1} share (%)</label>
                  <input id={`variant-${i}-pct`} type="number" min={0} max={100} value={v.rolloutPct} onInput={(e) => setVariant(i, { rolloutPct: Number((e.target as HTMLInputElement).value) })} /></div>
                <div class="field grow"><label for={`variant-${i}-payload`}>Variant {i + 1} payload (JSON)</label>
                  <input id={`variant-${i}-payload`} value={v.payload} placeholder='{"color":"blue"}' onInput={(e) => setVariant(i, { payload: (e.target as HTMLInputElement).value })} /></div>
                <button type="button" onClick={() => set({ variants: draft.variants.filter((_, j) => j !== i) })}>Remove variant {i + 1}</button>
              </div>
            ))}
            {draft.variants.length < 10 && (
              <button type="button" onClick={() => set({ variants: [...draft.variants, { key: draft.variants.length ? `variant-${draft.variants.length + 1}` : 'control', rolloutPct: draft.variants.length ? 0 : 100, payload: '' }] })}>Add variant</button>
            )}
          </fieldset>

          <fieldset>
            <legend>Rules (first match wins)</legend>
            {draft.rules.length === 0 && <p class="muted small">No rules: the flag is off for everyone.</p>}
            {draft.rules.map((r, i) => (
              <div class="row flag-row">
                <div class="field"><label for={`rule-${i}-pct`}>Rule {i + 1} rollout (%)</label>
                  <input id={`rule-${i}-pct`} type="number" min={0} max={100} value={r.rolloutPct} onInput={(e) => setRule(i, { rolloutPct: Number((e.target as HTMLInputElement).value) })} /></div>
                <div class="field"><label for={`rule-${i}-cohort`}>Rule {i + 1} cohort</label>
                  <select id={`rule-${i}-cohort`} value={r.cohortId} onChange={(e) => setRule(i, { cohortId: (e.target as HTMLSelectElement).value })}>
                    <option value="">Everyone</option>
                    {cohorts.map((c) => <option value={String(c.id)}>{c.name}</option>)}
                    {r.cohortId && !cohorts.some((c) => String(c.id) === r.cohortId) && <option value={r.cohortId}>cohort {r.cohortId}</option>}
                  </select></div>
                <div class="field"><label for={`rule-${i}-variant`}>Rule {i + 1} variant</label>
                  <select id={`rule-${i}-variant`} value={r.variant} onChange={(e) => setRule(i, { variant: (e.target as HTMLSelectElement).value })}>
                    <option value="">By the variants' shares</option>
                    {draft.variants.map((v) => <option value={v.key}>{v.key}</option>)}
                  </select></div>
                <div class="field grow"><label for={`rule-${i}-ids`}>Rule {i + 1} distinct ids (one a line)</label>
                  <textarea id={`rule-${i}-ids`} rows={1} value={r.distinctIds} onInput={(e) => setRule(i, { distinctIds: (e.target as HTMLTextAreaElement).value })} /></div>
                <button type="button" id={`rule-${i}-up`} disabled={i === 0} onClick={() => moveRule(i, -1)}>Move rule {i + 1} up</button>
                <button type="button" id={`rule-${i}-down`} disabled={i === draft.rules.length - 1} onClick={() => moveRule(i, 1)}>Move rule {i + 1} down</button>
                <button type="button" onClick={() => set({ rules: draft.rules.filter((_, j) => j !== i) })}>Remove rule {i + 1}</button>
              </div>
            ))}
            {draft.rules.length < 10 && (
              <button type="button" onClick={() => set({ rules: [...draft.rules, { rolloutPct: 100, variant: '', cohortId: '', distinctIds: '' }] })}>Add rule</button>
            )}
          </fieldset>
          <div class="toolbar">
            <button type="submit" class="primary">Save</button>
            <button type="button" onClick={() => setDraft(draftOf(flag))}>Discard changes</button>
          </div>
        </fieldset>
      </form>

      <div class="toolbar lifecycle">
        {flag.archived_at === null
          ? <button type="button" disabled={readOnly} onClick={() => act('Archived.', () => flagsApi.archive(flag.id))}>Archive</button>
          : <button type="button" disabled={readOnly} onClick={() => act('Revived.', () => flagsApi.revive(flag.id))}>Revive</button>}
        {flag.archived_at !== null && (
          <button type="button" disabled={readOnly} onClick={async () => {
            if (!confirm(`Delete flag ${flag.key} and its history?`)) return;
            try {
              await flagsApi.remove(flag.id);
              props.onChanged();
              navigate(`/projects/${props.projectId}/flags`);
            } catch (e) {
              setError((e as Error).message);
            }
          }}>Delete</button>
        )}
      </div>

      <h3>Evaluate</h3>
      <form class="inline-form" onSubmit={evaluate} aria-label="Evaluate flag">
        <label for="flag-eval-id">Distinct id</label>
        <input id="flag-eval-id" value={distinctId} required maxLength={255} onInput={(e) => setDistinctId((e.target as HTMLInputElement).value)} />
        <button type="submit">Evaluate</button>
      </form>
      {evalError && <p class="error" role="alert">{evalError}</p>}
      {result && (
        <dl class="flag-result" aria-label="Evaluation result">
          <dt>Enabled</dt><dd>{result.enabled ? 'yes' : 'no'}</dd>
          <dt>Variant</dt><dd>{result.variant ?? '—'}</dd>
          <dt>Payload</dt><dd><code>{result.payload === null || result.payload === undefined ? '—' : JSON.stringify(result.payload)}</code></dd>
          <dt>Reason</dt><dd>{result.reason}</dd>
        </dl>
      )}

      <h3>History</h3>
      {!history ? <p role="status" class="loading">Loading history…</p> : history.length === 0 ? <p class="muted">No change recorded.</p> : (
        <ol class="flag-history" aria-label="Flag history">
          {history.map((e, i) => {
            const changes = changesOf(e);
            return (
              <li>
                <strong>{e.action}</strong> <span class="muted">{when(e.created_at)} · {actor(e)}</span>
                {changes.length > 0 && (
                  // The newest change is shown open; older ones open on demand.
                  <details open={i === 0}>
                    <summary>changed {changes.map((c) => c.field).join(', ')}</summary>
                    <FieldChangesTable changes={changes} caption={`Before and after: ${e.action} at ${when(e.created_at)}`} />
                  </details>
                )}
              </li>
            );
          })}
        </ol>
      )}
    </section>
  );
}
