import { sqlInt } from '../ports/events/index.js';
import type { EventStore } from '../ports/events/index.js';
import { dedupOf, type QueryContext } from '../query/engine/context.js';
import { HOUR_MS } from '../query/dialects/index.js';
import type { MetricTotals } from './stats.js';
import type { ExperimentMetric } from './schema.js';

/** What the per-unit aggregation reads: the exposure rules and the metrics of one experiment. */
export interface ExposureSpec {
  experimentKey: string;
  flagKey: string;
  /** The flag's variant keys: exposures naming anything else are ignored. */
  variants: string[];
  /** Inclusive bounds (Unix ms) of exposures and metric events; null: unbounded. */
  startAt: number | null;
  endAt: number | null;
  metrics: ExperimentMetric[];
}

/** What the engine hands back: per variant its exposed units and, per metric, the units' total and sum of squares. */
export interface ExperimentTotals {
  exposures: Record<string, number>;
  excludedMultipleVariants: number;
  metrics: MetricTotals[];
  /** New exposed units per UTC day of their first exposure, per variant (units seen in two variants left out). */
  daily: ExposureDay[];
}

/** One UTC day (its start, Unix ms) of one variant: the units whose first exposure fell on it. */
export interface ExposureDay {
  day: number;
  variant: string;
  units: number;
}

/**
 * One statement for every metric of the experiment, reading each event once (semantics in
 * docs/experiments.md, "Exposure and units"):
 *
 * 1. the units: the exposure events in [startAt, endAt], with `xv` (the variant an exposure names,
 *    '' for none of the flag's) computed in the scan, grouped per unit (canonical id, as every
 *    analysis resolves it): the first exposure's time `xt`, its variant `xk`, the number of
 *    distinct variants seen `xn`;
 * 2. the metric events in [startAt, endAt], with per metric a flag `f{i}` (and for a sum its value
 *    `s{i}`, non-numbers left out) computed in the scan;
 * 3. the units joined to their metric events by a hash join on the unit (the units, about one row
 *    per exposed identity, are the hash table; identities never exposed drop out at the probe),
 *    and per unit its value per metric from running sums, no lists: the events at or after `xt`
 *    (and before `xt` + windowHours) counted, converted to 0/1, or their values summed; 0 when none
 *    (a unit without metric events is kept by the outer join);
 * 4. per variant and UTC day of the first exposure (units seen in two variants grouped apart as
 *    `multi`): units, Σ value, Σ value². The days give the exposures over time; the totals are
 *    their sums, folded in experimentTotals.
 */
