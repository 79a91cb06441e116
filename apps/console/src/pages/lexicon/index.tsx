import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import { matchesWords, SearchBox, SearchedList, setUrlParam, urlParam, useUrlSearch } from '../../components/searchable-list.js';
import type { LexiconEvent, LexiconProperty } from '../../types.js';
import { lexiconApi, type LexiconWrite } from './api.js';
import { EventsTabs } from './tabs.js';
import './lexicon.css';

type Kind = 'events' | 'properties';
/** One row of either list: the event's name or the property's key as `name`. */
interface Entry {
  name: string;
  displayName: string | null;
  description: string | null;
  tags: string[];
  hidden: boolean;
  observed: boolean;
  count: number;
  lastSeen: number | null;
  samples: string[];
}
interface Draft { displayName: string; description: string; tags: string; hidden: boolean }

const fromEvent = (e: LexiconEvent): Entry => ({ ...e, lastSeen: e.last_seen, samples: [] });
const fromProperty = (p: LexiconProperty): Entry => ({ ...p, name: p.key, lastSeen: null, samples: p.sampleValues });
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** A name as a piece of an element id (no spaces or other characters an IDREF cannot hold), one to one. */
const idPart = (name: string) => [...name].map((c) => (/[\w-]/.test(c) ? c : `_${c.codePointAt(0)!.toString(16)}_`)).join('');

/** Every word of the search in the name, display name, description or tags, any case. */
export const matchesEntry = (e: Entry, q: string) => matchesWords([e.name, e.displayName ?? '', e.description ?? '', ...e.tags].join(' '), q);

/** The edit form's fields as the lexicon's PUT body: blank texts clear, tags split on commas. */
export const toWrite = (d: Draft): LexiconWrite => ({
  displayName: d.displayName.trim() || null,
  description: d.description.trim() || null,
  tags: [...new Set(d.tags.split(',').map((t) => t.trim()).filter(Boolean))],
  hidden: d.hidden,
});

/**
 * `/projects/{projectId}/events/lexicon`: the project's events and properties as the lexicon
 * lists them (GET /api/lexicon/events, /properties: what data carries merged with what people
 * wrote about it), searchable; members edit an entry's display name, description, tags and
 * whether it is hidden (hidden names are left out of the analysis pickers). Viewers read.
 */
