import { useEffect, useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import type { Cohort } from '../../types.js';
import { api } from '../../api.js';
import { Link, navigate, usePath } from '../../router.js';
import { personHref } from '../../links.js';
import { peopleApi, type PrivacyRequest, type PrivacyType, type UsersResult } from './api.js';
import { CohortBuilder } from './cohort-builder.js';
import './people.css';

export { PersonPage } from './person.js';

type Tab = 'people' | 'cohorts' | 'privacy';
const when = (ms: number | null) => (ms === null ? '—' : new Date(ms).toLocaleString());

/**
 * `/projects/{projectId}/people`: identities with their profiles (searchable), the project's
 * cohorts with their members (`?tab=cohorts&cohort=ID`), and privacy requests (`?tab=privacy`;
 * admins read, export and access, owners also delete). A person's page is `people/{distinctId}`.
 */
export function PeoplePage(props: { projectId: string }) {
  const { canAdmin, projects } = useShell();
  const path = usePath();
  const params = new URLSearchParams(path.split('?')[1] ?? '');
  const tab = (['people', 'cohorts', 'privacy'].includes(params.get('tab') ?? '') ? params.get('tab') : 'people') as Tab;
  const project = projects.find((p) => String(p.id) === props.projectId);
  useEffect(() => {
    document.title = `People · ${project?.name ?? 'Tally'}`;
  }, [props.projectId]);
  const base = `/projects/${props.projectId}/people`;
  const tabs: Array<[Tab, string, string]> = [['people', 'People', base], ['cohorts', 'Cohorts', `${base}?tab=cohorts`]];
  if (canAdmin) tabs.push(['privacy', 'Privacy requests', `${base}?tab=privacy`]);

  return (
    <section class="page people-page">
      <div class="page-head">
        <h1>People</h1>
        <nav aria-label="People sections" class="tabs">
          {tabs.map(([id, label, href]) => <Link href={href} class={`button ${tab === id ? 'active' : ''}`} aria-current={tab === id ? 'page' : undefined}>{label}</Link>)}
        </nav>
      </div>
      {tab === 'people' && <PeopleList projectId={props.projectId} />}
      {tab === 'cohorts' && <Cohorts projectId={props.projectId} cohortId={params.get('cohort') ?? undefined} />}
      {tab === 'privacy' && canAdmin && <PrivacyRequests projectId={props.projectId} />}
    </section>
  );
}

function PeopleList(props: { projectId: string }) {
  const [search, setSearch] = useState('');
  const [asked, setAsked] = useState('');
  const [offset, setOffset] = useState(0);
  const [result, setResult] = useState<UsersResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setResult(null);
    peopleApi.users(props.projectId, asked, offset).then(setResult, (e) => setError(e.message));
  }, [props.projectId, asked, offset]);
  return (
    <>
      <form class="inline-form" role="search" onSubmit={(e) => { e.preventDefault(); setOffset(0); setAsked(search.trim()); }}>
        <label for="people-search">Search people</label>
        <input id="people-search" type="search" value={search} maxLength={255} placeholder="id or profile value" onInput={(e) => setSearch((e.target as HTMLInputElement).value)} />
        <button type="submit">Search</button>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {!result ? <p role="status" class="loading">Loading people…</p> : result.users.length === 0 ? <p class="muted">Nobody{asked ? ` matches “${asked}”` : ' yet'}.</p> : (
        <>
          <div class="table-wrap">
            <table aria-label="People">
              <thead><tr><th scope="col">Distinct id</th><th scope="col">Name or email</th><th scope="col">First seen</th><th scope="col">Last seen</th><th scope="col">Events</th></tr></thead>
              <tbody>
                {result.users.map((u) => (
                  <tr>
                    <td><Link href={personHref(props.projectId, u.distinct_id)}>{u.distinct_id}</Link></td>
                    <td>{String(u.properties.$name ?? u.properties.name ?? u.properties.$email ?? u.properties.email ?? '')}</td>
                    <td>{when(u.first_seen)}</td>
                    <td>{when(u.last_seen)}</td>
                    <td>{u.event_count.toLocaleString()}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="toolbar">
            <span class="muted small">{offset + 1}–{offset + result.users.length} of {result.total.toLocaleString()}</span>
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - 50))}>Previous page</button>
            <button type="button" disabled={offset + result.users.length >= result.total} onClick={() => setOffset(offset + 50)}>Next page</button>
          </div>
        </>
      )}
    </>
  );
}

