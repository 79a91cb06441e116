/**
 * Analyses benchmark (not a test). Loads a deterministic dataset (10M events, 200k identities,
 * 40 event names, 10 properties, 90 days, visits of 8 events one minute apart, 20% of visits under
 * anonymous ids linked to their user; dataset v4 (persons on events): file events-v4-N.duckdb, ClickHouse database bench_query_v4)
 * into each configured store, generated inside the engine (DuckDB: range(); ClickHouse: numbers()),
 * then reports each analysis' median latency next to a bare scan of the same rows and columns.
 *
 * The bare scan: `SELECT sum(hash(<columns>))` (ClickHouse: `cityHash64`) over the events in the
 * analysis' range (same project and time filter), where <columns> are the ones the analysis reads:
 * `event, person_key, time` for every case (persons as numbers, as the analyses read them), plus, for the cases that filter or break down on a
 * property, that property's materialised column (BENCH_MATERIALIZED, default p1,p2: as a
 * deployment materialises its hot properties) or else `prop_keys, prop_values`. Hashing makes the engine read and decode every value (a bare
 * `count()` reads nearly nothing), so "× bare scan" is the analysis' cost over reading its input
 * once; each case's scan runs interleaved with the case's own runs (same minutes, same machine state). ClickHouse's scan is without FINAL (the scan with FINAL is printed alongside); the loaded
 * table is merged, so analyses that count every row read it as stored, as they read any month
 * the service's compaction merged (BENCH_UNMERGED=1 leaves the last month unmerged: read FINAL).
 * After the fold the analyses read person_key alone (no identity join); "grouped per person"
 * (times grouped by person_key and sorted) is the floor of the analyses that group per person
 * (`groupedRatio`). On ClickHouse every case then runs again with the last month unmerged
 * (`freshMs`), and `aims` sums the run up against docs/performance.md's aims.
 *
 *   npm run bench:query                         # DuckDB file in $BENCH_DIR (default /tmp/bench-query)
 *   CLICKHOUSE_URL=http://127.0.0.1:8123 npm run bench:query   # also ClickHouse (database bench_query_v4)
 *   BENCH_EVENTS=1000000 BENCH_RUNS=5 BENCH_ENGINES=clickhouse ...   # smaller / more runs / one engine
 *   BENCH_CASES=flows,sessions ...             # only the cases whose name starts so
 *   BENCH_UNMERGED=1 ...                       # ClickHouse: the range's last month holds an unmerged copy
 *   BENCH_FRESH=0 ...                          # ClickHouse: skip the second pass with the last month unmerged (freshMs)
 *   BENCH_MATERIALIZED= ...                    # no materialised property: the property cases read the lists
 *   npm run bench:query -- --json              # also one final JSON line: per engine, per case median ms, bare-scan ms, ratio
 *
 * With both engines, every case's answer must be the same on both (the run fails otherwise).
 * Also timed: the ingestion worker's "has this alias any events?" lookup (event_ids) next to the
 * scan of the project's events it replaced (`aliasLookupMs`; both must find the same ids).
 */
