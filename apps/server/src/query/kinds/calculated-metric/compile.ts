import { sqlInt } from '../../../ports/events/index.js';
import type { EventStore } from '../../../ports/events/index.js';
import type { CalculatedMetricDefinition } from '../../../definitions/schema.js';
import { dedupOf, type QueryContext } from '../../engine/context.js';
import type { Unit } from '../../dialects/index.js';
import { filtersSql } from '../../engine/filters.js';
import { evalFormula, parseFormula } from '../../engine/formula.js';
import { bucketLabel, bucketStarts, type DateRange } from '../../engine/range.js';
import type { SegmentationResult } from '../../schema.js';

/**
 * Calculated metrics (saved in definitions/: lettered event counts and a formula), not the
 * service's Prometheus metrics (metrics/). Every lettered metric per bucket; the formula is
 * applied per bucket in Node. Two scans at most, UNION ALL'ed and summed per bucket: `total`
 * letters count events (deduplicated: ClickHouse FINAL) without the identity join; `unique`
 * letters count canonical identities (no FINAL needed).
 */
export function calculatedMetricSql(q: QueryContext, def: CalculatedMetricDefinition, unit: Unit, range: DateRange): string {
  const { d } = q;
  const conds = def.metrics.map((m) => `(${q.events.condition(m.event)}) AND (${filtersSql(d, m.filters)})`);
  const part = (type: 'total' | 'unique') => {
    const mine = def.metrics.map((m, i) => (m.type === type ? i : -1)).filter((i) => i >= 0);
    if (mine.length === 0) return undefined;
    const needProps = mine.some((i) => (def.metrics[i].filters?.length ?? 0) > 0 || q.events.needsProps(def.metrics[i].event));
    const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`, mine.map((i) => `(${conds[i]})`).join(' OR ')];
    const cols = def.metrics.map((m, i) => {
      if (m.type !== type) return `${d.countZero()} AS m_${m.id}`;
      return `${type === 'total' ? d.countIf(conds[i]) : d.uniqIf('cid', conds[i])} AS m_${m.id}`;
    });
    const ev = d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, key: true, where, props: needProps, identity: type === 'unique', dedup: type === 'total' && dedupOf(q) });
    return `SELECT ${d.bucket(unit, 'time')} AS b, ${cols.join(', ')} FROM ${ev} ev GROUP BY b`;
  };
  const parts = [part('total'), part('unique')].filter((p): p is string => p !== undefined);
  const sums = def.metrics.map((m) => `sum(m_${m.id}) AS m_${m.id}`).join(', ');
  return `SELECT b, ${sums} FROM (${parts.join(' UNION ALL ')}) mp GROUP BY b`;
}

export async function runCalculatedMetric(events: EventStore, q: QueryContext, name: string, def: CalculatedMetricDefinition, unit: Unit, range: DateRange): Promise<SegmentationResult> {
  const formula = parseFormula(def.formula);
  const rows = await events.query<Record<string, number>>(calculatedMetricSql(q, def, unit, range));
  const byBucket = new Map(rows.map((r) => [Number(r.b), r]));
  const starts = bucketStarts(unit, range);
  const labels = starts.map((b) => bucketLabel(unit, b));
  return {
    buckets: labels,
    series: [{
      name,
      data: starts.map((b, i) => {
        const r = byBucket.get(b);
        const values = Object.fromEntries(def.metrics.map((m) => [m.id, r ? Number(r[`m_${m.id}`]) : 0]));
        return { bucket: labels[i], value: evalFormula(formula, values) };
      }),
    }],
  };
}
