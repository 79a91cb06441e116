import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import { matchesWords, SearchBox, SearchedList, useUrlSearch } from '../../components/searchable-list.js';
import { annotationsApi, type Annotation } from '../lexicon/api.js';
import { EventsTabs } from '../lexicon/tabs.js';
import '../lexicon/lexicon.css';

const today = () => new Date().toISOString().slice(0, 10);
/** Newest day first, then the newest note of a day. */
const byDate = (a: Annotation, b: Annotation) => (a.date < b.date ? 1 : a.date > b.date ? -1 : b.id - a.id);

/** Every word of the search in the note or its day, any case. */
export const matchesAnnotation = (a: Pick<Annotation, 'date' | 'description'>, q: string) => matchesWords(`${a.date} ${a.description}`, q);

/**
 * `/projects/{projectId}/events/annotations`: notes on days of the project's timeline (a launch,
 * an outage), newest day first, searchable; trend charts draw them as dashed lines. Members add,
 * edit and delete (POST, PUT, DELETE /api/annotations); viewers read.
 */
export function AnnotationsPage(props: { projectId: string }) {
  const { canWrite, projects } = useShell();
  const [list, setList] = useState<Annotation[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [q, search] = useUrlSearch();
  const [date, setDate] = useState(today);
  const [text, setText] = useState('');
  const [createError, setCreateError] = useState<string | null>(null);
  const [editing, setEditing] = useState<number | null>(null);
  const [status, setStatus] = useState('');
  const project = projects.find((p) => String(p.id) === props.projectId);

  useEffect(() => {
    document.title = `Annotations · ${project?.name ?? 'Tally'}`;
    setList(null);
    annotationsApi.list(props.projectId).then((a) => setList([...a].sort(byDate)), (e: Error) => setError(e.message));
  }, [props.projectId]);

  const shown = useMemo(() => (list ?? []).filter((a) => matchesAnnotation(a, q)), [list, q]);

  const create = async (ev: Event) => {
    ev.preventDefault();
    setCreateError(null);
    try {
      const a = await annotationsApi.create(props.projectId, { date, description: text });
      setList((l) => [...(l ?? []), a].sort(byDate));
      setText('');
      setStatus(`Added the note of ${a.date}.`);
    } catch (e) {
      // The fields keep what was typed.
      setCreateError((e as Error).message);
    }
  };
  const remove = async (a: Annotation) => {
    if (!confirm(`Delete the note of ${a.date} ("${a.description}")?`)) return;
    setError(null);
    try {
      await annotationsApi.remove(a.id);
      setList((l) => (l ?? []).filter((x) => x.id !== a.id));
      setStatus(`Deleted the note of ${a.date}.`);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <section class="page annotations-page">
      <div class="page-head"><h1>Annotations</h1></div>
      <EventsTabs projectId={props.projectId} current="/annotations" />
      <p class="muted">Notes on days of the timeline: trend charts draw each one as a dashed line on the bucket (day, week or month) holding its day.</p>
      {canWrite && (
        <form class="annotation-new" aria-label="New annotation" onSubmit={create}>
          <div class="field">
            <label for="annotation-date">Date</label>
            <input id="annotation-date" type="date" value={date} onInput={(e) => setDate((e.target as HTMLInputElement).value)} />
          </div>
          <div class="field grow">
            <label for="annotation-text">Note</label>
            <input id="annotation-text" value={text} placeholder="e.g. Pricing page launched" onInput={(e) => setText((e.target as HTMLInputElement).value)} />
          </div>
          <button type="submit" class="primary">Add annotation</button>
          {createError && <p class="error" role="alert">{createError}</p>}
        </form>
      )}
      <SearchBox id="annotations-search" class="annotations-search" label="Search annotations" placeholder="words or a day" value={q} onSearch={search} />
      <SearchedList items={list} shown={shown} noun="annotations" error={error} status={status} loading="Loading annotations…"
        empty={`No annotation yet.${canWrite ? ' Add one above.' : ''}`} noMatch={`No annotation matches “${q}”.`} class="annotations-list">
          <table aria-label="Annotations by date">
            <thead><tr><th scope="col">Date</th><th scope="col">Note</th>{canWrite && <th scope="col"><span class="sr-only">Actions</span></th>}</tr></thead>
            <tbody>
              {shown.map((a) => editing === a.id ? (
                <tr key={a.id} class="edit-row">
                  <td colSpan={3}>
                    <EditForm annotation={a} onCancel={() => { setEditing(null); focusLater(`edit-annotation-${a.id}`); }}
                      save={async (body) => {
                        const out = await annotationsApi.update(a.id, body);
                        setList((l) => (l ?? []).map((x) => (x.id === a.id ? out : x)).sort(byDate));
                        setEditing(null);
                        setStatus(`Saved the note of ${out.date}.`);
                        focusLater(`edit-annotation-${a.id}`);
                      }} />
                  </td>
                </tr>
              ) : (
                <tr key={a.id}>
                  <td><time dateTime={a.date}>{a.date}</time></td>
                  <td>{a.description}</td>
                  {canWrite && (
                    <td>
                      <button type="button" id={`edit-annotation-${a.id}`} aria-label={`Edit the note of ${a.date}: ${a.description}`} onClick={() => setEditing(a.id)}>Edit</button>{' '}
                      <button type="button" aria-label={`Delete the note of ${a.date}: ${a.description}`} onClick={() => remove(a)}>Delete</button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
      </SearchedList>
    </section>
  );
}

const focusLater = (id: string) => requestAnimationFrame(() => document.getElementById(id)?.focus());

/** One annotation's day and note; the API's refusal is shown in its words and the fields keep what was typed. */
function EditForm(props: { annotation: Annotation; save: (body: { date: string; description: string }) => Promise<void>; onCancel: () => void }) {
  const a = props.annotation;
  const [date, setDate] = useState(a.date);
  const [text, setText] = useState(a.description);
  const [error, setError] = useState<string | null>(null);
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setError(null);
    try {
      await props.save({ date, description: text });
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <form class="annotation-form" aria-label={`Edit the note of ${a.date}`} onSubmit={submit}>
      <div class="field">
        <label for={`annotation-${a.id}-date`}>Date</label>
        <input id={`annotation-${a.id}-date`} ref={first} type="date" value={date} onInput={(e) => setDate((e.target as HTMLInputElement).value)} />
      </div>
      <div class="field">
        <label for={`annotation-${a.id}-text`}>Note</label>
        <input id={`annotation-${a.id}-text`} value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="row">
        <button type="submit" class="primary">Save</button>
        <button type="button" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}