import path from 'node:path';
import fs from 'node:fs';
import { ClickHouseEventStore } from '../apps/server/src/ports/events/clickhouse.js';
import { DuckDbEventStore, FILL_EVENT_IDS, materializedValue } from '../apps/server/src/ports/events/duckdb.js';
import type { EventStore } from '../apps/server/src/ports/events/index.js';
import { materializedProperties } from '../apps/server/src/ports/events/schema.js';
import { dialectFor } from '../apps/server/src/query/dialects/index.js';
import { EventMatcher } from '../apps/server/src/query/engine/filters.js';
import type { QueryContext } from '../apps/server/src/query/engine/context.js';
import { runSegmentation, segmentationSql } from '../apps/server/src/query/kinds/segmentation/compile.js';
import { runFunnel } from '../apps/server/src/query/kinds/funnel/compile.js';
import { runRetention } from '../apps/server/src/query/kinds/retention/compile.js';
import { runFlows } from '../apps/server/src/query/kinds/flows/compile.js';
import { runSessions } from '../apps/server/src/query/kinds/sessions/compile.js';
import { runCalculatedMetric } from '../apps/server/src/query/kinds/calculated-metric/compile.js';
import { membershipSql } from '../apps/server/src/cohorts/membership.js';
import { upgradeQuery } from '../apps/server/src/query/ir/upgrade.js';
import { irMetricContext } from '../apps/server/src/query/engine/ir-context.js';
import { runTrend, runTrendByCohorts } from '../apps/server/src/query/kinds/trend/ir.js';
import { filterConditions, withCohorts, type ResolvedCohort } from '../apps/server/src/query/engine/cohorts.js';
import { runIrFunnel } from '../apps/server/src/query/kinds/funnel/ir.js';
import { runDrilldown, type DrilldownSelection } from '../apps/server/src/query/ir/drilldown.js';
import { loadConfig } from '../apps/server/src/config.js';
import { buildAnalyses } from '../apps/server/src/query/analyses.js';
import type { QueryV2 } from '../apps/server/src/query/ir/document.js';
import type { IrDocument } from '../apps/server/src/query/ir/schema.js';
import { migrateMetadataStore, openMetadataStore } from '../apps/server/src/ports/metadata/knex.js';
import { foldIdentityLinks } from '../apps/server/src/identity/fold.js';
import { datasetSql } from './bench-dataset.js';

type IrAnalysis = QueryV2['analysis'];
const isKind = <K extends IrAnalysis['kind']>(a: IrAnalysis, kind: K): a is Extract<IrAnalysis, { kind: K }> => a.kind === kind;
/** The document as the runner of its kind takes it (the kind is checked, not assumed). */
function ofKind<K extends IrAnalysis['kind']>(doc: QueryV2, kind: K): IrDocument<Extract<IrAnalysis, { kind: K }>> {
  const { analysis } = doc;
  if (!isKind(analysis, kind)) throw new Error(`a ${kind} document was expected, not ${analysis.kind}`);
  return { ...doc, analysis };
}

const N = Number(process.env.BENCH_EVENTS ?? 10_000_000);
const IDS = 200_000;
const LOAD_CHUNK = 10_000_000;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const PROJECT = 1;
const T0 = Date.UTC(2024, 0, 1);
const DAYS = 90;
const range = { fromMs: T0, toEndMs: T0 + DAYS * 86_400_000 };
/**
 * BENCH_MATERIALIZED: the property keys stored in columns of their own (MATERIALIZED_PROPERTIES);
 * default p1,p2, the two the cases filter and break down on; empty: every property from the lists.
 */
const MATERIALIZED = materializedProperties((process.env.BENCH_MATERIALIZED ?? 'p1,p2').split(',').map((k) => k.trim()).filter(Boolean));
/** BENCH_UNMERGED=1: the last month of the range holds an unmerged copy (ClickHouse reads that month FINAL). */
const UNMERGED = process.env.BENCH_UNMERGED === '1';
/**
 * ClickHouse, unless BENCH_FRESH=0 or BENCH_UNMERGED=1: after the merged runs, every case runs
 * again with the range's last month unmerged (`freshMs`): data still being written to, beside merged data.
 */
const FRESH = process.env.BENCH_FRESH !== '0' && !UNMERGED;

/** The generated dataset's rows (scripts/bench-dataset.ts, shared with bench:console). */
const generatorSql = (dialect: 'duckdb' | 'clickhouse', start: number, count: number): string =>
  datasetSql(dialect, start, count, { project: PROJECT, t0: T0, spanMs: DAYS * 86_400_000, ids: IDS });

