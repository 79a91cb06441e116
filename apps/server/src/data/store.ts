import type { EventStore } from '../ports/events/index.js';
import { eventProperties, jsonObject, sqlInt, sqlString } from '../ports/events/index.js';
import { dialectFor, SESSION_GAP_MS, type DataSql } from '../query/dialects/index.js';
import type { ProjectReads } from '../query/executor.js';

/**
 * Data browsing over the event store, identity-resolved, on both engines. Every count and
 * aggregate runs in the engine; Node only shapes the page of rows it returns.
 */
export interface EventRow {
  id: number;
  event: string;
  distinct_id: string;
  time: number;
  properties: Record<string, unknown>;
}

export interface UserProfile {
  distinct_id: string;
  properties: Record<string, unknown>;
  first_seen: number | null;
  last_seen: number | null;
  event_count: number;
}

const num = (v: unknown) => Number(v ?? 0);
/** A row of the people subquery (persons), as the engines return it. */
interface PersonRow {
  person: string;
  first_seen: unknown;
  last_seen: unknown;
  event_count: unknown;
  properties: unknown;
}

export class DataStore {
  /** This engine's spelling of the queries below. */
  private sql: DataSql;

  /**
   * `reads`: where a project's reads run (the query executor: its organisation's slots, like an
   * analysis, since stats and listings scan as much); without it, straight on `events` (scripts).
   */
  constructor(private store: EventStore, private reads?: ProjectReads) {
    this.sql = dialectFor(store.dialect).data;
  }

  /** `work` on the project's view of the event store. */
  private read<T>(projectId: number, work: (events: EventStore) => Promise<T>): Promise<T> {
    return this.reads ? this.reads.read(projectId, work) : work(this.store);
  }

  private str(s: string) {
    return sqlString(this.store.dialect, s);
  }

  private resolvedEvents(projectId: number, where: string, columns: string[]) {
    return this.sql.resolvedEvents(sqlInt(projectId), where, columns);
  }

  private resolvedProfiles(projectId: number) {
    return this.sql.resolvedProfiles(sqlInt(projectId));
  }

  /** Raw-event conditions for a time range, an event name and a cluster's member ids. */
  rawWhere(f: { from?: number; to?: number; event?: string; members?: string[] }): string {
    const c: string[] = [];
    if (f.from !== undefined) c.push(`time >= ${sqlInt(f.from)}`);
    if (f.to !== undefined) c.push(`time <= ${sqlInt(f.to)}`);
    if (f.event !== undefined) c.push(`event = ${this.str(f.event)}`);
    if (f.members) c.push(`distinct_id IN (${f.members.map((m) => this.str(m)).join(', ')})`);
    return c.length ? c.join(' AND ') : '1 = 1';
  }

  async listEvents(projectId: number, f: { from?: number; to?: number; event?: string; members?: string[]; person?: string; limit: number; offset: number }) {
    const src = this.resolvedEvents(projectId, this.rawWhere(f), ['id', 'event', 'distinct_id', 'time', 'properties', 'prop_keys', 'prop_values', 'prop_types']);
    const where = f.person !== undefined ? `WHERE person = ${this.str(f.person)}` : '';
    const [rows, total] = await this.read(projectId, (events) => Promise.all([
      events.query<{ id: number; event: string; person: string; time: number; properties: string; prop_keys: string[]; prop_values: string[]; prop_types: string }>(
        `SELECT id, event, person, time, properties, prop_keys, prop_values, prop_types FROM ${src} ${where} ORDER BY time DESC, id DESC LIMIT ${sqlInt(f.limit)} OFFSET ${sqlInt(f.offset)}`,
      ),
      events.query<{ n: number }>(`SELECT count(*) AS n FROM ${src} ${where}`),
    ]));
    const events: EventRow[] = rows.map((r) => ({
      id: num(r.id), event: r.event, distinct_id: r.person, time: num(r.time), properties: eventProperties(r),
    }));
    return { events, total: num(total[0]?.n) };
  }

  async eventNames(projectId: number, recentSince: number) {
    const final = this.sql.final;
    const rows = await this.read(projectId, (events) => events.query<{ name: string; count: number; recent_count: number; last_seen: number }>(
      `SELECT event AS name, count(*) AS count, sum(CASE WHEN time >= ${sqlInt(recentSince)} THEN 1 ELSE 0 END) AS recent_count, max(time) AS last_seen
       FROM events ${final} WHERE project_id = ${sqlInt(projectId)} GROUP BY event ORDER BY count DESC, name`,
    ));
    return rows.map((r) => ({ name: r.name, count: num(r.count), recent_count: num(r.recent_count), last_seen: num(r.last_seen) }));
  }

