/**
 * The live board (not a test): what a board run costs after new events arrived today, with the
 * closed days' parts kept (RESULTS_CACHE_PARTIALS=1, the default) and without (0). Seeds
 * `--events N` generated events (default 2M; scripts/bench-dataset.ts) over the 30 days ending
 * now into the chosen engine, then for each setting starts the service on those stores (one API +
 * worker, warming off, statements up to 300 s (a loaded machine), RESULTS_CACHE_FRESH_MS=0 so a run after today's events is a miss at once,
 * as it is after the default 60 s), saves the 12 reports of bench:console on a board of the last
 * 30 days, runs it once (nothing cached or kept: `firstMs`), then `--runs` times: sends 20 events of today
 * through /track, waits until they are counted, and times one POST /api/boards/{id}/run
 * (`liveMs`, the API alone), then runs the 3 cards a run cuts per day (segmentations of event
 * totals) one report run each (`cutCardsMs`). Medians; the load average at the end of each setting.
 *
 *   npx tsx scripts/bench-closed-days.ts --events 2000000 --runs 5 --json
 *   npx tsx scripts/bench-closed-days.ts --engine clickhouse   # ClickHouse at CLICKHOUSE_URL or TEST_CLICKHOUSE_URL (database bench_closed_days)
 */
import path from 'node:path';
import os from 'node:os';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { ClickHouseEventStore } from '../apps/server/src/ports/events/clickhouse.js';
import { DuckDbEventStore } from '../apps/server/src/ports/events/duckdb.js';
import type { EventStore } from '../apps/server/src/ports/events/index.js';
import { arg, benchApi, startBenchService } from './bench-support.js';
import { seedDataset } from './bench-dataset.js';

const N = Number(arg('events', '2000000'));
const RUNS = Number(arg('runs', '5'));
const ENGINE = arg('engine', 'duckdb') as 'duckdb' | 'clickhouse';
const JSON_OUT = process.argv.includes('--json');
const DAY = 86_400_000;
const PROJECT = 1;
const now = Date.now();
const today = Math.floor(now / DAY) * DAY;
const t0 = today - 29 * DAY;
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const from = iso(t0);
const to = iso(today);
/** The cards a run cuts per day (reports/partials.ts): segmentations of event totals. */
const CUT = ['e0 per day', 'e2 by p1', 'all events where p2 = v1'];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The 12 cards of bench:console (scripts/bench-console.ts). */
function cards(): Array<{ name: string; type: string; query: Record<string, unknown> }> {
  const v0 = (name: string, type: string, q: Record<string, unknown>) => ({ name, type, query: { ...q, from, to } });
  const ir = (name: string, type: string, q: Record<string, unknown>) => ({ name, type, query: { v: 2, dateRange: { kind: 'absolute', from, to }, ...q } });
  const metric = (id: string, event: string, op: string) => ({ id, kind: 'event', event, aggregation: { op } });
  return [
    v0('e0 per day', 'segmentation', { event: 'e0', unit: 'day', type: 'total' }),
    v0('e1 people per day', 'segmentation', { event: 'e1', unit: 'day', type: 'unique' }),
    v0('e2 by p1', 'segmentation', { event: 'e2', unit: 'day', type: 'total', breakdown: 'p1' }),
    v0('all events where p2 = v1', 'segmentation', { event: '$all_events', unit: 'day', type: 'total', filters: [{ key: 'p2', op: 'eq', value: 'v1' }] }),
    v0('e0 → e1 → e2', 'funnel', { steps: ['e0', 'e1', 'e2'], windowDays: 7 }),
    v0('e3 → e5 by p1', 'funnel', { steps: ['e3', 'e5'], windowDays: 7, breakdown: 'p1' }),
    v0('e0 then e1, weekly', 'retention', { bornEvent: 'e0', returnEvent: 'e1', unit: 'week', buckets: 4 }),
    v0('paths after e0', 'flows', { event: 'e0', direction: 'after', steps: 3 }),
    ir('e0 against the previous period', 'segmentation', { metrics: [metric('A', 'e0', 'count')], analysis: { kind: 'trend', unit: 'day', compare: { kind: 'previous_period' } } }),
    ir('e1 and e2 people', 'segmentation', { metrics: [metric('A', 'e1', 'unique'), metric('B', 'e2', 'unique')], analysis: { kind: 'trend', unit: 'day' } }),
    ir('e0 → e4 (IR)', 'funnel', { metrics: [metric('A', 'e0', 'unique'), metric('B', 'e4', 'unique')], analysis: { kind: 'funnel', steps: ['A', 'B'] } }),
    v0('e5 per week where p1 ≠ v0', 'segmentation', { event: 'e5', unit: 'week', type: 'unique', filters: [{ key: 'p1', op: 'neq', value: 'v0' }] }),
  ];
}

async function seed(dataDir: string): Promise<Record<string, string>> {
  let store: EventStore;
  let env: Record<string, string> = {};
  if (ENGINE === 'duckdb') {
    store = new DuckDbEventStore(path.join(dataDir, 'events.duckdb'));
  } else {
    const url = process.env.CLICKHOUSE_URL ?? process.env.TEST_CLICKHOUSE_URL;
    if (!url) throw new Error('--engine clickhouse needs CLICKHOUSE_URL or TEST_CLICKHOUSE_URL');
    const database = process.env.BENCH_CLICKHOUSE_DATABASE ?? 'bench_closed_days';
    store = new ClickHouseEventStore({ url, database });
    env = { CLICKHOUSE_URL: url, CLICKHOUSE_DATABASE: database };
  }
  await store.migrate();
  const s = await seedDataset(store, N, { project: PROJECT, t0, spanMs: now - t0, ids: 200_000 });
  console.log(`${ENGINE}: ${N} events over ${from}..${to} loaded in ${(s.loadMs / 1000).toFixed(1)} s`);
  await store.close();
  return env;
}