export function LexiconPage(props: { projectId: string }) {
  const { canWrite, projects } = useShell();
  const [kind, setKind] = useState<Kind>(() => (urlParam('kind') === 'properties' ? 'properties' : 'events'));
  const [lists, setLists] = useState<Record<Kind, Entry[] | null>>({ events: null, properties: null });
  const [error, setError] = useState<string | null>(null);
  const [q, search] = useUrlSearch();
  const [editing, setEditing] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const project = projects.find((p) => String(p.id) === props.projectId);

  useEffect(() => {
    document.title = `Lexicon · ${project?.name ?? 'Tally'}`;
    setLists({ events: null, properties: null });
    setError(null);
    lexiconApi.events(props.projectId).then((e) => setLists((l) => ({ ...l, events: e.map(fromEvent) })), (e: Error) => setError(e.message));
    lexiconApi.properties(props.projectId).then((p) => setLists((l) => ({ ...l, properties: p.map(fromProperty) })), (e: Error) => setError(e.message));
  }, [props.projectId]);

  const list = lists[kind];
  const shown = useMemo(() => (list ?? []).filter((e) => matchesEntry(e, q)), [list, q]);
  const noun = kind === 'events' ? 'events' : 'properties';

  const pick = (k: Kind) => {
    setKind(k);
    setEditing(null);
    setUrlParam('kind', k === 'properties' ? k : '');
  };
  const saved = (entry: Entry) => {
    setLists((l) => ({ ...l, [kind]: (l[kind] ?? []).map((e) => (e.name === entry.name ? entry : e)) }));
    setEditing(null);
    setStatus(`Saved ${entry.name}.`);
  };

  return (
    <section class="page lexicon-page">
      <div class="page-head"><h1>Lexicon</h1></div>
      <EventsTabs projectId={props.projectId} current="/lexicon" />
      <p class="muted">
        What each event and property means. Hidden ones stay listed here but are left out of the pickers of Insights, cohorts and experiments.
        {!canWrite && ' Members and above can edit entries.'}
      </p>
      <div class="lexicon-tools">
        <div class="tabs" role="group" aria-label="Lexicon list">
          <button type="button" aria-pressed={kind === 'events'} onClick={() => pick('events')}>Events</button>
          <button type="button" aria-pressed={kind === 'properties'} onClick={() => pick('properties')}>Properties</button>
        </div>
        <SearchBox id="lexicon-search" class="lexicon-search" label="Search the lexicon" placeholder="name, description or tag" value={q} onSearch={search} />
      </div>
      <SearchedList items={list} shown={shown} noun={noun} error={error} status={status} loading="Loading the lexicon…"
        empty={`No ${noun} yet: they appear here once events are sent.`} noMatch={`No ${kind === 'events' ? 'event' : 'property'} matches “${q}”.`} class="lexicon-list">
          <table aria-label={kind === 'events' ? 'Events' : 'Properties'}>
            <thead>
              <tr>
                <th scope="col">{kind === 'events' ? 'Event' : 'Property'}</th><th scope="col">Description</th><th scope="col">Tags</th>
                <th scope="col">{kind === 'events' ? 'Seen' : 'Events with it'}</th><th scope="col">Status</th>
                {canWrite && <th scope="col"><span class="sr-only">Actions</span></th>}
              </tr>
            </thead>
            <tbody>
              {shown.map((e) => [
                <tr key={e.name} class={e.hidden ? 'hidden-entry' : undefined}>
                  <th scope="row">
                    {e.displayName && <span class="display-name">{e.displayName}</span>}
                    <code>{e.name}</code>
                  </th>
                  <td>{e.description ?? <span class="muted">—</span>}</td>
                  <td>{e.tags.length ? <ul class="chips lexicon-tags">{e.tags.map((t) => <li>{t}</li>)}</ul> : <span class="muted">—</span>}</td>
                  <td>
                    {e.count.toLocaleString()}
                    {e.lastSeen !== null && <span class="desc">last <time dateTime={day(e.lastSeen)}>{day(e.lastSeen)}</time></span>}
                    {e.samples.length > 0 && <span class="desc" title={e.samples.join(', ')}>e.g. {e.samples.slice(0, 3).join(', ')}</span>}
                  </td>
                  <td>{[e.hidden ? 'Hidden' : 'Shown', e.observed ? '' : 'not seen yet'].filter(Boolean).join(', ')}</td>
                  {canWrite && (
                    <td>
                      <button type="button" id={`edit-${kind}-${idPart(e.name)}`} aria-expanded={editing === e.name} aria-controls={editing === e.name ? `form-${kind}-${idPart(e.name)}` : undefined}
                        aria-label={`Edit ${e.name}`} onClick={() => setEditing(editing === e.name ? null : e.name)}>Edit</button>
                    </td>
                  )}
                </tr>,
                canWrite && editing === e.name && (
                  <tr key={`${e.name}-form`} class="edit-row">
                    <td colSpan={6}>
                      <EntryForm id={`form-${kind}-${idPart(e.name)}`} entry={e} onCancel={() => { setEditing(null); document.getElementById(`edit-${kind}-${idPart(e.name)}`)?.focus(); }}
                        save={async (body) => {
                          const out = kind === 'events' ? fromEvent(await lexiconApi.writeEvent(props.projectId, e.name, body)) : fromProperty(await lexiconApi.writeProperty(props.projectId, e.name, body));
                          saved(out);
                          requestAnimationFrame(() => document.getElementById(`edit-${kind}-${idPart(e.name)}`)?.focus());
                        }} />
                    </td>
                  </tr>
                ),
              ])}
            </tbody>
          </table>
      </SearchedList>
    </section>
  );
}

/** One entry's edit form: the API's refusal is shown in its words and the fields keep what was typed. */
function EntryForm(props: { id: string; entry: Entry; save: (body: LexiconWrite) => Promise<void>; onCancel: () => void }) {
  const { entry } = props;
  const [d, setD] = useState<Draft>({ displayName: entry.displayName ?? '', description: entry.description ?? '', tags: entry.tags.join(', '), hidden: entry.hidden });
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const id = props.id;
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await props.save(toWrite(d));
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id={id} class="lexicon-form" aria-label={`Edit ${entry.name}`} onSubmit={submit}>
      <div class="field">
        <label for={`${id}-display`}>Display name</label>
        <input id={`${id}-display`} ref={first} value={d.displayName} maxLength={200} onInput={(e) => setD({ ...d, displayName: (e.target as HTMLInputElement).value })} />
      </div>
      <div class="field wide-field">
        <label for={`${id}-description`}>Description</label>
        <textarea id={`${id}-description`} rows={3} value={d.description} onInput={(e) => setD({ ...d, description: (e.target as HTMLTextAreaElement).value })} />
      </div>
      <div class="field">
        <label for={`${id}-tags`}>Tags</label>
        <input id={`${id}-tags`} value={d.tags} aria-describedby={`${id}-tags-hint`} onInput={(e) => setD({ ...d, tags: (e.target as HTMLInputElement).value })} />
        <span id={`${id}-tags-hint`} class="muted small">Separated by commas.</span>
      </div>
      <label class="row"><input type="checkbox" checked={d.hidden} onChange={(e) => setD({ ...d, hidden: (e.target as HTMLInputElement).checked })} /> Hidden from pickers</label>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>{busy ? 'Saving…' : 'Save'}</button>
        <button type="button" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  );
}