export function experimentSql(q: QueryContext, s: ExposureSpec): string {
  const { d } = q;
  const str = (v: string) => d.str(v);
  const variants = s.variants.map(str).join(', ');
  const names = [...new Set([s.experimentKey, s.flagKey])].map(str).join(', ');
  const started = d.propValue('Variant name');
  const called = d.propValue('$feature_flag_response');
  const exposure = `CASE WHEN event = '$experiment_started' AND ${d.propValue('Experiment name')} IN (${names}) AND ${started} IN (${variants}) THEN ${started}
    WHEN event = '$feature_flag_called' AND ${d.propValue('$feature_flag')} = ${str(s.flagKey)} AND ${called} IN (${variants}) THEN ${called}
    ELSE '' END`;
  const exprs: Array<[string, string]> = [];
  const metricConds: string[] = [];
  s.metrics.forEach((m, i) => {
    const base = q.events.condition(m.event);
    // A sum's event without a number adds nothing: it is left out of the unit's events.
    const cond = m.kind === 'sum' ? `(${base}) AND ${d.propIsNumber(m.property!)}` : base;
    metricConds.push(`(${base})`);
    exprs.push([`f${i}`, d.flag(cond)]);
    if (m.kind === 'sum') exprs.push([`s${i}`, d.toFloat(`CASE WHEN ${cond} THEN ${d.propNumber(m.property!)} ELSE 0 END`)]);
  });
  const span = [
    ...(s.startAt !== null ? [`time >= ${sqlInt(s.startAt)}`] : []),
    ...(s.endAt !== null ? [`time <= ${sqlInt(s.endAt)}`] : []),
  ];
  const read = (where: string[], e: Array<[string, string]>) =>
    d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, key: true, dedup: dedupOf(q), where: [...span, ...where], exprs: e });

  const exposures = read([`event IN ('$experiment_started', '$feature_flag_called')`], [['xv', exposure]]);
  const units = `(SELECT cid, min(time) AS xt, min(xv) AS xk, ${d.uniq('xv')} AS xn FROM ${exposures} x WHERE xv != '' GROUP BY cid)`;

  // Reading the property lists is most of a scan's cost, and a list column is read for every
  // stretch of rows where any row needs it. When every metric is a plain event name, the metric
  // events are read in up to two branches of disjoint names: the events of sum metrics (their
  // property: a materialised column where MATERIALIZED_PROPERTIES names it, else the lists) and
  // the other metric events (by name alone: no lists). Each event is read once.
  const plain = s.metrics.every((m) => q.events.condition(m.event) === `event = ${str(m.event)}`);
  const summed = [...new Set(s.metrics.filter((m) => m.kind === 'sum').map((m) => m.event))];
  const others = [...new Set(s.metrics.map((m) => m.event))].filter((n) => !summed.includes(n));
  /** The branch of events named `ns`: each expression kept where its rows can be among them, else its constant. */
  const branch = (ns: string[]) => read([`event IN (${ns.map(str).join(', ')})`],
    s.metrics.flatMap((m, i): Array<[string, string]> => {
      const kept = ns.includes(m.event);
      const at = (alias: string) => exprs.find(([a]) => a === alias)![1];
      return [[`f${i}`, kept ? at(`f${i}`) : d.flag('1 = 0')], ...(m.kind === 'sum' ? [[`s${i}`, kept ? at(`s${i}`) : d.toFloat('0')] as [string, string]] : [])];
    }));
  const metricEvents = !plain
    ? read([metricConds.join(' OR ')], exprs)
    : `(${[summed, others].filter((ns) => ns.length > 0).map((ns, k) => `SELECT * FROM ${branch(ns)} b${k}`).join(' UNION ALL ')})`;
  const metricCols = `cid, time AS mt${s.metrics.map((m, i) => `, f${i}${m.kind === 'sum' ? `, s${i}` : ''}`).join('')}`;

  const counts = (m: ExperimentMetric) => {
    const window = m.windowHours !== undefined ? ` AND mt < xt + ${sqlInt(Math.round(m.windowHours * HOUR_MS))}` : '';
    return `mt >= xt${window}`;
  };
  // An outer-joined unit without metric events has no (NULL or default) flags: every CASE gives 0.
  const unitValues = s.metrics.map((m, i) => {
    const at = `f${i} = 1 AND ${counts(m)}`;
    if (m.kind === 'sum') return `${d.toFloat(`sum(CASE WHEN ${at} THEN s${i} ELSE 0 END)`)} AS u${i}`;
    if (m.kind === 'conversion') return `${d.toFloat(`max(CASE WHEN ${at} THEN 1 ELSE 0 END)`)} AS u${i}`;
    return `${d.toFloat(`sum(CASE WHEN ${at} THEN 1 ELSE 0 END)`)} AS u${i}`;
  });
  const joined = d.unitsJoin(units, `(SELECT ${metricCols} FROM ${metricEvents} me)`, 'cid');
  // Grouped by the unit alone (xt, xk, xn are the unit's: min() of equal values), not by all four:
  // on ClickHouse a String among the keys cost the grouping more than the join (A/B at 10M events).
  const perUnit = `SELECT CASE WHEN max(xn) > 1 THEN 1 ELSE 0 END AS multi, min(xk) AS uk, ${d.bucket('day', 'min(xt)')} AS xd, ${unitValues.join(', ')}
    FROM ${joined} GROUP BY cid`;
  const sums = s.metrics.map((_, i) => `sum(u${i}) AS t${i}, sum(u${i} * u${i}) AS q${i}`);
  return `SELECT multi, uk AS xk, xd, count(*) AS units${sums.map((x) => `, ${x}`).join('')} FROM (${perUnit}) pv GROUP BY multi, uk, xd`;
}

/** Runs the aggregation and folds its rows (one per variant and day of first exposure) into totals for the statistics. */
export async function experimentTotals(events: EventStore, q: QueryContext, s: ExposureSpec): Promise<ExperimentTotals> {
  const rows = await events.query<Record<string, unknown>>(experimentSql(q, s));
  const exposures: Record<string, number> = Object.fromEntries(s.variants.map((v) => [v, 0]));
  const zero = () => ({ units: 0, total: 0, sumOfSquares: 0 });
  const perVariant = s.metrics.map(() => new Map(s.variants.map((v) => [v, zero()])));
  const daily: ExposureDay[] = [];
  let excludedMultipleVariants = 0;
  for (const r of rows) {
    const units = Number(r.units);
    if (Number(r.multi) === 1) {
      excludedMultipleVariants += units;
      continue;
    }
    const key = String(r.xk);
    if (!(key in exposures)) continue;
    exposures[key] += units;
    daily.push({ day: Number(r.xd), variant: key, units });
    s.metrics.forEach((_, i) => {
      const t = perVariant[i].get(key)!;
      perVariant[i].set(key, { units: t.units + units, total: t.total + Number(r[`t${i}`]), sumOfSquares: t.sumOfSquares + Number(r[`q${i}`]) });
    });
  }
  const metrics: MetricTotals[] = s.metrics.map((m, i) => ({
    id: m.id,
    kind: m.kind,
    variants: s.variants.map((key) => ({ key, ...perVariant[i].get(key)! })),
  }));
  return { exposures, excludedMultipleVariants, metrics, daily: daily.sort((a, b) => a.day - b.day || (a.variant < b.variant ? -1 : 1)) };
}
