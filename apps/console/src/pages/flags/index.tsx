import { useEffect, useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import { Link, navigate } from '../../router.js';
import { flagsApi, type Flag } from './api.js';
import { FlagDetail } from './detail.js';
import './flags.css';

const status = (f: Flag) => (f.archived_at !== null ? 'Archived' : f.active ? 'Active' : 'Inactive');
const shape = (f: Flag) => {
  const parts = [`${f.rules.length} ${f.rules.length === 1 ? 'rule' : 'rules'}`];
  if (f.variants.length) parts.push(`${f.variants.length} variants`);
  if (f.rules.length === 1 && !f.rules[0].distinctIds?.length && f.rules[0].cohortId === undefined) parts.push(`${f.rules[0].rolloutPct} %`);
  return parts.join(' · ');
};

/**
 * `/projects/{projectId}/flags` (and `/flags/{flagId}` for one flag): the project's flags,
 * a form to create one (member or more), and the chosen flag's editor, audit history and
 * evaluation for a typed distinct id.
 */
export function FlagsPage(props: { projectId: string; flagId?: string }) {
  const { canWrite, projects } = useShell();
  const [flags, setFlags] = useState<Flag[] | null>(null);
  const [archived, setArchived] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const [version, setVersion] = useState(0);
  const project = projects.find((p) => String(p.id) === props.projectId);

  useEffect(() => {
    document.title = `Flags · ${project?.name ?? 'Tally'}`;
  }, [props.projectId]);
  useEffect(() => {
    setFlags(null);
    flagsApi.list(props.projectId, archived).then(setFlags, (e) => setError(e.message));
  }, [props.projectId, archived, version]);

  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const f = await flagsApi.create(props.projectId, { key: key.trim(), name: name.trim() || key.trim() });
      setKey('');
      setName('');
      setVersion((v) => v + 1);
      navigate(`/projects/${props.projectId}/flags/${f.id}`);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <section class="page flags-page">
      <div class="page-head">
        <h1>Flags</h1>
        <label class="switch"><input type="checkbox" checked={archived} onChange={(e) => setArchived((e.target as HTMLInputElement).checked)} /> Show archived</label>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="flags-layout">
        <div class="flags-list">
          {!flags ? <p role="status" class="loading">Loading flags…</p> : flags.length === 0 ? <p class="muted">No flag yet.</p> : (
            <div class="table-wrap">
              <table>
                <caption class="sr-only">Feature flags</caption>
                <thead><tr><th scope="col">Key</th><th scope="col">Name</th><th scope="col">Status</th><th scope="col">Rollout</th><th scope="col">Managed by</th></tr></thead>
                <tbody>
                  {flags.map((f) => (
                    <tr class={String(f.id) === props.flagId ? 'selected' : ''}>
                      <td><Link href={`/projects/${props.projectId}/flags/${f.id}`} aria-current={String(f.id) === props.flagId ? 'page' : undefined}>{f.key}</Link></td>
                      <td>{f.name}</td>
                      <td>{status(f)}</td>
                      <td>{shape(f)}</td>
                      <td>{f.managed_by ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {canWrite && (
            <form class="inline-form" onSubmit={create} aria-label="New flag">
              <div class="field">
                <label for="new-flag-key">New flag key</label>
                <input id="new-flag-key" value={key} required pattern="[a-z0-9][a-z0-9_\-]*" maxLength={200} placeholder="new-checkout"
                  onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
              </div>
              <div class="field">
                <label for="new-flag-name">New flag name</label>
                <input id="new-flag-name" value={name} maxLength={200} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
              </div>
              <button type="submit">Create flag</button>
            </form>
          )}
        </div>
        {props.flagId && (
          <FlagDetail key={props.flagId} projectId={props.projectId} flagId={props.flagId} onChanged={() => setVersion((v) => v + 1)} />
        )}
      </div>
    </section>
  );
}
