import { useEffect } from 'preact/hooks';
import { useShell } from '../context.js';
import { Link, navigate } from '../router.js';

/** The start: the first project's boards, or a list to choose from. */
export function HomePage() {
  const { projects, account } = useShell();
  useEffect(() => {
    document.title = 'Tally';
    if (projects.length === 1) navigate(`/projects/${projects[0].id}/boards`, { replace: true });
  }, [projects]);
  return (
    <section class="panel">
      <h1>Projects</h1>
      {projects.length === 0 ? (
        <p>{account.superadmin ? 'No project yet: create an organisation and a project with the /admin API.' : 'Your organisation has no project yet.'}</p>
      ) : (
        <ul class="list">
          {projects.map((p) => (
            <li><Link href={`/projects/${p.id}/boards`}>{p.name}</Link> <span class="muted">{p.event_count.toLocaleString()} events</span></li>
          ))}
        </ul>
      )}
    </section>
  );
}
