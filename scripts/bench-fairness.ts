/**
 * Fairness between organisations (not a test; docs/performance.md). One service on fresh stores
 * (PostgreSQL + ClickHouse when TEST_DATABASE_URL and TEST_CLICKHOUSE_URL are set, as
 * scripts/services.sh sets them; else the embedded SQLite + DuckDB), two organisations:
 *
 * - A: BENCH_EVENTS generated events (default 2,000,000: bench-dataset.ts, 90 days) and 30
 *   clients (BENCH_FLOOD) each sending 3-step funnels over the 90 days back to back through
 *   POST /api/query/funnel, a refused one (429) sent again after 50 ms;
 * - B: 20,000 events of the same shape and one client sending a daily segmentation over the same
 *   90 days (light) one after the other.
 *
 * B's light query is timed BENCH_SAMPLES times (default 60) with nothing else running (idle), then
 * again while A floods. Aim: B's p95 under the flood within 2x its idle p95. The service runs with
 * QUERY_CONCURRENCY_PER_ORG (default 4) and QUERY_QUEUE_MS (default 10000) from the environment,
 * so the same command with QUERY_CONCURRENCY_PER_ORG=1000 shows the flood without the limit.
 * BENCH_RANKS=0 drops the reads' ranks before the engine sees them (no ClickHouse priority, DuckDB's
 * queue in arrival order): the same run without the engine-side share, to compare back to back.
 *
 *   eval "$(bash scripts/services.sh --env)" && npm run bench:fairness            # ClickHouse
 *   BENCH_ENGINES=embedded npm run bench:fairness                                  # DuckDB
 *   npm run bench:fairness -- --json                                               # also one JSON line
 */
import { loadavg } from 'node:os';
import { configuredBackends } from '../test/support/backends.js';
import { createTenant, startTestService, type Tenant } from '../test/support/service.js';
import { seedDataset, datasetSql } from './bench-dataset.js';

const N = Number(process.env.BENCH_EVENTS ?? 2_000_000);
const FLOOD = Number(process.env.BENCH_FLOOD ?? 30);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 60);
const B_EVENTS = 20_000;
const T0 = Date.UTC(2024, 0, 1);
const DAYS = 90;
const range = { from: '2024-01-01', to: '2024-03-30' };
const jsonLine = process.argv.includes('--json');

const wanted = process.env.BENCH_ENGINES;
const backends = configuredBackends();
const backend = wanted ? backends.find((b) => b.name === wanted) : backends[backends.length - 1];
if (!backend) throw new Error(`BENCH_ENGINES=${wanted}: not configured (embedded, or production with scripts/services.sh --env)`);

const perOrg = process.env.QUERY_CONCURRENCY_PER_ORG ?? '4';
const ranked = process.env.BENCH_RANKS !== '0';
const queueMs = process.env.QUERY_QUEUE_MS ?? '10000';
const t = await startTestService(backend, { QUERY_CONCURRENCY_PER_ORG: perOrg, QUERY_QUEUE_MS: queueMs, QUERY_TIMEOUT_MS: '60000' });
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
try {
  const a = await createTenant(t, 'Flooding');
  const b = await createTenant(t, 'Light');
  const store = t.svc.deps.events;
  if (!ranked) {
    const query = store.query.bind(store);
    store.query = ((sql: string) => query(sql)) as typeof store.query;
  }
  const loaded = Date.now();
  const shape = { t0: T0, spanMs: DAYS * 86_400_000 - 8 * 60_000, ids: 20_000 };
  await seedDataset(store, N, { ...shape, project: a.project.id });
  await store.command(`INSERT INTO events (project_id, id, event, distinct_id, time, insert_id, properties, prop_keys, prop_values, prop_types, received_at, person_id, person_key)
    ${datasetSql(store.dialect, N, B_EVENTS, { ...shape, project: b.project.id, ids: 1000 })}`);
  console.log(`${backend.name}: ${N} events for A, ${B_EVENTS} for B loaded in ${Date.now() - loaded} ms; QUERY_CONCURRENCY_PER_ORG=${perOrg} QUERY_QUEUE_MS=${queueMs}; ranks ${ranked ? 'passed to the engine' : 'dropped (BENCH_RANKS=0)'}`);

  const heavy = (tenant: Tenant) => tenant.owner.post('/api/query/funnel', { projectId: tenant.project.id, steps: ['e0', 'e1', 'e2'], windowDays: 7, ...range });
  const light = async () => {
    const started = performance.now();
    const r = await b.owner.post('/api/query/segmentation', { projectId: b.project.id, event: 'e1', unit: 'day', type: 'total', ...range });
    if (r.status !== 200) throw new Error(`B's light query answered ${r.status}: ${r.text}`);
    return performance.now() - started;
  };
  const sample = async () => {
    const ms: number[] = [];
    for (let i = 0; i < SAMPLES; i++) ms.push(await light());
    return { p50: Math.round(percentile(ms, 50)), p95: Math.round(percentile(ms, 95)) };
  };

  for (let i = 0; i < 5; i++) await light(); // warm-up
  const heavyStarted = performance.now();
  const once = await heavy(a);
  if (once.status !== 200) throw new Error(`A's heavy query answered ${once.status}: ${once.text}`);
  const heavyMs = Math.round(performance.now() - heavyStarted);
  const idle = await sample();
  console.log(`idle: B's light query p50 ${idle.p50} ms, p95 ${idle.p95} ms; A's heavy query alone ${heavyMs} ms`);

  let flooding = true;
  const counts = { ok: 0, refused: 0, other: 0 };
  const floodMs: number[] = [];
  const clients = Array.from({ length: FLOOD }, async () => {
    while (flooding) {
      const started = performance.now();
      const r = await heavy(a);
      if (r.status === 200) { counts.ok++; floodMs.push(performance.now() - started); } else if (r.status === 429) { counts.refused++; await new Promise((res) => setTimeout(res, 50)); } else counts.other++;
    }
  });
  await new Promise((res) => setTimeout(res, 1000)); // the flood fills A's slots and queue first
  const flooded = await sample();
  flooding = false;
  await Promise.all(clients);
  const ratio = +(flooded.p95 / Math.max(1, idle.p95)).toFixed(2);
  const load1 = +loadavg()[0].toFixed(2);
  console.log(`flood: B's light query p50 ${flooded.p50} ms, p95 ${flooded.p95} ms (${ratio}x idle p95; aim <= 2x); A: ${counts.ok} answered (p50 ${Math.round(percentile(floodMs, 50) ?? 0)} ms), ${counts.refused} refused 429, ${counts.other} other`);
  console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  if (jsonLine) {
    console.log(JSON.stringify({
      engine: backend.name, eventsA: N, eventsB: B_EVENTS, flood: FLOOD, samples: SAMPLES, perOrg: Number(perOrg), queueMs: Number(queueMs), ranked,
      heavyAloneMs: heavyMs, idle, flooded, ratio, aimMet: ratio <= 2, a: { ...counts, p50Ms: Math.round(percentile(floodMs, 50) ?? 0) }, load1,
    }));
  }
} finally {
  await t.close();
}
