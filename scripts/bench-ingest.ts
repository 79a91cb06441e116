/**
 * `npm run bench:ingest`: sustained ingestion speed, end to end, into each configured event store.
 *
 * For each store (embedded DuckDB always; ClickHouse when BENCH_CLICKHOUSE_URL or
 * TEST_CLICKHOUSE_URL is set) it starts the whole service (API + ingestion worker, SQLite
 * metadata) in a child process pinned to CPU 0 (`taskset`, when available), while this process,
 * the load generator, pins itself to CPU 1. It then sends a deterministic stream of realistic
 * events (10 properties each, batches of 500, a few keep-alive connections) to POST /track and
 * waits until /api/data/stats counts every event. Reported: accepted events/s (last 200 received),
 * end-to-end events/s (first send to the last event readable), and the server's peak RSS (VmHWM).
 *
 * Env: BENCH_EVENTS (default 300000), BENCH_CONNECTIONS (default 4), BENCH_CPU_SERVER /
 * BENCH_CPU_CLIENT (default 0 / 1), BENCH_NODE_ARGS (extra node flags for the server, e.g. --cpu-prof).
 */
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchApi, startBenchService } from './bench-support.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 300_000);
const BATCH = 500;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const CPU_SERVER = process.env.BENCH_CPU_SERVER ?? '0';
const CPU_CLIENT = process.env.BENCH_CPU_CLIENT ?? '1';
const hasTaskset = spawnSync('taskset', ['-V']).status === 0;

/** Deterministic PRNG (mulberry32), so every run sends the same stream. */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const EVENT_NAMES = ['Page Viewed', 'Signed Up', 'Logged In', 'Added to Cart', 'Checkout Started', 'Purchase', 'Search', 'Shared', 'Video Played', 'Settings Changed'];
const BROWSERS = ['Chrome', 'Firefox', 'Safari', 'Edge'];
const COUNTRIES = ['US', 'DE', 'FR', 'GB', 'IN', 'BR', 'JP'];
const PLANS = ['free', 'starter', 'pro', 'enterprise'];

/** Batch bodies, serialised ahead of time so the generator spends its CPU on sending. */
function makeBodies(start: number): string[] {
  const r = rng(42);
  const bodies: string[] = [];
  for (let b = 0; b < EVENTS / BATCH; b++) {
    const batch = [];
    for (let i = 0; i < BATCH; i++) {
      const n = b * BATCH + i;
      const user = Math.floor(r() * 50_000);
      batch.push({
        event: EVENT_NAMES[Math.floor(r() * EVENT_NAMES.length)],
        properties: {
          distinct_id: `user-${user}`,
          time: start + n,
          $insert_id: `bench-${n}`,
          $browser: BROWSERS[Math.floor(r() * BROWSERS.length)],
          $os: r() < 0.5 ? 'Windows' : 'macOS',
          country: COUNTRIES[Math.floor(r() * COUNTRIES.length)],
          plan: PLANS[Math.floor(r() * PLANS.length)],
          path: `/products/${Math.floor(r() * 500)}`,
          referrer: r() < 0.3 ? 'https://www.google.com/' : 'direct',
          amount: Math.round(r() * 10_000) / 100,
          logged_in: r() < 0.6,
          session_length: Math.floor(r() * 3600),
          experiment: { id: 'exp-1', variant: r() < 0.5 ? 'a' : 'b' },
        },
      });
    }
    bodies.push(JSON.stringify(batch));
  }
  return bodies;
}

function startServer(env: Record<string, string>) {
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean); // e.g. --cpu-prof
  return startBenchService({
    name: 'bench-ingest', env: { ...env, DATABASE_URL: '', NATS_URL: '' }, nodeArgs,
    prefix: hasTaskset ? ['taskset', '-c', CPU_SERVER] : [],
  });
}

const api = benchApi;

function post(agent: http.Agent, url: URL, token: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, path: '/track', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-service-token': token } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const peakRss = (pid: number) => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

async function run(store: string, env: Record<string, string>) {
  const { url, child, dataDir } = await startServer(env);
  try {
    const org = await api(url, 'POST', '/admin/orgs', { name: 'bench' });
    const project = await api(url, 'POST', `/admin/orgs/${org.id}/projects`, { name: 'bench' });
    const bodies = makeBodies(Date.now() - 3_600_000);
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
    const target = new URL(url);
    const t0 = performance.now();
    let next = 0;
    let failures = 0;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (next < bodies.length) {
          const body = bodies[next++];
          const status = await post(agent, target, project.token, body);
          if (status !== 200) failures++;
        }
      }),
    );
    const accepted = performance.now() - t0;
    let stored = 0;
    for (;;) {
      const stats = await api(url, 'GET', `/api/data/stats?projectId=${project.id}`);
      stored = stats.events;
      if (stored >= EVENTS || performance.now() - t0 > 600_000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const endToEnd = performance.now() - t0;
    agent.destroy();
    const result = {
      store,
      events: EVENTS,
      stored,
      failedRequests: failures,
      acceptedPerSec: Math.round(EVENTS / (accepted / 1000)),
      endToEndPerSec: Math.round(stored / (endToEnd / 1000)),
      seconds: Math.round(endToEnd) / 1000,
      peakRssMiB: Math.round(peakRss(child.pid!)),
    };
    console.log(JSON.stringify(result));
    return result;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main() {
  // Pipeline mode (API -> JetStream -> worker -> ClickHouse, separate processes): scripts/bench-pipeline.ts.
  if (process.argv.includes('--pipeline')) {
    await import('./bench-pipeline.js');
    return;
  }
  if (hasTaskset && process.env.BENCH_PINNED !== '1') {
    // Re-run this script pinned to the generator's CPU.
    const r = spawnSync('taskset', ['-c', CPU_CLIENT, process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url)], {
      stdio: 'inherit', env: { ...process.env, BENCH_PINNED: '1' },
    });
    process.exit(r.status ?? 1);
  }
  console.log(`bench:ingest: ${EVENTS} events, batches of ${BATCH}, ${CONNECTIONS} connections; server on CPU ${hasTaskset ? CPU_SERVER : 'any'}, generator on CPU ${hasTaskset ? CPU_CLIENT : 'any'}`);
  await run('duckdb', {});
  const ch = process.env.BENCH_CLICKHOUSE_URL ?? process.env.TEST_CLICKHOUSE_URL;
  if (ch) {
    const db = `bench_ingest_${process.pid}`;
    await run('clickhouse', { CLICKHOUSE_URL: ch, CLICKHOUSE_DATABASE: db });
    await fetch(ch, { method: 'POST', body: `DROP DATABASE IF EXISTS ${db}` }).catch(() => undefined);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
