import { useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import { Link } from '../../router.js';
import { peopleApi, type Cohort } from './api.js';
import './people.css';

/** What a cohort's static list may hold (LIMITS.cohortStaticIds of the API). */
export const STATIC_COHORT_MAX = 1000;

/**
 * "Save as cohort" under a list of people (a drill-down, a funnel's drop-off): asks a name, reads
 * every id of the list (`loadIds`, all pages) and saves a cohort holding exactly those people (a
 * `static` criterion). Members only; a refusal shows the API's words and keeps the name.
 */
export function SaveAsCohort(props: { projectId: string; title: string; total: number; loadIds: () => Promise<string[]> }) {
  const { canWrite } = useShell();
  const [open, setOpen] = useState(false);
  const [name, setName] = useState(props.title);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState<Cohort | null>(null);
  if (!canWrite) return null;
  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      if (props.total > STATIC_COHORT_MAX) throw new Error(`A cohort saved from a list holds at most ${STATIC_COHORT_MAX.toLocaleString()} people; this list has ${props.total.toLocaleString()}. Narrow the query, or build the cohort from criteria.`);
      const ids = await props.loadIds();
      const c = await peopleApi.createCohort(props.projectId, { name: name.trim(), description: null, definition: { op: 'and', criteria: [{ kind: 'static', ids }] } });
      setSaved(c);
      setOpen(false);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="save-as-cohort">
      {!open && <button type="button" onClick={() => { setOpen(true); setSaved(null); }}>Save as cohort</button>}
      {saved && (
        <p role="status">
          Saved the cohort <Link href={`/projects/${props.projectId}/people?tab=cohorts&cohort=${saved.id}`}>{saved.name}</Link> ({saved.size.toLocaleString()} {saved.size === 1 ? 'person' : 'people'}).
        </p>
      )}
      {open && (
        <form class="row" aria-label="Save as cohort" onSubmit={save} noValidate>
          <div class="field grow"><label for="save-cohort-name">Cohort name</label>
            <input id="save-cohort-name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} /></div>
          <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : `Save ${props.total.toLocaleString()} ${props.total === 1 ? 'person' : 'people'}`}</button>
          <button type="button" onClick={() => { setOpen(false); setError(null); }}>Cancel</button>
        </form>
      )}
      {error && <p class="error" role="alert">{error}</p>}
    </div>
  );
}
