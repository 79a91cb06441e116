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
  const GAP = sqlInt(SESSION_GAP_MS);
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`];
  // A duplicate of the dedup key has the same identity and time: a zero gap changes no session.
  const ev = d.canonicalEvents({ projectId: q.projectId, where, dedup: false });
  if (d.name === 'clickhouse') {
    // Per identity: sorted times and one linear pass (arrayDifference): starts are times whose gap
    // before is >= GAP (or the first), ends are times whose gap after is >= GAP (or the last).
    return `SELECT ${d.bucket(unit, 's')} AS b, count() AS n, avg(toFloat64(e - s)) AS avg_ms FROM (
      SELECT arraySort(groupArray(time)) AS ts, arrayDifference(ts) AS g,
        arrayFilter((t, x) -> x >= ${GAP}, ts, arrayPushFront(arrayPopFront(g), toInt64(${GAP}))) AS ss,
        arrayFilter((t, x) -> x >= ${GAP}, ts, arrayPushBack(arrayPopFront(g), toInt64(${GAP}))) AS es
      FROM ${ev} ev GROUP BY cid
    ) ARRAY JOIN ss AS s, es AS e GROUP BY b`;
  }
  // DuckDB: the same shape with lists: sorted times per identity, zipped with their predecessor
  // (successor) list so the lambdas capture nothing (list_zip is linear).
  const prev = `list_zip(ts, list_prepend(NULL::BIGINT, ts[1:len(ts) - 1]))`;
  const next = `list_zip(ts, list_append(ts[2:], NULL::BIGINT))`;
  return `SELECT ${d.bucket(unit, 'st')} AS b, count(*) AS n, avg(CAST(en - st AS DOUBLE)) AS avg_ms FROM (
    SELECT unnest(list_transform(list_filter(${prev}, p -> p[2] IS NULL OR p[1] - p[2] >= ${GAP}), p -> p[1])) AS st,
      unnest(list_transform(list_filter(${next}, p -> p[2] IS NULL OR p[2] - p[1] >= ${GAP}), p -> p[1])) AS en
    FROM (SELECT cid, list(time ORDER BY time) AS ts FROM ${ev} ev GROUP BY cid) pi
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