async function load(store: EventStore): Promise<void> {
  const have = await store.query<{ n: number }>(`SELECT count(*) AS n FROM events WHERE project_id = ${PROJECT}`);
  if (Number(have[0].n) === N) return console.log(`  ${store.dialect}: ${N} events already loaded`);
  const started = Date.now();
  await store.command(store.dialect === 'clickhouse' ? 'TRUNCATE TABLE events' : 'DELETE FROM events');
  await store.command(store.dialect === 'clickhouse' ? 'TRUNCATE TABLE identity_links' : 'DELETE FROM identity_links');
  // event_ids too: ClickHouse's view filled it from the previous load (another BENCH_EVENTS).
  await store.command(store.dialect === 'clickhouse' ? 'TRUNCATE TABLE event_ids' : 'DELETE FROM event_ids');
  // In chunks of 10M rows: one statement per chunk stays inside the client's request timeout.
  for (let start = 0; start < N; start += LOAD_CHUNK) {
    await store.command(`INSERT INTO events (project_id, id, event, distinct_id, time, insert_id, properties, prop_keys, prop_values, prop_types, received_at, person_id, person_key)
      ${generatorSql(store.dialect, start, Math.min(LOAD_CHUNK, N - start))}`);
  }
  const links = store.dialect === 'clickhouse'
    ? `SELECT ${PROJECT}, concat('a', toString(number)), concat('u', toString(number)), 0, 1 FROM numbers(${IDS})`
    : `SELECT ${PROJECT}, 'a' || i, 'u' || i, 0, 1 FROM range(${IDS}) t(i)`;
  await store.command(`INSERT INTO identity_links (project_id, distinct_id, canonical_id, from_time, created_at) ${links}`);
  await store.mergeQuietPartitions(0, 1000); // ClickHouse: each month merged, as the compaction leaves a quiet month
  // ClickHouse's event_ids fill from the inserts (a materialised view); DuckDB's at the events write,
  // which the generator's INSERT bypasses: filled as migrate fills a new store's.
  if (store.dialect === 'duckdb') await store.command(FILL_EVENT_IDS);
  // The generator's INSERT leaves DuckDB's materialised columns empty: filled as migrate fills a new one.
  for (const [key, column] of store.dialect === 'duckdb' ? store.materialized : []) {
    await store.command(`UPDATE events SET ${column} = ${materializedValue(key)}`);
  }
  console.log(`  ${store.dialect}: loaded ${N} events in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const folding = Date.now();
  const folded = await foldIdentityLinks({ events: store });
  foldMs[store.dialect] = Date.now() - folding;
  console.log(`  ${store.dialect}: folded ${folded} links into the events in ${(foldMs[store.dialect]! / 1000).toFixed(1)} s (identity/fold.ts)`);
}
const foldMs: Partial<Record<'duckdb' | 'clickhouse', number>> = {};

/**
 * The median time of RUNS runs after a warm-up, and the warm-up's answer; with `reference`, that
 * query runs after each run too and its median comes back as `refMs`: the machine's speed drifts
 * by tens of percent within minutes here, and a reference measured in the same minutes keeps the
 * ratio honest.
 */
async function timed(fn: () => Promise<unknown>, reference?: () => Promise<unknown>): Promise<{ ms: number; refMs: number; answer: unknown }> {
  const answer = await fn();
  const times: number[] = [];
  const refs: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const s = performance.now();
    await fn();
    times.push(performance.now() - s);
    if (!reference) continue;
    const t = performance.now();
    await reference();
    refs.push(performance.now() - t);
  }
  const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  return { ms: mid(times), refMs: mid(refs), answer };
}
const median = async (fn: () => Promise<unknown>) => (await timed(fn)).ms;

/** Each case's answer per engine: both engines hold the same dataset, so they must agree. */
const answers: Record<string, Partial<Record<'duckdb' | 'clickhouse', unknown>>> = {};
/** Drivers differ in number types (BigInt, numeric strings): compare as JSON of plain numbers. */
const plainJson = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : typeof x === 'string' && /^-?\d+(\.\d+)?$/.test(x) ? Number(x) : x));

async function bench(store: EventStore) {
  await store.migrate();
  if (store.dialect === 'clickhouse') await store.command('SYSTEM START MERGES events'); // a killed run's stop undone
  await load(store);
  // ClickHouse: every month merged as the service's compaction leaves a quiet month, and rewritten
  // once if a materialised column was added after its parts were written (one OPTIMIZE per
  // partition: a whole 50M-row table took longer than the client's request timeout).
  await store.mergeQuietPartitions(0, 1000);
  const d = dialectFor(store.dialect, store.materialized);
  // As the API builds it: after the fold the project has no unfolded link, so reads skip the join.
  const overrides = await store.hasUnfoldedLinks(PROJECT);
  // A month still receiving writes: one stored row of the range's last month written again, with
  // the table's merges stopped until the runs are done (a small month merged the copy away within
  // seconds). A run killed meanwhile leaves them stopped: the next run's merge step starts them.
  const writeToLastMonth = async () => {
    await store.command('SYSTEM STOP MERGES events');
    await store.command(`INSERT INTO events SELECT * FROM events WHERE project_id = ${PROJECT} AND time >= ${Date.UTC(2024, 2, 1)} LIMIT 1`);
  };
  const mergeAgain = async () => {
    await store.command('SYSTEM START MERGES events');
    await store.mergeQuietPartitions(0, 1000); // the copy merged away: the dataset is reused as loaded
  };
  if (UNMERGED && store.dialect === 'clickhouse') await writeToLastMonth();
  let unmerged = await store.unmergedRanges();
  const q: QueryContext = { d, projectId: PROJECT, events: new EventMatcher(d, new Map()), overrides, unmerged };
  const where = `project_id = ${PROJECT} AND time >= ${range.fromMs} AND time < ${range.toEndMs}`;
  const hash = store.dialect === 'clickhouse' ? 'cityHash64' : 'hash';
  const scanSql = (cols: string, final = '') => `SELECT sum(${hash}(${cols})) AS h FROM events${final} WHERE ${where}`;
  // What the analyses read: each person as its number (person_key), not a string.
  const BASE = 'event, person_key, time';
  const PROPS = `${BASE}, prop_keys, prop_values`;
  /** The columns a property case reads for `key`: its materialised column, else the lists. */
  const propCols = (key: string) => (store.materialized.has(key) ? `${BASE}, ${store.materialized.get(key)}` : PROPS);
  const scans: Record<string, number> = {};
  // The string ids' scan as well: the reference before analyses read person_key (comparisons across days).
  const STRING_IDS = 'event, distinct_id, time';
  for (const cols of new Set([BASE, PROPS, propCols('p1'), propCols('p2'), STRING_IDS])) scans[cols] = await median(() => store.query(scanSql(cols)));
  const scanFinal = store.dialect === 'clickhouse' ? await median(() => store.query(scanSql(BASE, ' FINAL'))) : undefined;
  // The least any per-identity analysis does: group the range's event times by person and sort
  // each person's times (the shape of sessions, funnels, retention and flows).
  const grouped = await median(() => store.query(store.dialect === 'clickhouse'
    ? `SELECT sum(length(ts)) AS n FROM (SELECT person_key, arraySort(groupArray(time)) AS ts FROM events WHERE ${where} GROUP BY person_key)`
    : `SELECT sum(len(ts)) AS n FROM (SELECT person_key, list(time ORDER BY time) AS ts FROM events WHERE ${where} GROUP BY person_key)`));
  /** Cases that group per person (funnels, retention, flows, sessions, unique counts): their floor is `grouped`. */
  const perPerson = (name: string) => /funnel|retention|flows|sessions|unique/.test(name);
  /** Cases that filter or break down on a property read its column or the property lists too. */
  const referenceOf = (name: string) => (/by p1|p1=v2/.test(name) ? propCols('p1') : /A-B/.test(name) ? propCols('p2') : BASE);
  const cases: Array<[string, () => Promise<unknown>]> = [
    ['segmentation total/day', () => runSegmentation(store, q, { event: 'e1', unit: 'day', type: 'total' }, range)],
    ['segmentation unique/week by p1', () => runSegmentation(store, q, { event: '$all_events', unit: 'week', type: 'unique', breakdown: 'p1' }, range)],
    // The buckets' statement alone: what the answer cost before it carried each series' exact total.
    ['segmentation unique/week by p1, buckets only', async () => (await store.query<{ b: number; bh: number; bv: string; v: number }>(segmentationSql(q, { event: '$all_events', unit: 'week', type: 'unique', breakdown: 'p1' }, range)))
      .map((r) => [Number(r.b), Number(r.bh), String(r.bv), Number(r.v)].join(' ')).sort()],
    ['funnel 3 steps, 7 days', () => runFunnel(store, q, { steps: ['e0', 'e1', 'e2'], windowDays: 7 }, range)],
    ['retention weekly, 8 buckets', () => runRetention(store, q, { bornEvent: 'e3', returnEvent: 'e0', unit: 'week', buckets: 8 }, range)],
    ['flows after, 3 steps', () => runFlows(store, q, { event: 'e5', direction: 'after', steps: 3, limit: 20 }, range)],
    ['sessions/day', () => runSessions(store, q, 'day', range)],
    ['metric (A-B)/A', () => runCalculatedMetric(store, q, 'm', { formula: '(A - B) / A', metrics: [{ id: 'A', event: 'e0', type: 'unique' }, { id: 'B', event: 'e1', type: 'total', filters: [{ key: 'p2', op: 'eq', value: 'v0' }] }] }, 'day', range)],
    ['cohort size (behaviour)', () => store.query(`SELECT count(*) AS n FROM (${membershipSql(q, { op: 'and', criteria: [{ kind: 'behavior', event: 'e2', op: 'gte', count: 3, windowDays: 0 }] }, { now: range.toEndMs })}) m`)],
  ];
  // The IR on the same questions as the v0 cases above (same range), and drilldown pages of 50.
  const ir = (body: Record<string, unknown>): QueryV2 => {
    const r = upgradeQuery({ v: 2, dateRange: { kind: 'absolute', from: '2024-01-01', to: '2024-03-30' }, ...body });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r.query;
  };
  const meta = openMetadataStore({ dataDir: dir, sqliteFile: ':memory:' }); // trend results list annotations
  await migrateMetadataStore(meta);
  const analyses = buildAnalyses(meta, store);
  const irTrend = (doc: QueryV2) => () => {
    const trend = ofKind(doc, 'trend');
    return runTrend({ events: store, analyses }, irMetricContext(d, PROJECT, doc, [], { overrides, unmerged }), trend, trend.analysis, range);
  };
  // As POST /api/query/drilldown runs it (its own context and range from the document).
  const irDrill = (doc: QueryV2, sel: DrilldownSelection) => () =>
    runDrilldown({ events: store, analyses, config: loadConfig({}) }, PROJECT, doc, sel, { limit: 50, offset: 0 });
  const uniqueByP1 = ir({ metrics: [{ id: 'A', kind: 'event', event: '$all_events', aggregation: { op: 'unique' } }], breakdown: { property: 'p1' }, analysis: { kind: 'trend', unit: 'week' } });
  const funnel3 = ir({ metrics: ['e0', 'e1', 'e2'].map((e, i) => ({ id: 'ABC'[i], kind: 'event', event: e, aggregation: { op: 'unique' } })), analysis: { kind: 'funnel', steps: ['A', 'B', 'C'], window: { value: 7, unit: 'day' } } });
  cases.push(
    ['IR trend total/day', irTrend(ir({ metrics: [{ id: 'A', kind: 'event', event: 'e1', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } }))],
    ['IR trend unique/week by p1', irTrend(uniqueByP1)],
    ['IR funnel 3 steps, 7 days', () => {
      const funnel = ofKind(funnel3, 'funnel');
      return runIrFunnel(store, irMetricContext(d, PROJECT, funnel3, [], { overrides, unmerged }), funnel, funnel.analysis, range);
    }],
    ['IR drilldown 50: trend week 3, p1=v2', irDrill(uniqueByP1, { kind: 'trend', metricId: 'A', bucket: 3, range: 'primary', segment: 'v2' })],
    ['IR drilldown 50: funnel reached step 1', irDrill(funnel3, { kind: 'funnel', step: 1, mode: 'reached', range: 'primary' })],
    ['IR drilldown 50: funnel dropped step 2', irDrill(funnel3, { kind: 'funnel', step: 2, mode: 'dropped', range: 'primary' })],
  );
  // Cohorts in a trend (engine/cohorts.ts): the same total/day filtered by a cohort (its membership
  // joined to the read), and broken down by two cohorts (one run per cohort): against 'IR trend
  // total/day' and 'cohort size (behaviour)' of the same run.
  const behaviour = (op: 'gte' | 'lt'): ResolvedCohort['definition'] => ({ op: 'and', criteria: [{ kind: 'behavior', event: 'e2', op, count: 3, windowDays: 0 }] });
  const benchCohorts = new Map<number, ResolvedCohort>([[1, { id: 1, name: 'e2 ≥ 3', definition: behaviour('gte') }], [2, { id: 2, name: 'e2 < 3', definition: behaviour('lt') }]]);
  const irCohortTrend = (doc: QueryV2) => () => {
    const trend = ofKind(doc, 'trend');
    const base = { ...irMetricContext(d, PROJECT, doc, [], { overrides, unmerged }), cohorts: { byId: benchCohorts, now: range.toEndMs } };
    const cq = withCohorts(base, filterConditions(trend.filters, benchCohorts), range.toEndMs);
    return (trend.breakdown ? runTrendByCohorts : runTrend)({ events: store, analyses }, cq, trend, trend.analysis, range);
  };
  const totalE1 = { metrics: [{ id: 'A', kind: 'event', event: 'e1', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } };
  cases.push(
    ['IR trend total/day, in cohort', irCohortTrend(ir({ ...totalE1, filters: [{ cohort: 1, op: 'in' }] }))],
    ['IR trend total/day by 2 cohorts', irCohortTrend(ir({ ...totalE1, breakdown: { cohorts: [1, 2] } }))],
  );
  // The threads a query may use: ClickHouse 18.16 counts physical cores (1 on some 2-vCPU VMs, 2 on
  // others), DuckDB is given cores - 1 by the service: runs on different machines compare only so.
  const threads = Number((await store.query<{ t: string | number }>(store.dialect === 'clickhouse'
    ? `SELECT value AS t FROM system.settings WHERE name = 'max_threads'` : `SELECT current_setting('threads') AS t`))[0].t);
  console.log(`\n${store.dialect} (${threads} thread${threads === 1 ? '' : 's'} per query): bare scan ${hash}(${BASE}) ${scans[BASE].toFixed(0)} ms${scanFinal !== undefined ? ` (with FINAL ${scanFinal.toFixed(0)} ms)` : ''}, ${Object.keys(scans).filter((c) => c !== BASE).map((c) => `${hash}(${c}) ${scans[c].toFixed(0)} ms`).join(', ')}; times grouped and sorted per person ${grouped.toFixed(0)} ms`);
  console.log('| analysis | median ms | bare scan ms | × bare scan | × grouped per person |');
  console.log('|---|---:|---:|---:|---:|');
  // The ingestion worker's question for a non-anonymous alias (has it any events?), as it asks it
  // (event_ids, a key lookup) next to the scan of the project's events it asked before.
  const lookupIds = [...Array.from({ length: 10 }, (_, i) => `u${i * 9973}`), ...Array.from({ length: 10 }, (_, i) => `a${i * 7919}`), 'nobody-1', 'nobody-2', 'nobody-3', 'nobody-4', 'nobody-5'];
  const lookupScan = `SELECT DISTINCT distinct_id FROM events WHERE project_id = ${PROJECT} AND distinct_id IN (${lookupIds.map((i) => `'${i}'`).join(', ')})`;
  const viaIds = await timed(async () => [...(await store.idsWithEvents(PROJECT, lookupIds))].sort());
  const viaScan = await timed(async () => (await store.query<{ distinct_id: string }>(lookupScan)).map((r) => r.distinct_id).sort());
  if (plainJson(viaIds.answer) !== plainJson(viaScan.answer)) throw new Error(`event_ids disagrees with the events: ${plainJson(viaIds.answer)} vs ${plainJson(viaScan.answer)}`);
  console.log(`alias history lookup (${lookupIds.length} ids): event_ids ${viaIds.ms.toFixed(1)} ms, scan of the events ${viaScan.ms.toFixed(1)} ms`);
  const only = process.env.BENCH_CASES?.split(',');
  const out: EngineResult = { aliasLookupMs: { eventIds: Math.round(viaIds.ms * 10) / 10, eventsScan: Math.round(viaScan.ms * 10) / 10 }, events: N, threads, groupedMs: Math.round(grouped), scanMs: Math.round(scans[BASE]), scanPropsMs: Math.round(scans[PROPS]), scanStringIdsMs: Math.round(scans[STRING_IDS]), cases: {} };
  if (store.materialized.size) out.scanMaterializedMs = Object.fromEntries(['p1', 'p2'].filter((k) => store.materialized.has(k)).map((k) => [k, Math.round(scans[propCols(k)])]));
  if (foldMs[store.dialect] !== undefined) out.foldMs = foldMs[store.dialect];
  if (scanFinal !== undefined) out.scanFinalMs = Math.round(scanFinal);
  if (unmerged) out.unmergedMonths = unmerged.length;
  for (const [name, fn] of cases) {
    if (only && !only.some((o) => name.startsWith(o))) continue;
    try {
      // Its bare scan again, interleaved with its runs (the header's scans were measured first).
      const { ms, refMs: scan, answer } = await timed(fn, () => store.query(scanSql(referenceOf(name))));
      (answers[name] ??= {})[store.dialect] = answer;
      const overGrouped = perPerson(name) ? ms / grouped : undefined;
      console.log(`| ${name} | ${ms.toFixed(0)} | ${scan.toFixed(0)} | ${(ms / scan).toFixed(1)} | ${overGrouped?.toFixed(1) ?? ''} |`);
      out.cases[name] = { medianMs: Math.round(ms), bareScanMs: Math.round(scan), ratio: Math.round((ms / scan) * 100) / 100,
        ...(overGrouped !== undefined ? { groupedRatio: Math.round(overGrouped * 100) / 100 } : {}) };
    } catch (e) {
      const error = String((e as Error).message ?? e).split('\n')[0].slice(0, 120);
      console.log(`| ${name} | failed: ${error} | | |`);
      out.cases[name] = { error };
    }
  }
  if (FRESH && store.dialect === 'clickhouse') {
    await writeToLastMonth();
    q.unmerged = unmerged = await store.unmergedRanges(); // the IR cases read `unmerged` when they run
    out.freshUnmergedMonths = unmerged.length;
    console.log(`\nclickhouse, the range's last month unmerged (read FINAL): fresh ms beside merged ms`);
    for (const [name, fn] of cases) {
      const merged = out.cases[name];
      if (!merged || 'error' in merged) continue;
      try {
        const { ms, answer } = await timed(fn);
        // A copy of a row changes no answer: FINAL (or the dedup) must remove it.
        if (plainJson(answer) !== plainJson(answers[name][store.dialect])) throw new Error('answer differs from the merged run');
        merged.freshMs = Math.round(ms);
        console.log(`| ${name} | ${ms.toFixed(0)} | ${merged.medianMs} |`);
      } catch (e) {
        merged.freshError = String((e as Error).message ?? e).split('\n')[0].slice(0, 120);
        console.log(`| ${name} | failed: ${merged.freshError} | ${merged.medianMs} |`);
      }
    }
  }
  if (store.dialect === 'clickhouse' && (UNMERGED || FRESH)) await mergeAgain();
  out.aims = aimsOf(out);
  await meta.destroy(); // its pool kept the process alive after the last engine
  return out;
}

