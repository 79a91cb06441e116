import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import { queryString } from '../../api.js';
import { Link, navigate, usePath } from '../../router.js';
import { FieldChangesTable, fieldChanges } from '../../components/diff.js';
import { auditApi, type AuditEntry, type AuditFilters } from './api.js';
import { ACTOR_KINDS, TARGET_KINDS, spoken } from './kinds.js';
import './audit.css';

/** The filters as the address holds them (`?targetKind=flag&actorKind=token&from=2026-11-01…`), so a view can be shared. */
interface UrlFilters {
  projectId: string;
  action: string;
  actorKind: string;
  targetKind: string;
  /** UTC days, both inclusive. */
  from: string;
  to: string;
  limit: string;
}
const FILTER_KEYS: Array<keyof UrlFilters> = ['projectId', 'action', 'actorKind', 'targetKind', 'from', 'to', 'limit'];
const readFilters = (search: string): UrlFilters => {
  const p = new URLSearchParams(search);
  return Object.fromEntries(FILTER_KEYS.map((k) => [k, p.get(k) ?? ''])) as unknown as UrlFilters;
};

const DAY_MS = 86_400_000;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const dayStart = (day: string) => Date.parse(`${day}T00:00:00Z`);

/** The API's filters from the address's; a day that is not one is named before anything is asked. */
function apiFilters(f: UrlFilters): AuditFilters {
  for (const k of ['from', 'to'] as const) {
    if (f[k] && (!DAY.test(f[k]) || Number.isNaN(dayStart(f[k])))) throw new Error(`${k}: must be a day, YYYY-MM-DD`);
  }
  return {
    projectId: f.projectId || undefined,
    action: f.action || undefined,
    actorKind: f.actorKind || undefined,
    targetKind: f.targetKind || undefined,
    from: f.from ? dayStart(f.from) : undefined,
    // The last day is inclusive: up to the next day's start.
    to: f.to ? dayStart(f.to) + DAY_MS : undefined,
    limit: f.limit || undefined,
  };
}

const COLUMNS = ['When', 'Who', 'Action', 'Target', 'Project', 'Changes'];
const ACTOR_LABELS: Record<string, string> = { user: 'A person', token: 'A machine-access token', superadmin: 'The superadmin key', operator: 'The operator' };

/** A snapshot's own name for what it is, when it has one. */
/**
 * The rows on screen, the next page's cursor and the status line's words about those rows, set in
 * one update, for the filters they answer (`search`, the address's query): a status line is never
 * about other rows than the table's, and neither is shown for filters they do not answer.
 */
interface Listing { search: string; entries: AuditEntry[]; cursor: string | null; notice: string }
const entriesWord = (n: number) => `${n} ${n === 1 ? 'entry' : 'entries'}`;

const nameIn = (snapshot: unknown): string | undefined => {
  if (typeof snapshot !== 'object' || snapshot === null) return undefined;
  const s = snapshot as Record<string, unknown>;
  for (const k of ['name', 'key', 'email', 'description']) if (typeof s[k] === 'string' && s[k]) return s[k] as string;
  return undefined;
};

/**
 * `/projects/{projectId}/audit-log`: every change in the organisation (all its projects and its
 * own settings), newest first, for admins and owners. Filters live in the address; "Load older"
 * follows `nextCursor`; a row's details show the fields the change changed.
 */
export function AuditLogPage(props: { projectId: string }) {
  const { canAdmin, role, account } = useShell();
  useEffect(() => {
    document.title = `Audit log · ${account.organization?.name ?? 'Tally'}`;
  }, []);
  if (!canAdmin) {
    return (
      <section class="panel narrow">
        <h1>Audit log</h1>
        <p role="alert">The audit log is for the organisation's admins and owners; your role is {role}. Ask an admin if you need to know who changed something.</p>
      </section>
    );
  }
  return <AuditLog projectId={props.projectId} />;
}

