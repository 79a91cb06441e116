import { sqlInt } from '../../../ports/events/index.js';
import type { EventStore } from '../../../ports/events/index.js';
import type { QueryContext } from '../../engine/context.js';
import { DAY_MS, WEEK_MS } from '../../dialects/index.js';
import { bucketLabel, bucketStarts, type DateRange } from '../../engine/range.js';
import type { RetentionRow } from '../../schema.js';

export interface RetentionSpec {
  bornEvent: string;
  returnEvent: string;
  unit: 'day' | 'week';
  buckets: number;
}

/**
 * Retention semantics (mirrored by the reference evaluator):
 * - an identity is born at its first born-event inside the date range; its cohort is that bucket;
 * - it returns in bucket i (0 = the birth bucket) when it has a return event strictly after the
 *   birth time falling in cohort + i, for i < buckets; return events may fall after `to`.
 */
export function retentionSql(q: QueryContext, r: RetentionSpec, range: DateRange): string {
  const { d } = q;
  const unitMs = r.unit === 'day' ? DAY_MS : WEEK_MS;
  const starts = bucketStarts(r.unit, range);
  const returnEnd = starts[starts.length - 1] + r.buckets * unitMs;
  const born = q.events.condition(r.bornEvent);
  const ret = q.events.condition(r.returnEvent);
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(returnEnd)}`, `(${born}) OR (${ret})`];
  // Born/return flags are computed in the scan, before the identity join (no event names or
  // property arrays through the join).
  const exprs: Array<[string, string]> = [
    ['isb', `CASE WHEN (${born}) AND time < ${sqlInt(range.toEndMs)} THEN 1 ELSE 0 END`],
    ['isr', `CASE WHEN ${ret} THEN 1 ELSE 0 END`],
  ];
  const perId = `SELECT cid, ${d.minIf('time', 'isb = 1')} AS bt, ${d.groupArrayIf('time', 'isr = 1')} AS rts
    FROM ${d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, key: true, where, exprs, dedup: false })} ev GROUP BY cid HAVING ${d.countIf('isb = 1')} > 0`;
  const offsets = d.filter(
    d.distinct(d.map(d.filter('rts', 't', 't > bt'), 't', d.intDiv(`${d.bucket(r.unit, 't')} - ${d.bucket(r.unit, 'bt')}`, sqlInt(unitMs)))),
    'o', `o < ${sqlInt(r.buckets)}`,
  );
  const withSize = d.concat(`[${d.int64('-1')}]`, d.int64s(offsets));
  return `SELECT c, o, count(*) AS n FROM (
    SELECT ${d.bucket(r.unit, 'bt')} AS c, ${d.explode(withSize)} AS o FROM (${perId}) pi WHERE ${d.keep(['bt', 'rts'])}
  ) x GROUP BY c, o`;
}

export async function runRetention(events: EventStore, q: QueryContext, r: RetentionSpec, range: DateRange): Promise<RetentionRow[]> {
  const rows = await events.query<{ c: number; o: number; n: number }>(retentionSql(q, r, range));
  const byCohort = new Map<number, RetentionRow>();
  const starts = bucketStarts(r.unit, range);
  for (const s of starts) byCohort.set(s, { cohort: bucketLabel(r.unit, s), size: 0, counts: Array(r.buckets).fill(0) });
  for (const row of rows) {
    const c = byCohort.get(Number(row.c));
    if (!c) continue;
    const o = Number(row.o);
    if (o < 0) c.size = Number(row.n);
    else c.counts[o] = Number(row.n);
  }
  return starts.map((s) => byCohort.get(s)!);
}
