/**
 * Fairness between organisations (not a test; docs/performance.md). The service runs in a child
 * process of its own (bin/tally.ts, role `api`; scripts/bench-support.ts startBenchService) on fresh
 * stores (PostgreSQL + ClickHouse when TEST_DATABASE_URL and TEST_CLICKHOUSE_URL are set, as
 * scripts/services.sh sets them; else the embedded SQLite + DuckDB), seeded from this process before
 * it starts; the clients run here, so the service's event loop serves requests and nothing else.
 * Two organisations:
 *
 * - A: BENCH_EVENTS generated events (default 2,000,000: bench-dataset.ts, 90 days) and 30
 *   clients (BENCH_FLOOD) each sending 3-step funnels over the 90 days back to back through
 *   POST /api/query/funnel, a refused one (429) sent again after 50 ms;
 * - B: 20,000 events of the same shape and one client sending a daily segmentation over the same
 *   90 days (light) one after the other.
 *
 * B's light query is timed BENCH_SAMPLES times (default 200) with nothing else running (idle), then
 * again while A floods. Aim: B's p95 under the flood within 2x its idle p95. BENCH_RUNS (default 1)
 * repeats the idle and flood phases back to back (interleaved) on the same service.
 *
 * Why 200 samples: the p95 of 40 samples is their 2nd-worst value, so one stall of the shared
 * machine (another job's burst, a ClickHouse merge) sets it, and three runs of the same code gave
 * 1.44x, 2.44x and 2.22x. The p95 of 200 is the 10th-worst: a single stall no longer moves it.
 * The headline `ratio` is the median of the runs' ratios, each an idle phase and the flood phase
 * right after it (interleaved, so a run's two phases see the same load of the machine, which
 * drifts over minutes); `ratioOfMedians` (the median flooded p95 over the median idle p95) is
 * printed beside it, and differs from it when the machine's load changed between runs.
 *
 * Where B's time goes (ClickHouse): the service runs with `log_queries = 1` (this file, loaded
 * first in its process, adds the setting to its reads; nothing else changes), and after each phase
 * the bench reads system.query_log for B's statements (their leading comment names B's project):
 * `engineMs` is their summed query_duration_ms per B request, against `requestMs`, the mean time
 * the client waited, so the rest is the service (HTTP, PostgreSQL, the event loop) and transport.
 * `mainThreadBusy` is the share of the flood phase the service's event loop ran (GET /metrics). The service runs with QUERY_CONCURRENCY_PER_ORG (default 4) and QUERY_QUEUE_MS
 * (default 10000) from the environment, so the same command with QUERY_CONCURRENCY_PER_ORG=1000
 * shows the flood without the limit; the service's other settings (DUCKDB_THREADS…) pass through
 * the environment too. BENCH_RANKS=0 drops the reads' ranks before the engine sees them (no
 * ClickHouse priority, thread or block share; DuckDB's queue in arrival order, no express lane):
 * the same run without the engine-side share, to compare back to back (the service's process loads
 * this file first for that, see the end). Each run's `serviceCores` is the CPU the service's
 * process used during the flood phase (its threads, DuckDB's included; ClickHouse's server not).
 *
 *   eval "$(bash scripts/services.sh --env)" && npm run bench:fairness            # ClickHouse
 *   BENCH_ENGINES=embedded npm run bench:fairness                                  # DuckDB
 *   npm run bench:fairness -- --json                                               # also one JSON line
 */
import { loadavg } from 'node:os';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** In the service's process: `drop-ranks` (BENCH_RANKS=0), `log-queries` (ClickHouse), comma-separated. */
const PRELOAD = 'BENCH_FAIRNESS_PRELOAD';