function Cohorts(props: { projectId: string; cohortId?: string }) {
  const { canWrite } = useShell();
  const [cohorts, setCohorts] = useState<Cohort[] | null>(null);
  const [members, setMembers] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [version, setVersion] = useState(0);
  const creating = props.cohortId === 'new';
  useEffect(() => {
    api.cohorts(props.projectId).then(setCohorts, (e) => setError(e.message));
  }, [props.projectId, version]);
  useEffect(() => {
    setMembers(null);
    if (props.cohortId && !creating) peopleApi.members(Number(props.cohortId)).then((m) => setMembers(m.members), (e) => setError(e.message));
  }, [props.cohortId, version]);
  const chosen = cohorts?.find((c) => String(c.id) === props.cohortId);
  const base = `/projects/${props.projectId}/people?tab=cohorts`;
  const saved = (c: Cohort) => {
    setVersion((v) => v + 1);
    navigate(`${base}&cohort=${c.id}`);
  };
  return (
    <div class="people-split">
      <div>
        {canWrite && <div class="toolbar cohort-toolbar"><button type="button" onClick={() => navigate(`${base}&cohort=new`)}>New cohort</button></div>}
        {error && <p class="error" role="alert">{error}</p>}
        {!cohorts ? <p role="status" class="loading">Loading cohorts…</p> : cohorts.length === 0 ? <p class="muted">No cohort yet.</p> : (
          <ul class="list cohort-list" aria-label="Cohorts">
            {cohorts.map((c) => (
              <li>
                <Link href={`${base}&cohort=${c.id}`} aria-current={String(c.id) === props.cohortId ? 'page' : undefined}>{c.name}</Link>
                <span class="muted"> · {c.size.toLocaleString()} {c.size === 1 ? 'person' : 'people'}{c.description ? ` · ${c.description}` : ''}</span>
              </li>
            ))}
          </ul>
        )}
      </div>
      {creating && canWrite && (
        <CohortBuilder projectId={props.projectId} canWrite onSaved={saved} onCancel={() => navigate(base)} />
      )}
      {props.cohortId && !creating && (
        <div>
          {chosen && (
            <CohortBuilder key={`${chosen.id}-${chosen.updated_at}`} projectId={props.projectId} cohort={chosen} canWrite={canWrite} onSaved={saved}
              onDeleted={() => { setVersion((v) => v + 1); navigate(base); }} />
          )}
          <section class="panel" aria-labelledby="cohort-title">
            <h2 id="cohort-title">{chosen ? chosen.name : `Cohort ${props.cohortId}`}: members</h2>
            {!members ? <p role="status" class="loading">Loading members…</p> : members.length === 0 ? <p class="muted">No member now.</p> : (
              <ul class="list" aria-label="Cohort members">
                {members.map((m) => <li><Link href={personHref(props.projectId, m)}>{m}</Link></li>)}
              </ul>
            )}
          </section>
        </div>
      )}
    </div>
  );
}

function PrivacyRequests(props: { projectId: string }) {
  const { role } = useShell();
  const [requests, setRequests] = useState<PrivacyRequest[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [type, setType] = useState<PrivacyType>('access');
  const [ids, setIds] = useState('');
  const [version, setVersion] = useState(0);
  const owner = role === 'owner';
  useEffect(() => {
    let t: ReturnType<typeof setTimeout> | undefined;
    peopleApi.privacyRequests(props.projectId).then((rs) => {
      setRequests(rs);
      // Requests run in the background: follow them while one is still open.
      if (rs.some((r) => r.status === 'pending' || r.status === 'running')) t = setTimeout(() => setVersion((v) => v + 1), 2000);
    }, (e) => setError(e.message));
    return () => clearTimeout(t);
  }, [props.projectId, version]);
  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    const list = ids.split(/[\n,]/).map((s) => s.trim()).filter(Boolean);
    if (type === 'delete' && !confirm(`Delete everything stored for ${list.length} ${list.length === 1 ? 'identity' : 'identities'}? This cannot be undone.`)) return;
    try {
      await peopleApi.createPrivacyRequest(props.projectId, type, list);
      setIds('');
      setVersion((v) => v + 1);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const download = async (r: PrivacyRequest) => {
    try {
      const text = await peopleApi.privacyDownload(r.id);
      const a = document.createElement('a');
      a.href = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' }));
      a.download = `privacy-request-${r.id}.ndjson`;
      a.click();
      URL.revokeObjectURL(a.href);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <>
      <form class="panel privacy-form" onSubmit={create} aria-label="New privacy request">
        <div class="row">
          <div class="field"><label for="privacy-type">Request</label>
            <select id="privacy-type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value as PrivacyType)}>
              <option value="access">Access (download what is stored)</option>
              <option value="export">Export</option>
              {owner && <option value="delete">Delete (owners)</option>}
            </select></div>
          <div class="field grow"><label for="privacy-ids">Distinct ids (one a line; each one's whole identity)</label>
            <textarea id="privacy-ids" rows={2} required value={ids} onInput={(e) => setIds((e.target as HTMLTextAreaElement).value)} /></div>
          <button type="submit">Create request</button>
        </div>
      </form>
      {error && <p class="error" role="alert">{error}</p>}
      {!requests ? <p role="status" class="loading">Loading requests…</p> : requests.length === 0 ? <p class="muted">No privacy request yet.</p> : (
        <div class="table-wrap">
          <table aria-label="Privacy requests">
            <thead><tr><th scope="col">Request</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Completed</th><th scope="col"><span class="sr-only">Download</span></th></tr></thead>
            <tbody>
              {requests.map((r) => (
                <tr>
                  <td>#{r.id}</td><td>{r.type}</td><td>{r.status}{r.error ? `: ${r.error}` : ''}</td><td>{when(r.created_at)}</td><td>{when(r.completed_at)}</td>
                  <td>{r.type !== 'delete' && r.status === 'completed' && <button type="button" onClick={() => download(r)}>Download #{r.id}</button>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
