/**
 * Pipeline benchmark: API -> NATS JetStream -> worker(s) -> ClickHouse, every part a real process.
 *
 *   npm run bench:pipeline -- [--events 300000] [--batch 100] [--concurrency 16] [--workers 1] [--cluster] [--json] [--drain] [--plain [--rate 0]]
 *
 * Starts a private nats-server (file store) and clickhouse-server (own ports and data dir), uses
 * PostgreSQL from TEST_DATABASE_URL / DATABASE_URL (scripts/services.sh), runs `api` and `worker`
 * as child processes, and sends `--events` events: by default bench:ingest's identity traffic
 * (scripts/bench-traffic.ts: /track in batches of `--batch`, /alias, /engage), prepared before the
 * timing and sent over `--concurrency` keep-alive connections, then checks the answers (every
 * link in PostgreSQL, one unique user per generated user; the run fails otherwise); `--plain`
 * sends the earlier stream (997 identified users, 4 properties, no links), `--rate` events/s
 * (0 = as fast as the API accepts). Reports: accepted events/s at the API, sustained end-to-end events/s (first
 * request to last event queryable), end-to-end lag p50/p99/max (accepted -> queryable in
 * ClickHouse, per event, matching the k-th accepted with the k-th stored), and peak RSS of
 * every process. `--drain` measures the workers alone: the whole load is accepted first (workers
 * stopped, the backlog waits in JetStream), then the workers start and drain it. `--cluster` runs
 * the same load twice in one run, on one clickhouse-server and on a two-shard cluster
 * (CLICKHOUSE_CLUSTER, test/support/clickhouse-cluster.ts), and also times an analysis-shaped read
 * (uniques per event and day) on each; `--json` prints one final JSON line.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { connect as natsConnect } from 'nats';
import { natsConfig } from '../apps/server/src/ports/buffer/jetstream-config.js';
import YAML from 'yaml';
import {
  ClickHouseServer, NatsServer, freePort, sendEvents, sleep, startRole, tempDir, waitFor, type Child,
} from '../test/support/processes.js';
import { ClickHouseCluster, CLUSTER_NAME } from '../test/support/clickhouse-cluster.js';
import { numberArg, ownCpuMs, peakRssMb, serviceClock, serviceLoad } from './bench-support.js';
import { makeDataset, sendAll, uniqueUsers, type Dataset } from './bench-traffic.js';

const EVENTS = numberArg('events', 300_000);
const RATE = numberArg('rate', 0);
const BATCH = numberArg('batch', 100);
const CONCURRENCY = numberArg('concurrency', 16);
const WORKERS = numberArg('workers', 1);
/**
 * The workers run with the NODE_OPTIONS the chart gives them (`worker.nodeOptions`), so the
 * figures are the default deployment's; BENCH_WORKER_NODE_OPTIONS overrides them ('' for Node's).
 */
const WORKER_NODE_OPTIONS = process.env.BENCH_WORKER_NODE_OPTIONS
  ?? String((YAML.parse(fs.readFileSync(new URL('../charts/tally/values.yaml', import.meta.url), 'utf8')) as { worker: { nodeOptions?: string } }).worker.nodeOptions ?? '');
const DRAIN = process.argv.includes('--drain');
const CLUSTER = process.argv.includes('--cluster');
const JSON_LINE = process.argv.includes('--json');
/** `--plain`: the earlier stream (every event from one of 997 identified users, 4 properties, no links). */
const PLAIN = process.argv.includes('--plain');
const SUPERADMIN_KEY = 'bench-superadmin-key';

/**
 * CPU milliseconds of this machine's PostgreSQL server processes (every `postgres` process, per pid):
 * the metadata store is a shared server, so its share is read off its processes, not a child's.
 */
function postgresCpu(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') out.set(pid, ownCpuMs(pid));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** The event store under test: one server, or the two-shard cluster (`servers`: each server's URL). */
interface Store { url: string; servers: string[]; pids: Array<[string, number]>; env: Record<string, string>; close(): Promise<void> }

