/**
 * bench:experiments: an experiment's results over the generated dataset of bench:query
 * (scripts/bench-dataset.ts) plus one `$experiment_started` per exposed unit, on each engine: the
 * per-unit aggregation (experiments/sql.ts, one statement for every metric) and the statistics
 * (experiments/stats.ts) on its per-variant totals, against the bare scan of the events (count()
 * of the same rows, their event column read) and the read of the sum metric's property alone (its events' values, from the
 * key/value lists or the materialised column: what no statement over these columns can skip),
 * measured in the same minutes.
 *
 *   eval "$(bash scripts/services.sh --env)"
 *   npm run bench:experiments                                # 10M events, 100k exposed units, both engines
 *   BENCH_EVENTS=1000000 BENCH_ENGINES=duckdb npm run bench:experiments
 *   npm run bench:experiments -- --json                      # also one final JSON line per engine
 *
 * BENCH_UNITS sets the exposed units (default 100000, at most the dataset's 200k identities),
 * BENCH_RUNS the runs whose median is reported (default 5, after one warm-up), BENCH_TIMEOUT_MS
 * the statement timeout (default 120000: a figure past the server's 30 s is still a figure).
 * BENCH_MATERIALIZED names event properties read from columns of their own, as
 * MATERIALIZED_PROPERTIES does (e.g. `p3`, the sum metric's property): the lists are then read
 * for the exposures only.
 *
 * On DuckDB, unless the sum's property is in BENCH_MATERIALIZED or BENCH_RUNTIME_MATERIALIZE=0,
 * the run then does what creating the experiment does in the service (query/property-materializer.ts):
 * materialises the property at runtime (EventStore.materialize, timed: `materializeMs`), checks
 * the totals are the same, and times the results again (`materializedResultsMs`). The column and
 * its key are dropped afterwards, so the kept file stays unmaterialised for the next run.
 */
import path from 'node:path';
import fs from 'node:fs';
import { ClickHouseEventStore } from '../apps/server/src/ports/events/clickhouse.js';
import { DuckDbEventStore } from '../apps/server/src/ports/events/duckdb.js';
import { sqlString, type EventStore } from '../apps/server/src/ports/events/index.js';
import { materializedProperties, PERSON_KEY_SQL } from '../apps/server/src/ports/events/schema.js';
import { DEFAULT_QUERY_LIMITS } from '../apps/server/src/ports/events/port.js';
import { dialectFor } from '../apps/server/src/query/dialects/index.js';
import { EventMatcher } from '../apps/server/src/query/engine/filters.js';
import type { QueryContext } from '../apps/server/src/query/engine/context.js';
import { experimentTotals, type ExposureSpec } from '../apps/server/src/experiments/sql.js';
import { analyzeMetrics, sampleRatioMismatch } from '../apps/server/src/experiments/stats.js';
import { seedDataset, type DatasetShape } from './bench-dataset.js';

