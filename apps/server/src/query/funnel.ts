import { sqlInt } from '../ports/events/index.js';
import type { EventStore } from '../ports/events/index.js';
import type { QueryContext } from './context.js';
import { DAY_MS } from './dialects/index.js';
import { filtersSql } from './filters.js';
import type { DateRange } from './range.js';
import { MISSING_VALUE } from './segmentation.js';
import type { FunnelStep, PropertyFilter } from './schema.js';

/** Most ids listed in `convertedUserIds` / `droppedUserIds` per step (smallest ids first). */
export const FUNNEL_ID_LIST_MAX = 1000;

export interface FunnelSpec {
  steps: string[];
  windowDays: number;
  breakdown?: string;
  filters?: PropertyFilter[];
}

/**
 * Funnel semantics (the reference evaluator in test/reference mirrors them):
 * - events in the date range matching the filters; identities are canonical ids;
 * - from a step-0 event at t0, step k is the earliest event matching step k strictly after
 *   step k-1's time and at most windowDays after t0 (edge included) — greedy, which maximises
 *   the steps reached from that start;
 * - an identity's path is the start reaching the most steps; ties: the earliest t0, then the
 *   smallest breakdown value (a missing property first);
 * - segments use the breakdown property of that path's step-0 event.
 *
 * Compiled to one query: per identity, arrays of times and per-step flags; one array layer per step
 * computes every start's greedy chain; the chosen path is exploded into (step, duration) rows and
 * aggregated per step and per segment.
 */