async function main() {
  const { configuredBackends } = await import('../test/support/backends.js');
  const { benchApi, startBenchService, BENCH_KEY, cpuMs, serviceClock, serviceLoad } = await import('./bench-support.js');
  const { seedDataset, datasetSql } = await import('./bench-dataset.js');
  const { ClickHouseEventStore } = await import('../apps/server/src/ports/events/clickhouse.js');
  const { DuckDbEventStore } = await import('../apps/server/src/ports/events/duckdb.js');

  const N = Number(process.env.BENCH_EVENTS ?? 2_000_000);
  const FLOOD = Number(process.env.BENCH_FLOOD ?? 30);
  const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
  const RUNS = Number(process.env.BENCH_RUNS ?? 1);
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
  const percentile = (xs: number[], p: number) => {
    const s = [...xs].sort((x, y) => x - y);
    return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
  };
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)];

  // Fresh stores, seeded before the service opens them (DuckDB's file takes one process at a time).
  const stores = await backend.provision();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-fairness-'));
  const cleanUp = async () => {
    await stores.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const bench = async (storeEnv: Record<string, string>) => {
    const A = 1;
    const B = 2;
    const store = backend.name === 'production'
      ? new ClickHouseEventStore({ url: storeEnv.CLICKHOUSE_URL, database: storeEnv.CLICKHOUSE_DATABASE })
      : new DuckDbEventStore(path.join(dataDir, 'events.duckdb'));
    const loaded = Date.now();
    await store.migrate();
    const shape = { t0: T0, spanMs: DAYS * 86_400_000 - 8 * 60_000, ids: 20_000 };
    await seedDataset(store, N, { ...shape, project: A });
    await store.command(`INSERT INTO events (project_id, id, event, distinct_id, time, insert_id, properties, prop_keys, prop_values, prop_types, received_at, person_id, person_key)
      ${datasetSql(store.dialect, N, B_EVENTS, { ...shape, project: B, ids: 1000 })}`);
    await store.close();

    const clickhouse = backend.name === 'production';
    const preload = [...(ranked ? [] : ['drop-ranks']), ...(clickhouse ? ['log-queries'] : [])];
    const svc = await startBenchService({
      name: 'bench-fairness', role: 'api', dataDir,
      env: {
        ...storeEnv, QUERY_CONCURRENCY_PER_ORG: perOrg, QUERY_QUEUE_MS: queueMs, QUERY_TIMEOUT_MS: '60000',
        QUERY_RATE_PER_SECOND: '100000', QUERY_RATE_BURST: '100000',
        ...(preload.length ? { [PRELOAD]: preload.join(',') } : {}),
      },
      // This file, loaded first in the service's process, drops the ranks and logs the reads (below).
      nodeArgs: preload.length ? ['--import', 'tsx', '--import', fileURLToPath(import.meta.url)] : [],
    });
    try {
      for (const [name, id] of [['Flooding', A], ['Light', B]] as const) {
        const org = await benchApi(svc.url, 'POST', '/admin/orgs', { name });
        const project = await benchApi(svc.url, 'POST', `/admin/orgs/${org.id}/projects`, { name: `${name} web` });
        if (project.id !== id) throw new Error(`the seeded events of ${name} belong to project ${id}, the service made ${project.id}`);
      }
      console.log(`${backend.name}: ${N} events for A, ${B_EVENTS} for B loaded in ${Date.now() - loaded} ms; service pid ${svc.child.pid}; QUERY_CONCURRENCY_PER_ORG=${perOrg} QUERY_QUEUE_MS=${queueMs}; ranks ${ranked ? 'passed to the engine' : 'dropped (BENCH_RANKS=0)'}`);

      const post = (p: string, body: unknown) => fetch(svc.url + p, {
        method: 'POST', headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
      });
      const heavy = async () => {
        const r = await post('/api/query/funnel', { projectId: A, steps: ['e0', 'e1', 'e2'], windowDays: 7, ...range });
        return { status: r.status, text: await r.text() };
      };
      const light = async () => {
        const started = performance.now();
        const r = await post('/api/query/segmentation', { projectId: B, event: 'e1', unit: 'day', type: 'total', ...range });
        const text = await r.text();
        if (r.status !== 200) throw new Error(`B's light query answered ${r.status}: ${text}`);
        return performance.now() - started;
      };
      // B's statements in system.query_log that started within [fromS, toS] (unix seconds).
      const engineTime = async (fromS: number, toS: number, requests: number) => {
        if (!clickhouse) return undefined;
        const ch = (sql: string) => fetch(storeEnv.CLICKHOUSE_URL, { method: 'POST', body: sql }).then(async (r) => {
          if (!r.ok) throw new Error(`ClickHouse: ${await r.text()}`);
          return r.text();
        });
        await ch('SYSTEM FLUSH LOGS');
        // The analysis' statements carry B's tag; the query context's two reads (before the slot,
        // side by side) do not: B's identity_links probe, and the parts read every analysis makes.
        const [n, total, p50, p95, links, parts] = (await ch(`SELECT
            countIf(tagged), sumIf(query_duration_ms, tagged), quantileIf(0.5)(query_duration_ms, tagged), quantileIf(0.95)(query_duration_ms, tagged),
            avgIf(query_duration_ms, query LIKE '%FROM identity_links WHERE project_id = ${B} AND folded = 0%'),
            avgIf(query_duration_ms, query LIKE '%system.parts%' AND query NOT LIKE '%project%')
          FROM (SELECT query, query_duration_ms, query LIKE '/* org=% project=${B} */%' AS tagged FROM system.query_log
            WHERE type = 2 AND toUnixTimestamp(query_start_time) BETWEEN ${fromS} AND ${toS}) FORMAT TSV`)).trim().split('\t').map(Number);
        if (n === 0) console.warn('no statement of B in system.query_log: the service ran without log_queries (its preload did not load?), so no engine time below');
        return {
          statementsPerRequest: +(n / requests).toFixed(1), engineMs: +(total / requests).toFixed(1), statementP50Ms: Math.round(p50), statementP95Ms: Math.round(p95),
          contextMs: { links: +(links || 0).toFixed(1), parts: +(parts || 0).toFixed(1) },
        };
      };
      const sample = async () => {
        const ms: number[] = [];
        const fromS = Math.floor(Date.now() / 1000);
        for (let i = 0; i < SAMPLES; i++) ms.push(await light());
        const engine = await engineTime(fromS, Math.floor(Date.now() / 1000), SAMPLES);
        const requestMs = +(ms.reduce((x, y) => x + y, 0) / ms.length).toFixed(1);
        return { p50: Math.round(percentile(ms, 50)), p95: Math.round(percentile(ms, 95)), requestMs, ...engine };
      };

      for (let i = 0; i < 5; i++) await light(); // warm-up
      const heavyStarted = performance.now();
      const once = await heavy();
      if (once.status !== 200) throw new Error(`A's heavy query answered ${once.status}: ${once.text}`);
      const heavyMs = Math.round(performance.now() - heavyStarted);
      console.log(`A's heavy query alone ${heavyMs} ms`);

      const runs = [];
      for (let run = 0; run < RUNS; run++) {
        const idle = await sample();
        let flooding = true;
        const counts = { ok: 0, refused: 0, other: 0 };
        const floodMs: number[] = [];
        const clients = Array.from({ length: FLOOD }, async () => {
          while (flooding) {
            const started = performance.now();
            const r = await heavy();
            if (r.status === 200) { counts.ok++; floodMs.push(performance.now() - started); } else if (r.status === 429) { counts.refused++; await new Promise((res) => setTimeout(res, 50)); } else counts.other++;
          }
        });
        await new Promise((res) => setTimeout(res, 1000)); // the flood fills A's slots and queue first
        const cpu0 = cpuMs(svc.child.pid!);
        const clock0 = await serviceClock(svc.url);
        const t0 = performance.now();
        const flooded = await sample();
        const serviceCores = +((cpuMs(svc.child.pid!) - cpu0) / (performance.now() - t0)).toFixed(2);
        const { mainThreadBusy } = serviceLoad(clock0, await serviceClock(svc.url));
        flooding = false;
        await Promise.all(clients);
        const ratio = +(flooded.p95 / Math.max(1, idle.p95)).toFixed(2);
        const load1 = +loadavg()[0].toFixed(2);
        const a = { ...counts, p50Ms: Math.round(percentile(floodMs, 50) ?? 0) };
        console.log(`run ${run + 1}: B idle p50 ${idle.p50} / p95 ${idle.p95} ms; under the flood p50 ${flooded.p50} / p95 ${flooded.p95} ms (${ratio}x idle p95; aim <= 2x); A: ${counts.ok} answered (p50 ${a.p50Ms} ms), ${counts.refused} refused 429, ${counts.other} other; service ${serviceCores} cores, event loop busy ${mainThreadBusy}; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
        if (clickhouse) console.log(`  B per request: idle ${idle.requestMs} ms, ${idle.engineMs} ms of it in ClickHouse (${idle.statementsPerRequest} statements); flooded ${flooded.requestMs} ms, ${flooded.engineMs} ms in ClickHouse; the context's reads before it (mean, side by side): links ${idle.contextMs?.links} → ${flooded.contextMs?.links} ms, parts ${idle.contextMs?.parts} → ${flooded.contextMs?.parts} ms`);
        runs.push({ idle, flooded, ratio, a, serviceCores, mainThreadBusy, load1 });
      }
      const ratio = median(runs.map((r) => r.ratio));
      const idleP95 = median(runs.map((r) => r.idle.p95));
      const floodedP95 = median(runs.map((r) => r.flooded.p95));
      const ratioOfMedians = +(floodedP95 / Math.max(1, idleP95)).toFixed(2);
      console.log(`median ratio of ${RUNS} run(s): ${ratio}x (${runs.map((r) => r.ratio).join(', ')}); median flooded p95 ${floodedP95} ms / median idle p95 ${idleP95} ms: ${ratioOfMedians}x`);
      if (jsonLine) {
        console.log(JSON.stringify({
          engine: backend.name, eventsA: N, eventsB: B_EVENTS, flood: FLOOD, samples: SAMPLES, perOrg: Number(perOrg), queueMs: Number(queueMs), ranked,
          heavyAloneMs: heavyMs, runs, ratio, ratioOfMedians, aimMet: ratio <= 2,
        }));
      }
    } finally {
      svc.child.kill('SIGTERM');
      await new Promise((res) => svc.child.once('exit', res));
    }
  };
  try {
    await bench(stores.env);
  } finally {
    await cleanUp();
  }
}

/**
 * In the service's process (loaded with --import before bin/tally.ts). `drop-ranks` (BENCH_RANKS=0):
 * both engines' reads lose their ReadOptions, so no read carries a rank. `log-queries`: ClickHouse
 * runs the store's reads with log_queries = 1 (off by default), so system.query_log has them.
 */
async function servicePreload(what: string[]) {
  const { ClickHouseEventStore } = await import('../apps/server/src/ports/events/clickhouse.js');
  const { DuckDbEventStore } = await import('../apps/server/src/ports/events/duckdb.js');
  if (what.includes('drop-ranks')) {
    for (const proto of [ClickHouseEventStore.prototype, DuckDbEventStore.prototype]) {
      const query = proto.query;
      proto.query = function (this: typeof proto, sql: string) { return query.call(this, sql); } as typeof proto.query;
    }
  }
  if (what.includes('log-queries')) {
    type Client = { query: (p: { clickhouse_settings?: Record<string, unknown> }) => unknown };
    const proto = ClickHouseEventStore.prototype;
    const query = proto.query;
    const logged = new WeakSet<Client>();
    proto.query = function (this: typeof proto, ...args: Parameters<typeof query>) {
      const client = (this as unknown as { client: Client }).client;
      if (!logged.has(client)) {
        const send = client.query.bind(client);
        client.query = (p) => send({ ...p, clickhouse_settings: { ...p.clickhouse_settings, log_queries: 1 } });
        logged.add(client);
      }
      return query.apply(this, args);
    } as typeof proto.query;
  }
}

if (process.env[PRELOAD]) await servicePreload(process.env[PRELOAD].split(','));
else await main();