async function singleStore(): Promise<Store> {
  const ch = await ClickHouseServer.start();
  return { url: ch.url, servers: [ch.url], pids: [['clickhouse-server', ch.child!.pid]], env: {}, close: () => ch.close() };
}

/**
 * ClickHouse's own counters (system.events, summed over the servers), to tell its background
 * merges from its queries: MergesTimeMilliseconds (merges' elapsed time), MergedRows,
 * InsertedRows, OSCPUVirtualTimeMicroseconds (the queries' CPU; merges are not queries).
 */
const CLICKHOUSE_COUNTERS = ['MergesTimeMilliseconds', 'MergedRows', 'InsertedRows', 'OSCPUVirtualTimeMicroseconds'];
async function clickhouseCounters(servers: string[]): Promise<Record<string, number>> {
  const sum: Record<string, number> = Object.fromEntries(CLICKHOUSE_COUNTERS.map((c) => [c, 0]));
  for (const server of servers) {
    const r = await fetch(`${server}/`, {
      method: 'POST', body: `SELECT event, value FROM system.events WHERE event IN (${CLICKHOUSE_COUNTERS.map((c) => `'${c}'`).join(', ')}) FORMAT TSV`,
    });
    for (const line of (await r.text()).trim().split('\n')) {
      const [name, value] = line.split('\t');
      if (name in sum) sum[name] += Number(value);
    }
  }
  return sum;
}

async function clusterStore(): Promise<Store> {
  const c = await ClickHouseCluster.start();
  return {
    url: c.url, servers: c.shards.map((_, i) => c.shardUrl(i)), env: { CLICKHOUSE_CLUSTER: CLUSTER_NAME },
    pids: c.shards.map((s, i) => [`clickhouse-server shard ${i + 1}`, s.child!.pid] as [string, number]),
    close: () => c.close(),
  };
}

async function main() {
  if (!CLUSTER) {
    const r = await run(singleStore);
    if (!JSON_LINE) console.log(JSON.stringify(r, null, 2));
    else console.log(JSON.stringify(r));
    if (r.checks !== undefined && r.checks !== 'ok') process.exitCode = 1;
    return;
  }
  const single = await run(singleStore);
  const cluster = await run(clusterStore);
  const report = {
    single, cluster,
    ratios: {
      sustainedEndToEnd: ratio(cluster.sustainedEndToEndPerSec, single.sustainedEndToEndPerSec),
      queryMs: ratio(cluster.queryMs, single.queryMs),
    },
  };
  if (!JSON_LINE) console.log(JSON.stringify(report, null, 2));
  else console.log(JSON.stringify(report));
  if ([single, cluster].some((r) => r.checks !== undefined && r.checks !== 'ok')) process.exitCode = 1;
}