const N = Number(process.env.BENCH_EVENTS ?? 10_000_000);
const UNITS = Number(process.env.BENCH_UNITS ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const DAYS = 90;
const LIMITS = { ...DEFAULT_QUERY_LIMITS, timeoutMs: Number(process.env.BENCH_TIMEOUT_MS ?? 120_000) };
const MATERIALIZED = materializedProperties((process.env.BENCH_MATERIALIZED ?? '').split(',').map((k) => k.trim()).filter(Boolean));
const SHAPE: DatasetShape = { project: 1, t0: Date.UTC(2024, 0, 1), spanMs: DAYS * 86_400_000, ids: 200_000 };
if (UNITS > SHAPE.ids) throw new Error(`BENCH_UNITS must be at most ${SHAPE.ids}`);

const SPEC: ExposureSpec = {
  experimentKey: 'bench-exp',
  flagKey: 'bench-flag',
  variants: ['control', 'treatment'],
  startAt: SHAPE.t0,
  endAt: SHAPE.t0 + SHAPE.spanMs,
  metrics: [
    { id: 'converted', kind: 'conversion', event: 'e5' },
    { id: 'events', kind: 'count', event: 'e1', windowHours: 24 * 14 },
    { id: 'value', kind: 'sum', event: 'e2', property: 'p3' },
  ],
};

/**
 * One exposure per unit (the dataset's users u0…u{UNITS-1}), spread over the first week, the
 * variant alternating; a tenth of them exposed a second time in the other variant (excluded).
 */
function exposuresSql(dialect: 'duckdb' | 'clickhouse'): string {
  const ch = dialect === 'clickhouse';
  const i = ch ? 'number' : 'i';
  const str = (e: string) => (ch ? `toString(${e})` : `CAST(${e} AS VARCHAR)`);
  const id = ch ? `concat('u', toString(${i} % ${UNITS}))` : `('u' || CAST(${i} % ${UNITS} AS VARCHAR))`;
  // Rows past UNITS are the second exposures: the other variant, a day later.
  const variant = `CASE WHEN ((${i} % ${UNITS}) + (CASE WHEN ${i} >= ${UNITS} THEN 1 ELSE 0 END)) % 2 = 0 THEN 'control' ELSE 'treatment' END`;
  const time = `${SHAPE.t0} + (${i} % ${UNITS}) * 6000 + (CASE WHEN ${i} >= ${UNITS} THEN 86400000 ELSE 0 END)`;
  const cols = `${SHAPE.project} AS project_id, ${N} + ${i} AS id, '$experiment_started' AS event, ${id} AS distinct_id, ${time} AS time,
    ${ch ? `concat('x', ${str(i)})` : `'x' || ${str(i)}`} AS insert_id, '' AS properties, ['Experiment name', 'Variant name'] AS prop_keys,
    ['bench-exp', ${variant}] AS prop_values, 'ss' AS prop_types, ${time} AS received_at, ${id} AS person_id, ${PERSON_KEY_SQL[dialect](id)} AS person_key`;
  const rows = UNITS + Math.floor(UNITS / 10);
  return ch ? `SELECT ${cols} FROM numbers(${rows})` : `SELECT ${cols} FROM range(${rows}) t(i)`;
}

async function load(store: EventStore): Promise<void> {
  const have = await store.query<{ n: number }>(`SELECT count(*) AS n FROM events WHERE project_id = ${SHAPE.project}`);
  const want = N + UNITS + Math.floor(UNITS / 10);
  if (Number(have[0].n) === want) return console.log(`  ${store.dialect}: ${want} events already loaded`);
  const seeded = await seedDataset(store, N, SHAPE);
  await store.command(`INSERT INTO events (project_id, id, event, distinct_id, time, insert_id, properties, prop_keys, prop_values, prop_types, received_at, person_id, person_key)
    ${exposuresSql(store.dialect)}`);
  await store.mergeQuietPartitions(0, 1000);
  console.log(`  ${store.dialect}: loaded ${N} events and ${want - N} exposures in ${(seeded.loadMs / 1000).toFixed(1)} s, folded ${seeded.folded} links`);
}

async function median(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const s = performance.now();
    await fn();
    times.push(performance.now() - s);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

interface EngineResult {
  events: number;
  exposedUnits: number;
  excludedMultipleVariants: number;
  metrics: number;
  /** The aggregation and the statistics, as GET /api/experiments/{id}/results computes them uncached. */
  resultsMs: number;
  /** count() of the same events: the engine's floor for reading them. */
  bareScanMs: number;
  /** The sum metrics' property read for their events alone (count() of its values): the floor of reading it. */
  propertyScanMs: number;
  ratio: number;
  aimMs: number;
  aimMet: boolean;
  loadAverage: number;
  materialized: string[];
  /** DuckDB: ms to materialise the sum's property at runtime on the loaded store (EventStore.materialize). */
  materializeMs?: number;
  /** The results once it is materialised, and the load average then. */
  materializedResultsMs?: number;
  materializedLoadAverage?: number;
}

const RUNTIME = process.env.BENCH_RUNTIME_MATERIALIZE !== '0';
const loadAverage = async () => Math.round((await import('node:os')).loadavg()[0] * 10) / 10;

/** Drops the keys materialised at runtime (their columns and their rows): the kept file back to what the loader made. */
async function unmaterialize(store: EventStore, keys: string[]): Promise<void> {
  for (const key of keys) {
    await store.command(`DELETE FROM materialized_properties WHERE key = ${sqlString('duckdb', key)}`);
    await store.command(`ALTER TABLE events DROP COLUMN IF EXISTS ${store.materialized.get(key)}`);
  }
}

async function bench(store: EventStore): Promise<EngineResult> {
  await store.migrate();
  await load(store);
  const d = dialectFor(store.dialect, store.materialized);
  const contextOf = async (dialect: typeof d): Promise<QueryContext> => ({
    d: dialect, projectId: SHAPE.project, events: new EventMatcher(dialect, new Map()),
    overrides: await store.hasUnfoldedLinks(SHAPE.project), unmerged: await store.unmergedRanges(),
  });
  let q = await contextOf(d);
  let last: Awaited<ReturnType<typeof experimentTotals>> | undefined;
  const run = async () => {
    last = await experimentTotals(store, q, SPEC);
    analyzeMetrics(last.metrics, 'control', { engine: 'frequentist', confidenceLevel: 0.95, sequential: true, correction: 'holm' });
    sampleRatioMismatch(SPEC.variants.map((v) => last!.exposures[v]), [50, 50]);
  };
  const resultsMs = await median(run);
  // event != '': the event column read (a count over the time range alone may come from the column statistics: 1 ms on DuckDB).
  const bareScanMs = await median(() => store.query(`SELECT count(*) AS n FROM events WHERE project_id = ${SHAPE.project} AND time >= ${SPEC.startAt} AND time <= ${SPEC.endAt} AND event != ''`));
  const summed = SPEC.metrics.filter((m) => m.kind === 'sum');
  const propertyScanMs = await median(() => store.query(`SELECT ${summed.map((m, i) => `count(${d.propValue(m.property!)}) AS n${i}`).join(', ')} FROM events
    WHERE project_id = ${SHAPE.project} AND time >= ${SPEC.startAt} AND time <= ${SPEC.endAt} AND event IN (${summed.map((m) => d.str(m.event)).join(', ')})`));
  const exposed = Object.values(last!.exposures).reduce((s, n) => s + n, 0);
  const out: EngineResult = {
    events: N, exposedUnits: exposed, excludedMultipleVariants: last!.excludedMultipleVariants, metrics: SPEC.metrics.length,
    resultsMs: Math.round(resultsMs), bareScanMs: Math.round(bareScanMs), propertyScanMs: Math.round(propertyScanMs), ratio: Math.round((resultsMs / bareScanMs) * 100) / 100,
    aimMs: 2000, aimMet: resultsMs <= 2000, loadAverage: await loadAverage(), materialized: [...MATERIALIZED.keys()],
  };
  console.log(`| ${store.dialect} | ${out.resultsMs} | ${out.bareScanMs} | ${out.propertyScanMs} | ${out.ratio} | ${exposed} | ${out.excludedMultipleVariants} |`);
  const keys = summed.map((m) => m.property!).filter((k) => !store.materialized.has(k));
  if (RUNTIME && store.materialize && keys.length > 0) {
    const before = JSON.stringify(last);
    try {
      const s = performance.now();
      for (const k of keys) if ((await store.materialize(k)) !== 'materialized') throw new Error(`the store refused to materialise ${k}`);
      out.materializeMs = Math.round(performance.now() - s);
      q = await contextOf(dialectFor(store.dialect, store.materialized));
      out.materializedResultsMs = Math.round(await median(run));
      out.materializedLoadAverage = await loadAverage();
      if (JSON.stringify(last) !== before) {
        console.log('totals DIFFER once materialised');
        process.exitCode = 1;
      }
      console.log(`${store.dialect}: ${keys.join(', ')} materialised at runtime in ${out.materializeMs} ms; results then ${out.materializedResultsMs} ms (load average ${out.materializedLoadAverage})`);
    } finally {
      await unmaterialize(store, keys);
    }
  }
  return out;
}

const dir = process.env.BENCH_DIR ?? '/tmp/bench-experiments';
fs.mkdirSync(dir, { recursive: true });
console.log(`dataset: ${N} events (bench:query's), ${UNITS} exposed units (a tenth also in the other variant), ${SPEC.metrics.length} metrics; median of ${RUNS} runs; materialised: ${[...MATERIALIZED.keys()].join(', ') || 'none'}`);
console.log('| engine | results ms | bare scan ms | sum property read ms | ratio | exposed units | excluded |\n|---|---|---|---|---|---|---|');
const engines = (process.env.BENCH_ENGINES ?? 'duckdb,clickhouse').split(',');
const results: Record<string, EngineResult> = {};
if (engines.includes('duckdb')) {
  const open = () => new DuckDbEventStore(path.join(dir, `events-${N}-${UNITS}.duckdb`), LIMITS, MATERIALIZED);
  let duck = open();
  // Keys a run cut short left materialised: dropped, so this run starts from the lists again.
  await duck.migrate();
  const leftover = [...duck.materialized.keys()].filter((k) => !MATERIALIZED.has(k));
  if (leftover.length > 0) {
    await unmaterialize(duck, leftover);
    await duck.close();
    duck = open();
  }
  results.duckdb = await bench(duck);
  await duck.close();
}
const chUrl = process.env.CLICKHOUSE_URL ?? process.env.TEST_CLICKHOUSE_URL;
if (chUrl && engines.includes('clickhouse')) {
  const ch = new ClickHouseEventStore({ url: chUrl, database: process.env.BENCH_CLICKHOUSE_DATABASE ?? 'bench_experiments' }, LIMITS, MATERIALIZED);
  results.clickhouse = await bench(ch);
  await ch.close();
}
// Both engines hold the same rows: their totals must agree.
if (results.duckdb && results.clickhouse && (results.duckdb.exposedUnits !== results.clickhouse.exposedUnits || results.duckdb.excludedMultipleVariants !== results.clickhouse.excludedMultipleVariants)) {
  console.log('engines DIFFER on exposures');
  process.exitCode = 1;
}
if (process.argv.includes('--json')) console.log(JSON.stringify(results));
