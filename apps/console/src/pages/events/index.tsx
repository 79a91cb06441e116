import { useEffect, useRef, useState } from 'preact/hooks';
import type { z } from 'zod';
import { request } from '../../api.js';
import { useShell } from '../../context.js';
import { Link } from '../../router.js';
import type { EventsResultSchema } from '@tally-analytics/server/schemas';
import type { EventNameCount } from '../../types.js';
import './events.css';
import { EventsTabs } from '../lexicon/tabs.js';
import '../lexicon/lexicon.css';

type EventsResult = z.infer<typeof EventsResultSchema>;
type EventRow = EventsResult['events'][number];

/** How often the page asks for new events while it is live. */
const POLL_MS = 3000;
const LIMIT = 50;

const props = (p: Record<string, unknown>) => {
  const shown = Object.entries(p).filter(([k]) => !k.startsWith('$'));
  return shown.map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');
};

/**
 * `/projects/{projectId}/events`: the project's newest events, asked for again every few seconds
 * (GET /api/data/events) while "Live" is on; rows that arrived since the previous answer are
 * marked and counted in a polite live region. Filters by event name and distinct id.
 */
export function EventsPage(p: { projectId: string }) {
  const { projects } = useShell();
  const [rows, setRows] = useState<EventRow[] | null>(null);
  const [total, setTotal] = useState(0);
  const [fresh, setFresh] = useState<Set<number>>(new Set());
  const [live, setLive] = useState(true);
  const [event, setEvent] = useState('');
  const [distinctId, setDistinctId] = useState('');
  const [names, setNames] = useState<EventNameCount[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [announce, setAnnounce] = useState('');
  const seen = useRef<Set<number> | null>(null);
  const project = projects.find((x) => String(x.id) === p.projectId);

  useEffect(() => {
    document.title = `Events · ${project?.name ?? 'Tally'}`;
    request<EventNameCount[]>('GET', `/api/data/event-names?projectId=${encodeURIComponent(p.projectId)}`).then(setNames, () => setNames([]));
  }, [p.projectId]);

  useEffect(() => {
    seen.current = null;
    setRows(null);
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      const q = new URLSearchParams({ projectId: p.projectId, limit: String(LIMIT) });
      if (event) q.set('event', event);
      if (distinctId.trim()) q.set('distinctId', distinctId.trim());
      try {
        const out = await request<EventsResult>('GET', `/api/data/events?${q}`);
        if (stopped) return;
        const before = seen.current;
        const arrived = before ? out.events.filter((e) => !before.has(e.id)) : [];
        seen.current = new Set([...(before ?? []), ...out.events.map((e) => e.id)]);
        setRows(out.events);
        setTotal(out.total);
        setFresh(new Set(arrived.map((e) => e.id)));
        if (arrived.length) setAnnounce(`${arrived.length} new ${arrived.length === 1 ? 'event' : 'events'}`);
        setError(null);
      } catch (e) {
        if (!stopped) setError((e as Error).message);
      }
      if (!stopped && live) timer = setTimeout(poll, POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [p.projectId, live, event, distinctId]);

  return (
    <section class="page events-page">
      <div class="page-head">
        <h1>Events</h1>
        <div class="toolbar">
          <label class="switch"><input type="checkbox" checked={live} onChange={(e) => setLive((e.target as HTMLInputElement).checked)} /> Live</label>
          <label for="events-name">Event</label>
          <select id="events-name" value={event} onChange={(e) => setEvent((e.target as HTMLSelectElement).value)}>
            <option value="">All events</option>
            {names.map((n) => <option value={n.name}>{n.name}</option>)}
          </select>
          <label for="events-distinct">Distinct id</label>
          <input id="events-distinct" value={distinctId} maxLength={255} onChange={(e) => setDistinctId((e.target as HTMLInputElement).value)} />
        </div>
      </div>
      <EventsTabs projectId={p.projectId} current="" />
      <p class="sr-only" role="status" aria-live="polite">{announce}</p>
      {error && <p class="error" role="alert">{error}</p>}
      {!rows ? <p role="status" class="loading">Loading events…</p> : rows.length === 0 ? (
        <p class="muted">No event yet. Send one to <code>/track</code> with the project's token; it shows here within seconds.</p>
      ) : (
        <>
          <p class="muted small">{total.toLocaleString()} {total === 1 ? 'event' : 'events'} stored{live ? `; the newest ${LIMIT}, refreshed every ${POLL_MS / 1000} s` : '; paused'}.</p>
          <div class="table-wrap events-table">
            <table aria-label="Latest events">
              <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Distinct id</th><th scope="col">Properties</th></tr></thead>
              <tbody>
                {rows.map((r) => (
                  <tr class={fresh.has(r.id) ? 'fresh' : ''} data-event-id={r.id}>
                    <td>{new Date(r.time).toLocaleString()}</td>
                    <td>{r.event}</td>
                    <td><Link href={`/projects/${p.projectId}/people/${encodeURIComponent(r.distinct_id)}`}>{r.distinct_id}</Link></td>
                    <td class="small">{props(r.properties)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
