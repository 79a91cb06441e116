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
 * aggregated per step and per segment (funnelSql). `funnelPathsSql` is the per-identity layer: one
 * row per identity that reached step 0 with `cid`, `level` (steps reached), `seg` ('0' missing,
 * '1' + value) and `durs`; the IR drilldown pages through it.
 */
export function funnelPathsSql(q: QueryContext, f: FunnelSpec, range: DateRange): string {
  const { d } = q;
  const n = f.steps.length;
  const W = sqlInt(f.windowDays * DAY_MS);
  const conds = f.steps.map((s) => q.events.condition(s));
  const where = [`time >= ${sqlInt(range.fromMs)}`, `time < ${sqlInt(range.toEndMs)}`, `(${conds.join(' OR ')})`, filtersSql(d, f.filters)];
  // Step flags and the breakdown value are computed in the scan, before the identity join (the
  // property arrays never travel through the join).
  const exprs: Array<[string, string]> = [
    ['bv', f.breakdown ? `CASE WHEN ${d.propHas(f.breakdown)} THEN concat('1', ${d.propValueOr(f.breakdown, "''")}) ELSE '0' END` : `'0'`],
    ...conds.map((c, k): [string, string] => [`f${k}`, `CASE WHEN ${c} THEN 1 ELSE 0 END`]),
  ];
  let sql: string;
  // Duplicates of the dedup key have the same identity, time and flags: they change no chain.
  const ev = d.canonicalEvents({ projectId: q.projectId, where, exprs, dedup: false });
  const perEvent = `SELECT cid, time, ${exprs.map(([a]) => a).join(', ')} FROM ${ev} ev`;
  const ks = Array.from({ length: n - 1 }, (_, i) => i + 1);
  // c_k: the unbounded greedy chain from a start (earliest step-k time strictly after c_{k-1};
  // 0/NULL when none). Chains are strictly increasing, so the start's level is 1 + the number of
  // c_k inside the window. The path: the most steps, then the earliest start, then the smallest bv.
  if (d.name === 'clickhouse') {
    // Per identity: starts as sorted (time, bv) tuples and each step's sorted times; lambdas run over
    // the starts and search one step's times (arrayFirst), capturing no whole-identity array.
    const arrays = [`arraySort(groupArrayIf((time, bv), f0 = 1)) AS s0`, ...ks.map((k) => `arraySort(groupArrayIf(time, f${k} = 1)) AS T${k}`)];
    const chains = ks.map((k) => (k === 1
      ? `arrayMap(s -> arrayFirst(x -> x > s.1, T1), s0) AS c1`
      : `arrayMap(p -> if(p = 0, 0, arrayFirst(x -> x > p, T${k})), c${k - 1}) AS c${k}`));
    const lvBody = ['1', ...ks.map((k) => `(y${k} != 0 AND y${k} <= s.1 + ${W})`)].join(' + ');
    const lv = `arrayMap((s${ks.map((k) => `, y${k}`).join('')}) -> ${lvBody}, s0${ks.map((k) => `, c${k}`).join('')}) AS lv`;
    sql = `SELECT cid, arrayReduce('max', lv) AS level, s0[indexOf(lv, level)] AS st, st.2 AS seg,
        [toInt64(0)${ks.map((k) => `, c${k}[indexOf(lv, level)] - st.1`).join('')}] AS durs
      FROM (SELECT cid, s0, ${[...chains, lv].join(', ')} FROM (
        SELECT cid, ${arrays.join(', ')} FROM (${perEvent}) pe GROUP BY cid HAVING countIf(f0 = 1) > 0
      ) pg WHERE ${d.keep(['s0', ...ks.map((k) => `T${k}`)])}) pc`;
  } else {
    // DuckDB: each chain step is an ASOF join (the earliest step-k event strictly after c_{k-1}).
    const cte = [`ev AS MATERIALIZED (${perEvent})`, `c0 AS (SELECT cid, time AS t0, bv FROM ev WHERE f0 = 1)`];
    for (const k of ks) {
      const prev = k === 1 ? 'c.t0' : `c.c${k - 1}`;
      cte.push(`c${k} AS (SELECT c.*, e.time AS c${k} FROM c${k - 1} c ASOF LEFT JOIN (SELECT cid, time FROM ev WHERE f${k} = 1) e ON c.cid = e.cid AND ${prev} < e.time)`);
    }
    const level = ['1', ...ks.map((k) => `CASE WHEN c${k} IS NOT NULL AND c${k} <= t0 + ${W} THEN 1 ELSE 0 END`)].join(' + ');
    cte.push(`lv AS (SELECT *, ${level} AS level FROM c${n - 1})`);
    sql = `WITH ${cte.join(',\n')}
      SELECT cid, level, bv AS seg, [0::BIGINT${ks.map((k) => `, c${k} - t0`).join('')}] AS durs
      FROM lv QUALIFY row_number() OVER (PARTITION BY cid ORDER BY level DESC, t0, bv) = 1`;
  }
  return sql;
}

/** Per step (and per step and segment): identities, mean and median time, listed ids. */
export function funnelSql(q: QueryContext, f: FunnelSpec, range: DateRange): string {
  const { d } = q;
  let sql = funnelPathsSql(q, f, range);
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