export function funnelSql(q: QueryContext, f: FunnelSpec, range: DateRange): string {
  const { d } = q;
  const n = f.steps.length;
  const W = sqlInt(f.windowDays * DAY_MS);
  const conds = f.steps.map((s) => q.events.condition(s));
  const needProps = !!f.breakdown || (f.filters?.length ?? 0) > 0 || f.steps.some((s) => q.events.needsProps(s));
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`, `(${conds.join(' OR ')})`, filtersSql(d, f.filters)];
  const flags = conds.map((c, k) => `CASE WHEN ${c} THEN 1 ELSE 0 END AS f${k}`).join(', ');
  const bv = f.breakdown ? `CASE WHEN ${d.propHas(f.breakdown)} THEN concat('1', ${d.propValueOr(f.breakdown, "''")}) ELSE '0' END` : `'0'`;
  const perEvent = `SELECT cid, time, ${bv} AS bv, ${flags} FROM ${d.canonicalEvents({ projectId: q.projectId, where, props: needProps })} ev`;
  const arrays = [
    `${d.groupArray('time')} AS ts`,
    `${d.groupArray('bv')} AS bvs`,
    ...conds.map((_, k) => `${d.groupArray(`f${k}`)} AS fs${k}`),
  ];
  // Layer 0: start indexes; layer k: for every start, the time of step k (0 = not reached).
  let sql = `SELECT cid, ts, bvs, ${conds.map((_, k) => `fs${k}`).join(', ')}, ${d.filterIdx('ts', 'i', 'fs0[i] = 1')} AS st
    FROM (SELECT cid, ${arrays.join(', ')} FROM (${perEvent}) pe GROUP BY cid) pg`;
  const carried = ['cid', 'ts', 'bvs', ...conds.map((_, k) => `fs${k}`), 'st'];
  for (let k = 1; k < n; k++) {
    const prev = k === 1 ? 'ts[st[m]]' : `t${k - 1}[m]`;
    const chain = d.minOr0(d.map(d.filterIdx('ts', 'j', `fs${k}[j] = 1 AND ts[j] > ${prev} AND ts[j] <= ts[st[m]] + ${W}`), 'j', 'ts[j]'));
    const body = k === 1 ? chain : `CASE WHEN ${prev} = 0 THEN 0 ELSE ${chain} END`;
    sql = `SELECT ${carried.join(', ')}, ${d.mapIdx('st', 'm', body)} AS t${k} FROM (${sql}) l${k} WHERE ${d.keep(carried)}`;
    carried.push(`t${k}`);
  }
  // Levels per start, best level, then the earliest start (and smallest breakdown value) among the best.
  const levelExpr = ['1', ...Array.from({ length: n - 1 }, (_, k) => `CASE WHEN t${k + 1}[m] > 0 THEN 1 ELSE 0 END`)].join(' + ');
  sql = `SELECT ${carried.join(', ')}, ${d.mapIdx('st', 'm', levelExpr)} AS lv FROM (${sql}) lv0 WHERE ${d.length('st')} > 0 AND ${d.keep(carried)}`;
  sql = `SELECT ${carried.join(', ')}, lv, ${d.maxOr0('lv')} AS level FROM (${sql}) lv1 WHERE ${d.keep([...carried, 'lv'])}`;
  sql = `SELECT ${carried.join(', ')}, lv, level, ${d.minOr0(d.map(d.filterIdx('st', 'm', 'lv[m] = level'), 'm', 'ts[st[m]]'))} AS t0 FROM (${sql}) lv2 WHERE ${d.keep([...carried, 'lv', 'level'])}`;
  sql = `SELECT ${carried.join(', ')}, lv, level, t0, ${d.filterIdx('st', 'm', 'lv[m] = level AND ts[st[m]] = t0')} AS best FROM (${sql}) lv3 WHERE ${d.keep([...carried, 'lv', 'level', 't0'])}`;
  const bestBv = d.name === 'clickhouse' ? `arrayReduce('min', ${d.map('best', 'm', 'bvs[st[m]]')})` : `list_min(${d.map('best', 'm', 'bvs[st[m]]')})`;
  const durs = ['0', ...Array.from({ length: n - 1 }, (_, k) => `t${k + 1}[best[1]] - t0`)];
  sql = `SELECT cid, level, ${bestBv} AS seg, [${durs.join(', ')}] AS durs FROM (${sql}) lv4 WHERE ${d.keep([...carried, 'lv', 'level', 't0', 'best'])}`;
  // One row per (identity, step reached); then per (step, segment) and per (step, all).
  sql = `SELECT cid, level, seg, durs, ${d.explode(d.name === 'clickhouse' ? 'range(level)' : 'generate_series(0, level - 1)')} AS k FROM (${sql}) pi WHERE ${d.keep(['cid', 'level', 'seg', 'durs'])}`;
  sql = `SELECT cid, level, k, durs[k + 1] AS dur, ${d.explode(f.breakdown ? "[seg, '*']" : "['*']")} AS sg FROM (${sql}) pk WHERE ${d.keep(['cid', 'level', 'seg', 'durs', 'k'])}`;
  const ids = (cond: string) => d.slice(d.sortStrings(d.groupArrayIf('cid', cond)), '1', sqlInt(FUNNEL_ID_LIST_MAX));
  const sorted = d.sortStrings(d.groupArray('dur'));  // numbers: ascending
  return `SELECT k, sg, n, mean_ms, (sd[${d.intDiv('n - 1', '2')} + 1] + sd[${d.intDiv('n', '2')} + 1]) / 2 AS med_ms, reached, stopped FROM (
    SELECT k, sg, count(*) AS n, avg(${d.toFloat('dur')}) AS mean_ms,
      ${sorted} AS sd,
      CASE WHEN sg = '*' THEN ${ids('1 = 1')} ELSE ${d.name === 'clickhouse' ? 'emptyArrayString()' : '[]::VARCHAR[]'} END AS reached,
      CASE WHEN sg = '*' THEN ${ids('level = k + 1')} ELSE ${d.name === 'clickhouse' ? 'emptyArrayString()' : '[]::VARCHAR[]'} END AS stopped
    FROM (${sql}) ps GROUP BY k, sg) agg`;
}

export async function runFunnel(events: EventStore, q: QueryContext, f: FunnelSpec, range: DateRange): Promise<FunnelStep[]> {
  const rows = await events.query<{ k: number; sg: string; n: number; mean_ms: number; med_ms: number | null; reached: string[]; stopped: string[] }>(funnelSql(q, f, range));
  const all = new Map<number, (typeof rows)[number]>();
  const segs = new Map<string, Map<number, number>>();
  for (const r of rows) {
    const k = Number(r.k);
    if (r.sg === '*') all.set(k, r);
    else {
      const m = segs.get(r.sg) ?? new Map<number, number>();
      m.set(k, Number(r.n));
      segs.set(r.sg, m);
    }
  }
  const segNames = [...segs.keys()].sort((a, b) => (segs.get(b)!.get(0) ?? 0) - (segs.get(a)!.get(0) ?? 0) || (a < b ? -1 : a > b ? 1 : 0));
  const count = (k: number) => Number(all.get(k)?.n ?? 0);
  const ratio = (a: number, b: number) => (b > 0 ? a / b : 0);
  return f.steps.map((event, k) => {
    const r = all.get(k);
    const c = count(k);
    const prev = k === 0 ? c : count(k - 1);
    const median = r && r.med_ms !== null ? Number(r.med_ms) : null;
    return {
      event,
      count: c,
      conversionFromPrevious: k === 0 ? (c > 0 ? 1 : 0) : ratio(c, prev),
      conversionFromStart: ratio(c, count(0)),
      droppedCount: k === 0 ? 0 : prev - c,
      dropoffRate: k === 0 ? 0 : ratio(prev - c, prev),
      convertedUserIds: (r?.reached ?? []).map(String),
      droppedUserIds: k === 0 ? [] : (all.get(k - 1)?.stopped ?? []).map(String),
      segments: segNames.map((sg) => ({
        name: sg === '0' ? MISSING_VALUE : sg.slice(1),
        count: segs.get(sg)!.get(k) ?? 0,
        conversionFromStart: ratio(segs.get(sg)!.get(k) ?? 0, segs.get(sg)!.get(0) ?? 0),
      })),
      meanSecondsToConvert: k === 0 || c === 0 ? null : round3(Number(r!.mean_ms) / 1000),
      medianSecondsToConvert: k === 0 || median === null ? null : round3(median / 1000),
    };
  });
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;