/**
 * Where the run stands against the aims (docs/performance.md): cases that group per person over
 * the grouping (≤ 1.5), the others over their bare scan (≤ 3), the slowest case (≤ 2,000 ms at 10M).
 */
function aimsOf(out: EngineResult): NonNullable<EngineResult['aims']> {
  const ok = Object.values(out.cases).filter((c): c is CaseResult => !('error' in c));
  const max = (xs: number[]) => (xs.length ? Math.max(...xs) : null);
  return {
    maxMs: max(ok.map((c) => c.medianMs)),
    maxFreshMs: max(ok.flatMap((c) => (c.freshMs !== undefined ? [c.freshMs] : []))),
    perPersonMaxGroupedRatio: max(ok.flatMap((c) => (c.groupedRatio !== undefined ? [c.groupedRatio] : []))),
    othersMaxRatio: max(ok.filter((c) => c.groupedRatio === undefined).map((c) => c.ratio)),
    failed: Object.keys(out.cases).length - ok.length,
  };
}

interface CaseResult {
  medianMs: number;
  bareScanMs: number;
  ratio: number;
  /** Over `groupedMs`, for the cases that group per person. */
  groupedRatio?: number;
  /** The same case with the range's last month unmerged (ClickHouse reads it FINAL). */
  freshMs?: number;
  freshError?: string;
}

