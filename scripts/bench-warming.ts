/**
 * Board warming benchmark (not a test): the engine time one warming pass of the worker spends
 * (boards/warming.ts) on a board of 6 cards over `--events N` generated events (default 200,000;
 * scripts/bench-dataset.ts) of the last 30 days, in a service started in this process.
 *
 * - `coldMs`: a pass computing every card (nothing cached), `engineMs` its cards' compute time;
 * - `unchangedMs`: the next pass, the project unchanged (skipped without an engine statement);
 * - `afterWriteMs`: a pass after one new event in the range (every card computed again);
 * - `viewMs`: the board's run by the API right after a pass (every card from the cache).
 *
 * Medians of `--runs` (default 3).
 *
 *   npm run bench:warming                                 # embedded: SQLite + DuckDB
 *   npm run bench:warming -- --engine production          # PostgreSQL + ClickHouse at TEST_DATABASE_URL, TEST_CLICKHOUSE_URL (shared results cache)
 *   npm run bench:warming -- --events 1000000 --json      # also one final JSON line of figures
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../apps/server/src/config.js';
import { buildDeps, startService } from '../apps/server/src/app.js';
import { BoardWarmer } from '../apps/server/src/boards/warming.js';
import { configuredBackends } from '../test/support/backends.js';
import { Client } from '../test/support/http.js';
import { seedDataset } from './bench-dataset.js';
import { arg } from './bench-support.js';

const N = Number(arg('events', '200000'));
const RUNS = Number(arg('runs', '3'));
const ENGINE = arg('engine', 'embedded');
const JSON_OUT = process.argv.includes('--json');
const KEY = 'bench-warming-key';
const DAY = 86_400_000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const backend = configuredBackends().find((b) => b.name === ENGINE);
  if (!backend) throw new Error(`--engine ${ENGINE}: not configured (production needs TEST_DATABASE_URL and TEST_CLICKHOUSE_URL)`);
  const stores = await backend.provision();
  const config = loadConfig({ ...stores.env, SUPERADMIN_KEY: KEY, LOG_LEVEL: 'silent', DATA_DIR: '/tmp/bench-warming', BOARD_WARM_INTERVAL_MS: '0', QUERY_RATE_PER_SECOND: '100000', QUERY_RATE_BURST: '100000' });
  const svc = await startService(await buildDeps(config, stores.overrides), { port: 0, host: '127.0.0.1' });
  try {
    const admin = new Client(svc.url, KEY);
    const org = (await admin.post('/admin/orgs', { name: 'bench-warming' })).body;
    const project = (await admin.post(`/admin/orgs/${org.id}/projects`, { name: 'bench-warming web' })).body;
    const pid = project.id as number;
    const today = Math.floor(Date.now() / DAY) * DAY;
    const t0 = today - 29 * DAY;
    const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    // Up to yesterday: every card's days are settled, so a pass's answers stay served until a write.
    const range = { from: iso(t0), to: iso(today - DAY) };
    const seeded = await seedDataset(svc.deps.events, N, { project: pid, t0, spanMs: today - t0, ids: 20_000 });
    const reports: Array<[string, string, Record<string, unknown>]> = [
      ['daily e0', 'segmentation', { event: 'e0', unit: 'day', type: 'total', ...range }],
      ['e1 by p1', 'segmentation', { event: 'e1', unit: 'day', type: 'total', breakdown: 'p1', ...range }],
      ['unique e2', 'segmentation', { event: 'e2', unit: 'week', type: 'unique', ...range }],
      ['e0 e1 e2 funnel', 'funnel', { steps: ['e0', 'e1', 'e2'], windowDays: 7, ...range }],
      ['e3 e4 funnel', 'funnel', { steps: ['e3', 'e4'], windowDays: 1, ...range }],
      ['daily e5 unique', 'segmentation', { event: 'e5', unit: 'day', type: 'unique', ...range }],
    ];
    const ids: number[] = [];
    for (const [name, type, query] of reports) {
      const r = await admin.post('/api/reports', { projectId: pid, name, type, query });
      if (r.status !== 201) throw new Error(`report ${name}: ${r.status} ${r.text}`);
      ids.push(r.body.id);
    }
    const board = (await admin.post('/api/boards', { projectId: pid, name: 'Warm', cards: ids.map((reportId) => ({ reportId })) })).body;
    await svc.services.boardViews.record(board.id, pid);
    const warmer = new BoardWarmer(svc.deps, svc.services);
    const runs: Array<Record<string, number>> = [];
    let seq = 0;
    const write = async () => {
      const time = t0 + DAY;
      const id = `bench-warm-${++seq}`;
      await svc.deps.events.writeEvents(pid, [{ project_id: pid, id: 990_000_000 + seq, event: 'e0', distinct_id: id, time, insert_id: id, prop_keys: [], prop_values: [], prop_types: '', received_at: time }]);
    };
    for (let i = 0; i < RUNS; i++) {
      await write();
      let t = performance.now();
      const cold = await warmer.pass();
      const coldMs = performance.now() - t;
      t = performance.now();
      const view = await admin.post(`/api/boards/${board.id}/run`, {});
      const viewMs = performance.now() - t;
      if (!view.body.cards.every((c: any) => c.cached_at !== undefined)) throw new Error('the view after a pass was not answered from the cache');
      t = performance.now();
      const quiet = await warmer.pass();
      const unchangedMs = performance.now() - t;
      if (quiet.unchanged !== 1) throw new Error('the unchanged project was not skipped');
      runs.push({ coldMs, engineMs: cold.engineMs, computed: cold.computed, failed: cold.failed, viewMs, unchangedMs });
    }
    const out = {
      engine: ENGINE, events: N, cards: reports.length, loadMs: Math.round(seeded.loadMs),
      passMs: Math.round(median(runs.map((r) => r.coldMs))), engineMs: Math.round(median(runs.map((r) => r.engineMs))),
      computed: median(runs.map((r) => r.computed)), failed: Math.max(...runs.map((r) => r.failed)),
      unchangedMs: Math.round(median(runs.map((r) => r.unchangedMs)) * 10) / 10, viewMs: Math.round(median(runs.map((r) => r.viewMs))),
      loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
    };
    console.log(`${ENGINE}, ${N} events, ${out.cards} cards: a pass computing every card ${out.passMs} ms (cards' engine time ${out.engineMs} ms, ${out.computed} computed, ${out.failed} failed); an unchanged project's pass ${out.unchangedMs} ms; the board's run after a pass ${out.viewMs} ms (all cached); load ${out.loadavg.join(' ')}`);
    if (JSON_OUT) console.log(JSON.stringify(out));
  } finally {
    await svc.close();
    await stores.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