  async properties(projectId: number, event?: string) {
    const p = sqlInt(projectId);
    const ev = event !== undefined ? ` AND event = ${this.str(event)}` : '';
    const sql = this.sql.properties(p, ev);
    const rows = await this.read(projectId, (events) => events.query<{ key: string; count: number; sampleValues: string[] }>(sql));
    return rows.map((r) => ({ key: r.key, count: num(r.count), sampleValues: [...(r.sampleValues ?? [])].map(String).sort() }));
  }

  /**
   * People: identities seen in events or holding a live profile, with their first/last event
   * times and counts. `eventsWhere` narrows raw events (a cluster), `person` one identity.
   */
  private persons(projectId: number, opts: { members?: string[]; person?: string } = {}): string {
    const events = this.resolvedEvents(projectId, this.rawWhere({ members: opts.members }), ['distinct_id', 'time']);
    const profiles = this.resolvedProfiles(projectId);
    const only = opts.person !== undefined ? `WHERE person = ${this.str(opts.person)}` : '';
    return this.sql.persons(events, profiles, only);
  }

  /** The one place a people row becomes a UserProfile. */
  private toProfile(r: PersonRow): UserProfile {
    const count = num(r.event_count);
    return {
      distinct_id: r.person,
      properties: jsonObject(r.properties),
      first_seen: count > 0 && r.first_seen !== null ? num(r.first_seen) : null,
      last_seen: count > 0 && r.last_seen !== null ? num(r.last_seen) : null,
      event_count: count,
    };
  }

  async users(projectId: number, opts: { search?: string; limit: number; offset: number }) {
    let where = '';
    let order = this.sql.usersOrder;
    if (opts.search) {
      const s = this.str(opts.search);
      where = this.sql.userSearch(s);
      // The identity named exactly (but for case) comes first: `user104` before `user1045`.
      order = `CASE WHEN lower(person) = lower(${s}) THEN 0 ELSE 1 END, ${order}`;
    }
    const src = this.persons(projectId);
    const [rows, total] = await this.read(projectId, (events) => Promise.all([
      events.query<PersonRow>(`SELECT * FROM ${src} ${where} ORDER BY ${order} LIMIT ${sqlInt(opts.limit)} OFFSET ${sqlInt(opts.offset)}`),
      events.query<{ n: number }>(`SELECT count(*) AS n FROM ${src} ${where}`),
    ]));
    return { users: rows.map((r) => this.toProfile(r)), total: num(total[0]?.n) };
  }

  /** One identity's profile, or undefined when it has neither events nor a live profile. */
  async user(projectId: number, person: string, members: string[]): Promise<UserProfile | undefined> {
    const rows = await this.read(projectId, (events) => events.query<PersonRow>(`SELECT * FROM ${this.persons(projectId, { members, person })}`));
    return rows[0] ? this.toProfile(rows[0]) : undefined;
  }

  /** Sessions of one identity over its whole history (a gap of 30 minutes or more starts a new one). */
  async sessionsOf(projectId: number, person: string, members: string[]): Promise<number> {
    const src = this.resolvedEvents(projectId, this.rawWhere({ members }), ['distinct_id', 'time']);
    const who = `person = ${this.str(person)}`;
    const sql = this.sql.sessionsOf(src, who);
    const rows = await this.read(projectId, (events) => events.query<{ n: number }>(sql));
    return num(rows[0]?.n);
  }

  async stats(projectId: number, now: number) {
    const p = sqlInt(projectId);
    const dayStart = Math.floor(now / 86_400_000) * 86_400_000;
    const weekAgo = now - 7 * 86_400_000;
    const final = this.sql.final;
    const all = this.resolvedEvents(projectId, '1 = 1', ['distinct_id', 'time']);
    const recent = this.resolvedEvents(projectId, `time >= ${sqlInt(weekAgo - SESSION_GAP_MS)}`, ['distinct_id', 'time']);
    const sessionsSql = this.sql.recentSessions(recent, weekAgo);
    const distinct = (x: string) => this.sql.distinct(x);
    const [ev, users, profiles, sessions] = await this.read(projectId, (events) => Promise.all([
      events.query<{ events: number; event_names: number; events_today: number }>(
        `SELECT count(*) AS events, ${distinct('event')} AS event_names, sum(CASE WHEN time >= ${sqlInt(dayStart)} THEN 1 ELSE 0 END) AS events_today
         FROM events ${final} WHERE project_id = ${p}`,
      ),
      events.query<{ n: number }>(`SELECT ${distinct('person')} AS n FROM ${all}`),
      events.query<{ n: number }>(`SELECT count(*) AS n FROM ${this.resolvedProfiles(projectId)}`),
      events.query<{ n: number }>(sessionsSql),
    ]));
    return {
      events: num(ev[0]?.events), users: num(users[0]?.n), profiles: num(profiles[0]?.n), event_names: num(ev[0]?.event_names),
      events_today: num(ev[0]?.events_today), sessions: num(sessions[0]?.n),
    };
  }
}
