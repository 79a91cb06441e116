import { useEffect, useState } from 'preact/hooks';
import { useShell } from '../../context.js';
import { Link } from '../../router.js';
import { peopleApi, type UserDetail } from './api.js';
import './people.css';

const when = (ms: number | null) => (ms === null ? '—' : new Date(ms).toLocaleString());
const day = (ms: number) => new Date(ms).toLocaleDateString(undefined, { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric' });
const value = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/**
 * `/projects/{projectId}/people/{distinctId}`: one identity (any of its ids leads here): its
 * profile, the ids of its identity cluster, and its latest events as a timeline by day.
 */
export function PersonPage(props: { projectId: string; distinctId: string }) {
  const { projects } = useShell();
  const [person, setPerson] = useState<UserDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  const id = props.distinctId;
  const project = projects.find((p) => String(p.id) === props.projectId);
  useEffect(() => {
    document.title = `${id} · People · ${project?.name ?? 'Tally'}`;
    setPerson(null);
    setError(null);
    peopleApi.user(props.projectId, id).then(setPerson, (e) => setError(e.status === 404 ? `Nobody with the id “${id}” in this project.` : e.message));
  }, [props.projectId, props.distinctId]);

  const back = <Link href={`/projects/${props.projectId}/people`}>All people</Link>;
  if (error) return <section class="page"><p>{back}</p><p class="error" role="alert">{error}</p></section>;
  if (!person) return <section class="page"><p role="status" class="loading">Loading {id}…</p></section>;

  const props_ = Object.entries(person.properties).sort(([a], [b]) => a.localeCompare(b));
  const days: Array<[string, UserDetail['events']]> = [];
  for (const e of person.events) {
    const d = day(e.time);
    if (days.length === 0 || days[days.length - 1][0] !== d) days.push([d, []]);
    days[days.length - 1][1].push(e);
  }
  return (
    <section class="page person-page">
      <p>{back}</p>
      <h1>{person.distinct_id}</h1>
      <dl class="person-stats" aria-label="Summary">
        <div><dt>First seen</dt><dd>{when(person.first_seen)}</dd></div>
        <div><dt>Last seen</dt><dd>{when(person.last_seen)}</dd></div>
        <div><dt>Events</dt><dd>{person.event_count.toLocaleString()}</dd></div>
        <div><dt>Sessions</dt><dd>{person.sessions.toLocaleString()}</dd></div>
      </dl>
      <div class="people-split">
        <div>
          <section class="panel" aria-labelledby="profile-title">
            <h2 id="profile-title">Profile</h2>
            {props_.length === 0 ? <p class="muted">No profile property.</p> : (
              <table aria-label="Profile properties">
                <tbody>{props_.map(([k, v]) => <tr><th scope="row">{k}</th><td>{value(v)}</td></tr>)}</tbody>
              </table>
            )}
          </section>
          <section class="panel" aria-labelledby="cluster-title">
            <h2 id="cluster-title">Identity cluster</h2>
            <ul class="list" aria-label="Identity cluster">
              {person.distinct_ids.map((d, i) => <li><code>{d}</code>{i === 0 && <span class="muted"> (canonical)</span>}</li>)}
            </ul>
          </section>
        </div>
        <section class="panel" aria-labelledby="timeline-title">
          <h2 id="timeline-title">Timeline</h2>
          {days.length === 0 ? <p class="muted">No event.</p> : days.map(([d, events]) => (
            <div class="timeline-day">
              <h3>{d}</h3>
              <ol class="timeline" aria-label={`Events of ${d}`}>
                {events.map((e) => (
                  <li>
                    <time dateTime={new Date(e.time).toISOString()}>{new Date(e.time).toLocaleTimeString()}</time> <strong>{e.event}</strong>
                    <span class="muted small"> {Object.entries(e.properties).filter(([k]) => !k.startsWith('$')).slice(0, 6).map(([k, v]) => `${k}: ${value(v)}`).join(', ')}</span>
                  </li>
                ))}
              </ol>
            </div>
          ))}
        </section>
      </div>
    </section>
  );
}