interface EngineResult {
  events: number;
  /** Threads per query (ClickHouse max_threads, DuckDB threads). */
  threads: number;
  /** Bare scan of the base columns plus each materialised property's column. */
  scanMaterializedMs?: Record<string, number>;
  /** Months of the table read with FINAL by the analyses that count every row. */
  unmergedMonths?: number;
  scanMs: number;
  scanPropsMs: number;
  /** The bare scan with distinct_id (a string) for person_key: the reference of runs before person_key. */
  scanStringIdsMs: number;
  scanFinalMs?: number;
  /** Times grouped and sorted per person over the range: the floor of per-identity analyses. */
  groupedMs: number;
  /** The worker's "has this alias events?" lookup: event_ids, and the scan of the events it replaced. */
  aliasLookupMs: { eventIds: number; eventsScan: number };
  /** Folding the dataset's 200k links into the events after loading (only when this run loaded it). */
  foldMs?: number;
  cases: Record<string, CaseResult | { error: string }>;
  /** Months read FINAL in the fresh-data runs (ClickHouse). */
  freshUnmergedMonths?: number;
  /** The run against the aims: slowest case, per-person cases over the grouping, the others over their scan. */
  aims?: { maxMs: number | null; maxFreshMs: number | null; perPersonMaxGroupedRatio: number | null; othersMaxRatio: number | null; failed: number };
  /** Both engines ran: whether every case answered the same on both. */
  enginesAgree?: boolean;
}

