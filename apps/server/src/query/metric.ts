import { sqlInt } from '../ports/events/index.js';
import type { EventStore } from '../ports/events/index.js';
import type { CalculatedMetricDefinition } from '../definitions/schema.js';
import type { QueryContext } from './context.js';
import type { Unit } from './dialects/index.js';
import { filtersSql } from './filters.js';
import { evalFormula, parseFormula } from './formula.js';
import { bucketLabel, bucketStarts, type DateRange } from './range.js';
import type { SegmentationResult } from './schema.js';

/** Every lettered metric per bucket in one scan; the formula is applied per bucket in Node. */
export function metricSql(q: QueryContext, def: CalculatedMetricDefinition, unit: Unit, range: DateRange): string {
  const { d } = q;
  const conds = def.metrics.map((m) => `(${q.events.condition(m.event)}) AND (${filtersSql(d, m.filters)})`);
  const needProps = def.metrics.some((m) => (m.filters?.length ?? 0) > 0 || q.events.needsProps(m.event));
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`, conds.map((c) => `(${c})`).join(' OR ')];
  const cols = def.metrics.map((m, i) => `${m.type === 'total' ? d.countIf(conds[i]) : d.uniqIf('cid', conds[i])} AS m_${m.id}`);
  return `SELECT ${d.bucket(unit, 'time')} AS b, ${cols.join(', ')} FROM ${d.canonicalEvents({ projectId: q.projectId, where, props: needProps, identity: def.metrics.some((m) => m.type === 'unique'), dedup: def.metrics.some((m) => m.type === 'total') })} ev GROUP BY b`;
}

export async function runMetric(events: EventStore, q: QueryContext, name: string, def: CalculatedMetricDefinition, unit: Unit, range: DateRange): Promise<SegmentationResult> {
  const formula = parseFormula(def.formula);
  const rows = await events.query<Record<string, number>>(metricSql(q, def, unit, range));
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
