import { sqlInt } from '../ports/events/index.js';
import type { EventStore } from '../ports/events/index.js';
import type { QueryContext } from './context.js';
import type { Unit } from './dialects/index.js';
import { bucketLabel, bucketStarts, type DateRange } from './range.js';
import type { SessionsResult } from './schema.js';

/** A gap of this long without events ends a session (product decision: 30 minutes). */
export const SESSION_GAP_MS = 30 * 60 * 1000;

/**
 * Sessions semantics (mirrored by the reference evaluator): per canonical identity, its events in
 * the range sorted by time; a gap of 30 minutes or more starts a new session. A session belongs
 * to the bucket of its first event; its duration is last event minus first event.
 */
export function sessionsSql(q: QueryContext, unit: Unit, range: DateRange): string {
  const { d } = q;
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`];
  const perId = `SELECT cid, ${d.groupArraySorted('time', ['time'])} AS ts FROM ${d.canonicalEvents({ projectId: q.projectId, where })} ev GROUP BY cid`;
  const starts = d.filterIdx('ts', 'i', `i = 1 OR ts[i] - ts[i - 1] >= ${sqlInt(SESSION_GAP_MS)}`);
  const ends = d.mapIdx('st', 'm', `CASE WHEN m = ${d.length('st')} THEN ts[${d.length('ts')}] ELSE ts[st[m + 1] - 1] END`);
  const withSt = `SELECT ts, ${starts} AS st FROM (${perId}) pi WHERE ${d.keep(['ts'])}`;
  const withEnds = `SELECT ts, st, ${ends} AS en FROM (${withSt}) ps WHERE ${d.keep(['ts', 'st'])}`;
  const exploded = `SELECT ts, st, en, ${d.explode(d.mapIdx('st', 'm', 'm'))} AS m FROM (${withEnds}) pe WHERE ${d.keep(['ts', 'st', 'en'])}`;
  return `SELECT b, count(*) AS n, avg(${d.toFloat('dur')}) AS avg_ms FROM (
    SELECT ${d.bucket(unit, 'ts[st[m]]')} AS b, en[m] - ts[st[m]] AS dur FROM (${exploded}) px WHERE ${d.keep(['ts', 'st', 'en', 'm'])}
  ) x GROUP BY b`;
}

export async function runSessions(events: EventStore, q: QueryContext, unit: Unit, range: DateRange): Promise<SessionsResult> {
  const rows = await events.query<{ b: number; n: number; avg_ms: number }>(sessionsSql(q, unit, range));
  const byBucket = new Map(rows.map((r) => [Number(r.b), r]));
  return {
    series: bucketStarts(unit, range).map((b) => {
      const r = byBucket.get(b);
      return { bucket: bucketLabel(unit, b), sessions: r ? Number(r.n) : 0, avgDurationSec: r ? Math.round(Number(r.avg_ms)) / 1000 : 0 };
    }),
  };
}
