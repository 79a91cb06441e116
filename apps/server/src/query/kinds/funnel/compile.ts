import { sqlInt } from '../../../ports/events/index.js';
import type { EventStore } from '../../../ports/events/index.js';
import type { QueryContext } from '../../engine/context.js';
import { DAY_MS } from '../../dialects/index.js';
import { filtersSql } from '../../engine/filters.js';
import type { DateRange } from '../../engine/range.js';
import { MISSING_VALUE } from '../segmentation/compile.js';
import type { FunnelStep, PropertyFilter } from '../../schema.js';

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
 * computes every start's greedy chain (the dialect's `funnelPaths`: arrays on ClickHouse; lists,
 * and ASOF joins for identities with many events, on DuckDB); the chosen path is exploded into
 * (step, duration) rows and aggregated per step and per segment (funnelSql). `funnelPathsSql` is the per-identity layer: one
 * row per identity that reached step 0 with `cid`, `level` (steps reached), `seg` ('0' missing,
 * '1' + value) and `durs`; the IR drilldown pages through it.
 */
export function funnelPathsSql(q: QueryContext, f: FunnelSpec, range: DateRange): string {
  const { d } = q;
  const n = f.steps.length;
  const conds = f.steps.map((s) => q.events.condition(s));
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`, `(${conds.join(' OR ')})`, filtersSql(d, f.filters)];
  // Step flags and the breakdown value are computed in the scan, before the identity join (the
  // property arrays never travel through the join).
  const exprs: Array<[string, string]> = [
    ['bv', f.breakdown ? `CASE WHEN ${d.propHas(f.breakdown)} THEN concat('1', ${d.propValueOr(f.breakdown, "''")}) ELSE '0' END` : `'0'`],
    ...conds.map((c, k): [string, string] => [`f${k}`, `CASE WHEN ${c} THEN 1 ELSE 0 END`]),
  ];
  // Duplicates of the dedup key have the same identity, time and flags: they change no chain.
  const ev = d.canonicalEvents({ projectId: q.projectId, overrides: q.overrides, where, exprs, dedup: false });
  return d.funnelPaths(`SELECT cid, time, ${exprs.map(([a]) => a).join(', ')} FROM ${ev} ev`, n, f.windowDays * DAY_MS, range.toEndMs - range.fromMs, !!f.breakdown);
}

/** Per step (and per step and segment): identities, mean and median time, listed ids. */
export function funnelSql(q: QueryContext, f: FunnelSpec, range: DateRange): string {
  const { d } = q;
  let sql = funnelPathsSql(q, f, range);
  // One row per (identity, step reached); then per (step, segment) and per (step, all).
  sql = `SELECT cid, level, seg, durs, ${d.explode(d.range0('level'))} AS k FROM (${sql}) pi WHERE ${d.keep(['cid', 'level', 'seg', 'durs'])}`;
  sql = `SELECT cid, level, k, durs[k + 1] AS dur, ${d.explode(f.breakdown ? "[seg, '*']" : "['*']")} AS sg FROM (${sql}) pk WHERE ${d.keep(['cid', 'level', 'seg', 'durs', 'k'])}`;
  const ids = (cond: string) => d.smallestIf('cid', cond, sqlInt(FUNNEL_ID_LIST_MAX));
  const sorted = d.sortStrings(d.groupArray('dur'));  // numbers: ascending
  return `SELECT k, sg, n, mean_ms, (sd[${d.intDiv('n - 1', '2')} + 1] + sd[${d.intDiv('n', '2')} + 1]) / 2 AS med_ms, reached, stopped FROM (
    SELECT k, sg, count(*) AS n, avg(${d.toFloat('dur')}) AS mean_ms,
      ${sorted} AS sd,
      CASE WHEN sg = '*' THEN ${ids('1 = 1')} ELSE ${d.emptyStrings()} END AS reached,
      CASE WHEN sg = '*' THEN ${ids('level = k + 1')} ELSE ${d.emptyStrings()} END AS stopped
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