const ratio = (a: unknown, b: unknown) => (typeof a === 'number' && typeof b === 'number' && b > 0 ? Math.round((a / b) * 100) / 100 : null);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function run(openStore: () => Promise<Store>): Promise<Record<string, any>> {
  const pgUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!pgUrl) throw new Error('set TEST_DATABASE_URL (eval "$(bash scripts/services.sh --env)")');
  // Identity traffic (bench-traffic.ts), serialised before anything is timed.
  const data: Dataset | undefined = PLAIN ? undefined : makeDataset({ events: EVENTS, batch: BATCH });
  if (data && RATE) throw new Error('--rate sends the --plain stream');
  const logDir = tempDir('bench-pipeline-');
  const children: Child[] = [];
  const [nats, ch] = await Promise.all([NatsServer.start(), openStore()]);
  const dbName = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  await admin.end();
  const dbUrl = new URL(pgUrl);
  dbUrl.pathname = `/${dbName}`;
  try {
    const port = await freePort();
    const env = {
      DATABASE_URL: dbUrl.toString(), CLICKHOUSE_URL: ch.url, CLICKHOUSE_DATABASE: 'bench', NATS_URL: nats.url,
      ...ch.env, SUPERADMIN_KEY, LOG_LEVEL: 'error', DATA_DIR: path.join(logDir, 'data'), HOST: '127.0.0.1',
      RATE_LIMIT_PER_IP: '1000000000', RATE_LIMIT_PER_PROJECT: '1000000000',
    };
    const api = startRole('api', 'api', { ...env, PORT: String(port) }, logDir);
    children.push(api);
    const url = `http://127.0.0.1:${port}`;
    await waitFor('api', async () => (await fetch(`${url}/health/ready`)).status === 200, 60_000, 250);
    // Each role's /metrics, for how busy its main thread was (workers serve theirs on METRICS_PORT).
    const metricsUrls: Array<[string, string]> = [['api', url]];
    const startWorkers = async () => {
      const nodeOptions = [process.env.NODE_OPTIONS, WORKER_NODE_OPTIONS].filter(Boolean).join(' ');
      metricsUrls.splice(1); // --drain starts the workers again: only the running ones are read
      for (let i = 0; i < WORKERS; i++) {
        const metricsPort = await freePort();
        children.push(startRole(`worker-${i + 1}`, 'worker', { ...env, NODE_OPTIONS: nodeOptions, METRICS_PORT: String(metricsPort) }, logDir));
        metricsUrls.push([`worker-${i + 1}`, `http://127.0.0.1:${metricsPort}`]);
      }
    };
    await startWorkers();
    const post = async (p: string, body: unknown) => {
      const r = await fetch(url + p, { method: 'POST', headers: { authorization: `Bearer ${SUPERADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (r.status !== 201) throw new Error(`${p}: ${r.status} ${await r.text()}`);
      return r.json() as Promise<{ id: number; token: string }>;
    };
    const org = await post('/admin/orgs', { name: 'bench', monthlyEventQuota: 1_000_000_000 });
    const project = await post(`/admin/orgs/${org.id}/projects`, { name: 'bench' });
    const count = async () => {
      const r = await fetch(`${ch.url}/?database=bench`, { method: 'POST', body: `SELECT count() FROM events WHERE project_id = ${project.id}` });
      return Number((await r.text()).trim());
    };
    // warm-up: JIT, connections, the consumer
    await sendEvents({ url, token: project.token, total: 2000, batchSize: BATCH, concurrency: 4, timeBase: Date.UTC(2023, 0, 1), retry: true });
    await waitFor('warm-up stored', async () => (await count()) >= 2000, 60_000, 100);
    const base = await count();
    if (DRAIN) {
      for (const c of children.filter((c) => c.name.startsWith('worker-'))) await c.kill('SIGTERM');
      children.splice(0, children.length, ...children.filter((c) => !c.name.startsWith('worker-')));
    }

    const procs: Array<[string, number]> = [
      ...children.map((c) => [c.name, c.pid] as [string, number]),
      ['nats-server', nats.child!.pid], ...ch.pids, ['load generator (this process)', process.pid],
    ];
    const cpuBefore = procs.map(([, pid]) => ownCpuMs(pid));
    const postgresBefore = postgresCpu();
    const countersBefore = await clickhouseCounters(ch.servers);
    const clocksBefore = DRAIN ? [] : await Promise.all(metricsUrls.map(([, u]) => serviceClock(u)));
    const storedCurve: Array<[number, number]> = [];
    let started = Date.now();
    let load: Pick<Awaited<ReturnType<typeof sendEvents>>, 'statuses' | 'acceptedCurve' | 'elapsedMs'> | undefined;
    let sent: Awaited<ReturnType<typeof sendAll>> | undefined;
    if (DRAIN) {
      if (data) load = sent = await sendAll(url, project.token, data.requests, CONCURRENCY);
      else load = await sendEvents({ url, token: project.token, total: EVENTS, batchSize: BATCH, concurrency: CONCURRENCY, timeBase: Date.UTC(2024, 0, 1), retry: true });
      await startWorkers();
      started = Date.now();
    }
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const n = (await count().catch(() => base)) - base;
        storedCurve.push([Date.now() - started, n]);
        if (n >= EVENTS) break;
        await sleep(50);
      }
    })();
    if (!DRAIN && data) load = sent = await sendAll(url, project.token, data.requests, CONCURRENCY);
    load ??= await sendEvents({
      url, token: project.token, total: EVENTS, batchSize: BATCH, concurrency: CONCURRENCY,
      timeBase: Date.UTC(2024, 0, 1), eventsPerSecond: RATE || undefined, retry: true,
    });
    await waitFor('all stored', async () => (storedCurve.at(-1)?.[1] ?? 0) >= EVENTS, 600_000, 100);
    polling = false;
    await poller;
    const doneMs = storedCurve.at(-1)![0];
    // The answers, for identity traffic: every link stored, one unique user per generated user.
    const checks: string[] = [];
    if (sent?.failed) checks.push(`${sent.failed} requests failed`);
    if (data) {
      const links = async () => {
        const c = new pg.Client({ connectionString: dbUrl.toString() });
        await c.connect();
        try {
          return Number((await c.query('SELECT count(*) AS n FROM identity_links WHERE project_id = $1', [project.id])).rows[0].n);
        } finally {
          await c.end();
        }
      };
      await waitFor('links stored', async () => (await links()) >= data.links, 60_000, 200).catch(() => undefined);
      const stored = await links();
      if (stored !== data.links) checks.push(`links ${stored}, expected ${data.links}`);
      const unique = await uniqueUsers(url, SUPERADMIN_KEY, project.id);
      if (unique !== data.users) checks.push(`unique users ${unique}, generated ${data.users}`);
    }
    if (DRAIN) {
      const workerProcs = children.filter((c) => c.name.startsWith('worker-'));
      return ({
        mode: 'drain', events: EVENTS, batch: BATCH, workers: WORKERS, workerNodeOptions: WORKER_NODE_OPTIONS,
        drainMsIncludingWorkerStart: doneMs,
        workerDrainPerSec: Math.round(EVENTS / ((doneMs - (storedCurve.find(([, k]) => k > 0)?.[0] ?? 0)) / 1000)),
        traffic: data ? 'identity' : 'plain',
        checks: checks.length ? checks.join('; ') : 'ok',
        // The workers started with the drain: their whole CPU, start included, over the drain.
        workerCpuCores: Math.round((workerProcs.reduce((ms, c) => ms + ownCpuMs(c.pid), 0) / doneMs) * 100) / 100,
        peakRssMb: Object.fromEntries(workerProcs.map((c) => [c.name, peakRssMb(c.pid)])),
      });
    }
    /** Cores: CPU ms over the load's wall ms. */
    const cores = (cpuMs: number) => Math.round((cpuMs / doneMs) * 100) / 100;
    const cpu = Object.fromEntries(procs.map(([name, pid], i) => [name, cores(ownCpuMs(pid) - cpuBefore[i])]));
    const clocksAfter = await Promise.all(metricsUrls.map(([, u]) => serviceClock(u)));
    const mainThreadBusy = Object.fromEntries(metricsUrls.map(([name], i) => [name, serviceLoad(clocksBefore[i], clocksAfter[i]).mainThreadBusy]));
    // PostgreSQL when it runs on this machine (backends that exited during the load are not counted).
    const postgresAfter = postgresCpu();
    if (postgresAfter.size > 0) {
      let ms = 0;
      for (const [pid, after] of postgresAfter) ms += after - (postgresBefore.get(pid) ?? 0);
      cpu['postgresql (this machine)'] = cores(ms);
    }
    // Messages JetStream delivered again after its ack wait: each one holds its events back ~30 s.
    const redelivered = await consumerRedeliveries(nats.url);
    const counters = await clickhouseCounters(ch.servers);
    const counted = (name: string) => counters[name] - countersBefore[name];
    const clickhouse = {
      mergesMs: counted('MergesTimeMilliseconds'), mergedRows: counted('MergedRows'), insertedRows: counted('InsertedRows'),
      queriesCpuMs: Math.round(counted('OSCPUVirtualTimeMicroseconds') / 1000),
    };

    // lag of the k-th event: first time stored >= k minus first time accepted >= k
    const lags: number[] = [];
    const step = Math.max(1, Math.floor(EVENTS / 2000));
    let ai = 0;
    let si = 0;
    for (let k = step; k <= EVENTS; k += step) {
      while (load.acceptedCurve[ai][1] < k) ai++;
      while (storedCurve[si][1] < k) si++;
      lags.push(Math.max(0, storedCurve[si][0] - load.acceptedCurve[ai][0]));
    }
    lags.sort((a, b) => a - b);
    const rss = Object.fromEntries([
      ...children.map((c) => [c.name, peakRssMb(c.pid)]),
      ['nats-server', peakRssMb(nats.child!.pid)],
      ...ch.pids.map(([name, pid]) => [name, peakRssMb(pid)]),
    ]);
    // An analysis-shaped read over the stored events (uniques per event and day), median of 5.
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const r = await fetch(`${ch.url}/?database=bench`, {
        method: 'POST',
        body: `SELECT event, toStartOfDay(toDateTime(intDiv(time, 1000))) AS d, uniqExact(distinct_id) AS u, count() AS n FROM events FINAL WHERE project_id = ${project.id} GROUP BY event, d FORMAT Null`,
      });
      if (!r.ok) throw new Error(`query: ${await r.text()}`);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const report = {
      events: EVENTS, batch: BATCH, concurrency: CONCURRENCY, workers: WORKERS, workerNodeOptions: WORKER_NODE_OPTIONS, rate: RATE || 'unpaced',
      traffic: data ? { kind: 'identity', requests: data.requests.length, users: data.users, links: data.links, aliasCalls: data.aliasCalls, engageOps: data.engageOps } : { kind: 'plain' },
      checks: checks.length ? checks.join('; ') : 'ok',
      statuses: load.statuses,
      apiAcceptedPerSec: Math.round(EVENTS / (load.elapsedMs / 1000)),
      sustainedEndToEndPerSec: Math.round(EVENTS / (doneMs / 1000)),
      lagMs: { p50: pct(lags, 50), p99: pct(lags, 99), max: lags.at(-1) },
      peakRssMb: rss,
      /** CPU cores used on average while the load ran (the machine has os.cpus().length). */
      cpuCores: cpu,
      /** Share of the load's time each role's JavaScript thread ran (its event loop's utilisation). */
      mainThreadBusy,
      /** ClickHouse's merges next to its queries while the load ran (see clickhouseCounters). */
      clickhouse,
      natsRedelivered: redelivered,
      machineCores: os.cpus().length,
      queryMs: Math.round(times[2] * 10) / 10,
    };
    return report;
  } finally {
    for (const c of children) await c.kill('SIGTERM', 10_000).catch(() => undefined);
    await nats.close();
    await ch.close();
    const a = new pg.Client({ connectionString: pgUrl });
    await a.connect();
    await a.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await a.end();
    fs.rmSync(logDir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(), (err) => {
  console.error(err);
  process.exit(1);
});

/**
 * Deliveries beyond the first of each message: the consumer's delivery count less the stream's
 * last delivered sequence (the run's stream is new, so every message was delivered at least once).
 * `num_redelivered` would not do: it counts only redelivered messages not yet acked.
 */
async function consumerRedeliveries(natsUrl: string): Promise<number> {
  const nc = await natsConnect({ servers: natsUrl });
  try {
    const { stream, consumer } = natsConfig(process.env); // the roles' stream and consumer (the bench sets neither)
    const { delivered } = await (await nc.jetstreamManager()).consumers.info(stream, consumer);
    return delivered.consumer_seq - delivered.stream_seq;
  } finally {
    await nc.close();
  }
}