/** One setting: a fresh metadata store (its own data dir) on the seeded events. */
async function measure(eventsDir: string, env: Record<string, string>, partials: boolean) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-closed-days-svc-'));
  // DuckDB: a copy of the seeded file in this setting's data directory (the second setting reads it as the first did).
  if (ENGINE === 'duckdb') {
    for (const f of ['events.duckdb', 'events.duckdb.wal']) if (existsSync(path.join(eventsDir, f))) copyFileSync(path.join(eventsDir, f), path.join(dataDir, f));
  }
  const svc = await startBenchService({
    name: 'bench-closed-days', dataDir,
    env: { ...env, BOARD_WARM_INTERVAL_MS: '0', RESULTS_CACHE_FRESH_MS: '0', RESULTS_CACHE_PARTIALS: partials ? '1' : '0', QUERY_RATE_PER_SECOND: '100000', QUERY_RATE_BURST: '100000', QUERY_TIMEOUT_MS: '300000' },
  });
  try {
    const org = await benchApi(svc.url, 'POST', '/admin/orgs', { name: `Bench ${partials}` });
    const project = await benchApi(svc.url, 'POST', `/admin/orgs/${org.id}/projects`, { name: 'Web' });
    if (project.id !== PROJECT) throw new Error(`the seeded events belong to project ${PROJECT}, the service made ${project.id}`);
    const reports = [];
    for (const c of cards()) reports.push(await benchApi(svc.url, 'POST', `/api/reports?projectId=${PROJECT}`, { name: c.name, type: c.type, query: c.query }));
    const board = await benchApi(svc.url, 'POST', `/api/boards?projectId=${PROJECT}`, {
      name: 'Last 30 days', date_range: { kind: 'absolute', from, to }, cards: reports.map((r) => ({ reportId: r.id })),
    });
    const run = async () => {
      const s = performance.now();
      const out = await benchApi(svc.url, 'POST', `/api/boards/${board.id}/run`, {});
      const ms = performance.now() - s;
      const failed = out.cards.filter((c: { status: string }) => c.status !== 'ok');
      if (failed.length) throw new Error(`cards failed: ${JSON.stringify(failed).slice(0, 500)}`);
      return ms;
    };
    const todayCount = async () => {
      const r = await benchApi(svc.url, 'POST', '/api/query/segmentation', { projectId: String(PROJECT), event: 'e0', unit: 'day', type: 'total', from: to, to });
      return r.series[0].data[0].value as number;
    };
    const firstMs = await run(); // nothing cached or kept (the engine's first reads of the files too)
    const live: number[] = [];
    const cut: number[] = [];
    const cutReports = reports.filter((r) => CUT.includes(r.name));
    for (let r = 0; r < RUNS; r++) {
      const before = await todayCount();
      const batch = Array.from({ length: 20 }, (_, i) => ({ event: i % 2 ? 'e2' : 'e0', properties: { distinct_id: `live-${r}-${i}`, p1: 'v1', p2: 'v1' } }));
      const res = await fetch(`${svc.url}/track`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-token': project.token }, body: JSON.stringify(batch) });
      if (res.status >= 300) throw new Error(`/track: ${res.status} ${await res.text()}`);
      const deadline = performance.now() + 60_000;
      while ((await todayCount()) < before + 10) {
        if (performance.now() > deadline) throw new Error('today\'s events were not counted within 60 s');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      live.push(await run());
      // The three cards that are cut (event totals per day), one request each, after the board's run.
      const c = performance.now();
      for (const r of cutReports) await benchApi(svc.url, 'POST', `/api/reports/${r.id}/run`, {});
      cut.push(performance.now() - c);
    }
    return { firstMs: Math.round(firstMs), liveMs: Math.round(median(live)), live: live.map(Math.round), cutCardsMs: Math.round(median(cut)), loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100) };
  } finally {
    svc.child.kill('SIGTERM');
    await new Promise((resolve) => (svc.child.exitCode !== null ? resolve(null) : svc.child.once('exit', resolve)));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  const eventsDir = mkdtempSync(path.join(tmpdir(), 'bench-closed-days-'));
  const env = await seed(eventsDir);
  const withParts = await measure(eventsDir, env, true);
  const without = await measure(eventsDir, env, false);
  rmSync(eventsDir, { recursive: true, force: true });
  const figures = { engine: ENGINE, events: N, runs: RUNS, withPartials: withParts, withoutPartials: without, ratio: Math.round((without.liveMs / withParts.liveMs) * 100) / 100,
    cutRatio: Math.round((without.cutCardsMs / withParts.cutCardsMs) * 100) / 100 };
  console.log(`\n${ENGINE}, ${N} events, the 12-card board of bench:console over 30 days, a run after 20 events of today (median of ${RUNS})`);
  console.log(`  closed days kept:   ${withParts.liveMs} ms (first run, nothing kept: ${withParts.firstMs} ms; load ${withParts.loadavg.join(' ')})`);
  console.log(`  every day computed: ${without.liveMs} ms (first run: ${without.firstMs} ms; load ${without.loadavg.join(' ')})`);
  console.log(`  ratio: ${figures.ratio}x`);
  console.log(`  the ${CUT.length} cards cut per day, one report run each after that: ${withParts.cutCardsMs} ms kept, ${without.cutCardsMs} ms computed (${figures.cutRatio}x)`);
  if (JSON_OUT) console.log(JSON.stringify(figures));
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
