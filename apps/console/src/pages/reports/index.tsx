import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from '../../api.js';
import { matchesWords, SearchBox, SearchedList, useUrlSearch } from '../../components/searchable-list.js';
import { useShell } from '../../context.js';
import { Link } from '../../router.js';
import type { SavedReport } from '../../types.js';
import './reports.css';

const TYPE_LABEL: Partial<Record<string, string>> = { segmentation: 'Trend', funnel: 'Funnel', retention: 'Retention', flows: 'Flows', sessions: 'Sessions' };
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** Every word of the search in the report's name or description, any case. */
export const matchesSearch = (r: Pick<SavedReport, 'name' | 'description'>, q: string) => matchesWords(`${r.name} ${r.description ?? ''}`, q);

/**
 * The project's saved reports, newest change first: each a link to the report by its name, a
 * search over names and descriptions, and (member or more) delete, which also takes the report's
 * cards off every board, as the confirmation says.
 */
export function ReportsPage(props: { projectId: string }) {
  const { canWrite, projects } = useShell();
  const [reports, setReports] = useState<SavedReport[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState('');
  const [q, search] = useUrlSearch();
  const project = projects.find((p) => String(p.id) === props.projectId);

  useEffect(() => {
    document.title = `Reports · ${project?.name ?? 'Tally'}`;
    setReports(null);
    api.reports(props.projectId).then((r) => setReports([...r].sort((a, b) => b.updated_at - a.updated_at || b.id - a.id)), (e) => setError(e.message));
  }, [props.projectId]);

  const shown = useMemo(() => (reports ?? []).filter((r) => matchesSearch(r, q)), [reports, q]);

  const remove = async (r: SavedReport) => {
    if (!confirm(`Delete the report "${r.name}"? Its cards on boards are removed too.`)) return;
    setError(null);
    try {
      await api.deleteReport(r.id);
      setReports((list) => (list ?? []).filter((x) => x.id !== r.id));
      setStatus(`Deleted "${r.name}".`);
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <section class="page">
      <div class="page-head">
        <h1>Reports</h1>
        <Link class="button" href={`/projects/${props.projectId}/insights`}>New insight</Link>
      </div>
      <SearchBox id="reports-search" class="reports-search" label="Search reports" placeholder="name or description" value={q} onSearch={search} />
      <SearchedList items={reports} shown={shown} noun="reports" error={error} status={status} loading="Loading reports…"
        empty="No saved report yet. Build one in Insights and choose Save." noMatch={`No report matches “${q}”.`} class="reports-list">
          <table aria-label="Saved reports">
            <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Changed</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {shown.map((r) => (
                <tr key={r.id}>
                  <td><Link href={`/projects/${props.projectId}/reports/${r.id}`}>{r.name}</Link>{r.description && <span class="desc">{r.description}</span>}</td>
                  <td>{TYPE_LABEL[r.type] ?? r.type}</td>
                  <td><time dateTime={day(r.updated_at)}>{day(r.updated_at)}</time></td>
                  <td>{canWrite && <button type="button" aria-label={`Delete ${r.name}`} onClick={() => remove(r)}>Delete</button>}</td>
                </tr>
              ))}
            </tbody>
          </table>
      </SearchedList>
    </section>
  );
}