const dir = process.env.BENCH_DIR ?? '/tmp/bench-query';
fs.mkdirSync(dir, { recursive: true });
console.log(`dataset: ${N} events, ${IDS} identities, 40 names, 10 properties, ${DAYS} days; median of ${RUNS} runs`);
const engines = (process.env.BENCH_ENGINES ?? 'duckdb,clickhouse').split(',');
const results: Record<string, EngineResult> = {};
if (engines.includes('duckdb')) {
  const duck = new DuckDbEventStore(path.join(dir, `events-v4-${N}.duckdb`), undefined, MATERIALIZED);
  results.duckdb = await bench(duck);
  await duck.close();
}
const chUrl = process.env.CLICKHOUSE_URL ?? process.env.TEST_CLICKHOUSE_URL;
if (chUrl && engines.includes('clickhouse')) {
  const ch = new ClickHouseEventStore({ url: chUrl, database: process.env.BENCH_CLICKHOUSE_DATABASE ?? 'bench_query_v4' }, undefined, MATERIALIZED);
  results.clickhouse = await bench(ch);
  await ch.close();
}
// The same dataset in both engines: every case must answer the same (a check at a scale the
// generated reference tests never reach).
const compared = Object.entries(answers).filter(([, a]) => 'duckdb' in a && 'clickhouse' in a);
const differing = compared.filter(([, a]) => plainJson(a.duckdb) !== plainJson(a.clickhouse)).map(([name]) => name);
if (compared.length > 0) {
  console.log(`\nanswers: DuckDB and ClickHouse agree on ${compared.length - differing.length} of ${compared.length} cases${differing.length ? `; DIFFER: ${differing.join(', ')}` : ''}`);
  for (const name of differing) for (const e of ['duckdb', 'clickhouse'] as const) console.log(`  ${name}, ${e}: ${plainJson(answers[name][e]).slice(0, 300)}`);
  for (const r of Object.values(results)) r.enginesAgree = differing.length === 0;
}
if (process.argv.includes('--json')) console.log(JSON.stringify(results));
if (differing.length > 0) process.exitCode = 1;