function AuditLog(props: { projectId: string }) {
  const { account, projects } = useShell();
  const path = usePath();
  const search = path.split('?')[1] ?? '';
  const url = useMemo(() => readFilters(search), [search]);
  const base = `/projects/${props.projectId}/audit-log`;
  // The superadmin has no organisation of its own: it reads the one this project belongs to.
  const current = projects.find((p) => String(p.id) === props.projectId);
  const superadminOrgId = account.superadmin ? current?.org_id ?? undefined : undefined;
  const orgProjects = account.superadmin ? projects.filter((p) => p.org_id === current?.org_id) : projects;

  const [draft, setDraft] = useState<UrlFilters>(url);
  const [listing, setListing] = useState<Listing | null>(null);
  const [loadingOlder, setLoadingOlder] = useState(false);
  const [failure, setFailure] = useState<{ search: string; message: string } | null>(null);
  const [open, setOpen] = useState<Set<number>>(new Set());
  const [people, setPeople] = useState<Map<number, string>>(new Map());
  // Until the new filters' page comes (the address changes a frame before the fetch starts), the
  // previous filters' rows and words are not shown: the page says it is loading.
  const shown = listing?.search === search ? listing : null;
  const entries = shown?.entries ?? null;
  const cursor = shown?.cursor ?? null;
  const error = failure?.search === search ? failure.message : null;
  const firstNew = useRef<number | null>(null);
  const table = useRef<HTMLTableElement>(null);

  useEffect(() => setDraft(url), [url]);
  useEffect(() => {
    auditApi.members(superadminOrgId).then(
      (ms) => setPeople(new Map(ms.filter((m) => m.user_id !== null).map((m) => [m.user_id!, m.email]))),
      () => setPeople(new Map()), // without the list, people show as "user #id"
    );
  }, [superadminOrgId]);
  useEffect(() => {
    let live = true;
    setFailure(null);
    setOpen(new Set());
    (async () => {
      try {
        const page = await auditApi.page(apiFilters(url), undefined, superadminOrgId);
        if (!live) return;
        setListing({ search, entries: page.entries, cursor: page.nextCursor, notice: `${entriesWord(page.entries.length)}${page.nextCursor ? ', older ones follow' : ''}.` });
      } catch (e) {
        if (live) setFailure({ search, message: (e as Error).message });
      }
    })();
    return () => void (live = false);
  }, [url, superadminOrgId]);
  // After "Load older", the keyboard goes on from the first row it added.
  useEffect(() => {
    if (firstNew.current === null) return;
    table.current?.querySelector<HTMLButtonElement>(`button[data-entry="${firstNew.current}"]`)?.focus();
    firstNew.current = null;
  }, [entries]);

  const apply = (next: UrlFilters) => navigate(base + queryString({ ...next }));
  const change = (patch: Partial<UrlFilters>) => {
    const next = { ...draft, ...patch };
    setDraft(next);
    apply(next);
  };
  const filtered = FILTER_KEYS.some((k) => k !== 'limit' && url[k]);

  const loadOlder = async () => {
    if (!cursor || !entries) return;
    setLoadingOlder(true);
    setFailure(null);
    try {
      const page = await auditApi.page(apiFilters(url), cursor, superadminOrgId);
      firstNew.current = page.entries[0]?.id ?? null;
      const all = [...entries, ...page.entries];
      setListing({ search, entries: all, cursor: page.nextCursor, notice: `${page.entries.length} older ${page.entries.length === 1 ? 'entry' : 'entries'} added; ${all.length} shown${page.nextCursor ? ', older ones follow' : ', the oldest reached'}.` });
    } catch (e) {
      setFailure({ search, message: (e as Error).message });
    } finally {
      setLoadingOlder(false);
    }
  };
  const toggle = (id: number) => {
    const next = new Set(open);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setOpen(next);
  };

  const who = (e: AuditEntry) => {
    const { kind, id, resource } = e.actor;
    if (kind === 'user') {
      const self = account.user?.id === id ? account.user.email ?? account.user.name : null;
      return (id !== null && people.get(id)) || self || `user #${id}`;
    }
    if (kind === 'token') return `token #${id}`;
    return resource ? `${kind} (${resource})` : kind;
  };
  const projectName = (id?: number) => (id === undefined ? '—' : projects.find((p) => p.id === id)?.name ?? `project #${id}`);
  const knownActions = [...new Set((entries ?? []).map((e) => e.action))].sort();

  return (
    <section class="page audit-page">
      <div class="page-head">
        <h1>Audit log</h1>
        <p class="muted">Every change in {account.organization?.name ?? 'this organisation'}, newest first.</p>
      </div>

      <form class="audit-filters" role="search" aria-label="Filter the audit log" onSubmit={(e) => { e.preventDefault(); apply(draft); }}>
        <div class="field">
          <label for="audit-target">Target kind</label>
          <select id="audit-target" value={draft.targetKind} onChange={(e) => change({ targetKind: (e.target as HTMLSelectElement).value })}>
            <option value="">Any</option>
            {TARGET_KINDS.map((k) => <option value={k}>{spoken(k)}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="audit-action">Action</label>
          <input id="audit-action" list="audit-actions" value={draft.action} placeholder="flag.updated" maxLength={60} pattern="[a-z_]+\.[a-z_]+"
            title="<target kind>.<verb>, e.g. project.created" onInput={(e) => setDraft({ ...draft, action: (e.target as HTMLInputElement).value.trim() })} />
          <datalist id="audit-actions">{knownActions.map((a) => <option value={a} />)}</datalist>
        </div>
        <div class="field">
          <label for="audit-actor">Actor kind</label>
          <select id="audit-actor" value={draft.actorKind} onChange={(e) => change({ actorKind: (e.target as HTMLSelectElement).value })}>
            <option value="">Anyone</option>
            {ACTOR_KINDS.map((k) => <option value={k}>{ACTOR_LABELS[k]}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="audit-project">Project</label>
          <select id="audit-project" value={draft.projectId} onChange={(e) => change({ projectId: (e.target as HTMLSelectElement).value })}>
            <option value="">All projects</option>
            {orgProjects.map((p) => <option value={String(p.id)}>{p.name}</option>)}
            {draft.projectId && !orgProjects.some((p) => String(p.id) === draft.projectId) && <option value={draft.projectId}>project #{draft.projectId}</option>}
          </select>
        </div>
        <div class="field">
          <label for="audit-from">From (UTC day)</label>
          <input id="audit-from" type="date" value={draft.from} max={draft.to || undefined} onChange={(e) => change({ from: (e.target as HTMLInputElement).value })} />
        </div>
        <div class="field">
          <label for="audit-to">To (UTC day)</label>
          <input id="audit-to" type="date" value={draft.to} min={draft.from || undefined} onChange={(e) => change({ to: (e.target as HTMLInputElement).value })} />
        </div>
        <div class="toolbar">
          <button type="submit" class="primary">Apply filters</button>
          {filtered && <Link href={base + queryString({ limit: url.limit })} class="button">Clear filters</Link>}
        </div>
      </form>

      {error && <p class="error" role="alert">{error}</p>}
      <p role="status" class="muted small">{shown?.notice ?? ''}</p>

      {!entries ? (!error && <p class="loading">Loading the audit log…</p>) : entries.length === 0 ? (
        <p class="muted">{filtered ? 'No change matches these filters.' : 'No change recorded yet.'}</p>
      ) : (
        <div class="audit-table">
          <table ref={table} role="table">
            <caption class="sr-only">Audit log, newest first</caption>
            <thead role="rowgroup"><tr role="row">{COLUMNS.map((c) => <th scope="col" role="columnheader">{c}</th>)}</tr></thead>
            <tbody role="rowgroup">
              {entries.flatMap((e) => {
                const label = nameIn(e.after) ?? nameIn(e.before);
                const detailId = `audit-${e.id}-changes`;
                const row = (
                  <tr role="row" class={open.has(e.id) ? 'open' : ''}>
                    <td role="cell" data-label="When"><time dateTime={new Date(e.at).toISOString()}>{new Date(e.at).toLocaleString()}</time></td>
                    <td role="cell" data-label="Who" class="who-cell"><span>{who(e)}</span></td>
                    <td role="cell" data-label="Action"><code>{e.action}</code></td>
                    <td role="cell" data-label="Target"><span>{spoken(e.target.kind)}{e.target.id !== null && ` #${e.target.id}`}{label && <span class="muted"> {label}</span>}</span></td>
                    <td role="cell" data-label="Project"><span>{projectName(e.projectId)}</span></td>
                    <td role="cell" data-label="Changes">
                      <button type="button" data-entry={e.id} aria-expanded={open.has(e.id)} aria-controls={open.has(e.id) ? detailId : undefined} onClick={() => toggle(e.id)}>
                        Details<span class="sr-only"> of entry {e.id}</span>
                      </button>
                    </td>
                  </tr>
                );
                if (!open.has(e.id)) return [row];
                return [row, (
                  <tr role="row" class="audit-detail" id={detailId}>
                    <td role="cell" colSpan={COLUMNS.length}>
                      <p class="small muted">{e.before === null ? 'Created with:' : e.after === null ? 'Deleted; it was:' : 'Changed fields:'}</p>
                      <FieldChangesTable changes={fieldChanges(e.before, e.after)} caption={`Changes of entry ${e.id} (${e.action})`} />
                    </td>
                  </tr>
                )];
              })}
            </tbody>
          </table>
        </div>
      )}
      {cursor && entries && (
        <div class="toolbar audit-more">
          <button type="button" onClick={loadOlder} disabled={loadingOlder}>{loadingOlder ? 'Loading…' : 'Load older'}</button>
        </div>
      )}
    </section>
  );
}
