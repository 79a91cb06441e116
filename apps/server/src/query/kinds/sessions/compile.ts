import { sqlInt } from '../../../ports/events/index.js';
import type { EventStore } from '../../../ports/events/index.js';
import type { QueryContext } from '../../engine/context.js';
import { SESSION_GAP_MS, type Unit } from '../../dialects/index.js';
import { bucketLabel, bucketStarts, type DateRange } from '../../engine/range.js';
import type { SessionsResult } from '../../schema.js';

export { SESSION_GAP_MS };

/**
 * Sessions semantics (mirrored by the reference evaluator): per canonical identity, its events in
 * the range sorted by time; a gap of 30 minutes or more starts a new session. A session belongs
 * to the bucket of its first event; its duration is last event minus first event.
 */
export function sessionsSql(q: QueryContext, unit: Unit, range: DateRange): string {
  const { d } = q;
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`];
  // A duplicate of the dedup key has the same identity and time: a zero gap changes no session.
  const ev = d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, key: true, where, dedup: false });
  return d.sessions(ev, unit, SESSION_GAP_MS, range.fromMs);
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
