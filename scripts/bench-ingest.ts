/**
 * `npm run bench:ingest`: sustained ingestion speed, end to end, into each configured event store,
 * on realistic identity traffic, next to the engine's raw insert rate of the same rows.
 *
 * For each store (embedded DuckDB always; ClickHouse when BENCH_CLICKHOUSE_URL or
 * TEST_CLICKHOUSE_URL is set) it starts the whole service (API + ingestion worker, SQLite
 * metadata) in a child process pinned to CPU 0 (`taskset`, when available), while this process,
 * the load generator, pins itself to CPU 1. It sends a deterministic stream (makeDataset: visits of
 * 3-10 events with 13+ properties, /track batches of 500; 20 % of visits start under an anonymous
 * mixpanel-browser id and are identified later by `$identify` events or POST /alias; /alias calls
 * for CRM ids; /engage profile sets, some on anonymous ids) over a few keep-alive connections and
 * waits until /api/data/stats counts every event and the metadata store holds every link.
 *
 * Then it checks the answers (the run fails otherwise): a unique count over the range through
 * POST /api/query/segmentation equals the number of users the generator made (so every anonymous
 * visit was merged into its user), the links are exactly the ones the traffic asked for, and an
 * anonymous id's profile reached its user. After the service stops, a child pinned to the
 * server's CPU reads the stored rows back and times inserting them into a fresh table of the same
 * shape with the engine's own client (rawDuckDb, rawClickHouse): the "raw" rate.
 *
 * Reported per store: accepted events/s (first send to the last request answered), end-to-end
 * events/s (first send until everything is visible), raw events/s, ratio = end to end / raw, the
 * server's peak RSS (VmHWM), links applied, and the 1-minute load average (other work on the
 * machine moves every figure). `--json`: one final JSON line, per store.
 *
 * Env: BENCH_EVENTS (default 300000), BENCH_CONNECTIONS (default 4), BENCH_CPU_SERVER /
 * BENCH_CPU_CLIENT (default 0 / 1), BENCH_NODE_ARGS (extra node flags for the server, e.g. --cpu-prof).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openMetadataStore } from '../apps/server/src/ports/metadata/knex.js';
import { EVENT_STORE_DDL, PERSON_KEY_SQL } from '../apps/server/src/ports/events/schema.js';
import { duckDbSettings } from '../apps/server/src/ports/events/duckdb.js';
import { BENCH_KEY, benchApi, serviceClock, serviceLoad, startBenchService } from './bench-support.js';
import { AUX_BATCH, makeDataset, sendAll, uniqueUsers, type Dataset } from './bench-traffic.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 300_000);
const BATCH = 500;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const CPU_SERVER = process.env.BENCH_CPU_SERVER ?? '0';
const CPU_CLIENT = process.env.BENCH_CPU_CLIENT ?? '1';
const hasTaskset = spawnSync('taskset', ['-V']).status === 0;
/** The layout a figure was measured in: it decides what shares the service's core. */
const layoutOf = (store: string) => hasTaskset
  ? `service on CPU ${CPU_SERVER}${store === 'duckdb' ? ' with DuckDB in its process' : ', the ClickHouse server unpinned'}, load generator on CPU ${CPU_CLIENT}`
  : 'nothing pinned (no taskset)';

function startServer(env: Record<string, string>) {
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean); // e.g. --cpu-prof
  return startBenchService({
    name: 'bench-ingest', env: { ...env, DATABASE_URL: '', NATS_URL: '' }, nodeArgs,
    prefix: hasTaskset ? ['taskset', '-c', CPU_SERVER] : [],
  });
}

const api = benchApi;

const peakRss = (pid: number) => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

interface Result {
  store: string;
  events: number;
  stored: number;
  failedRequests: number;
  acceptedPerSec: number;
  endToEndPerSec: number;
  rawPerSec: number;
  ratio: number;
  seconds: number;
  peakRssMiB: number;
  /** Cores the service process used from the first send until everything was visible (all its threads). */
  serverCpuCores: number;
  /** Share of that time its main (JavaScript) thread was running: near 1, that thread is the limit. */
  mainThreadBusy: number;
  /** End-to-end events/s per core the service process used (the rate it would keep per core of its own). */
  eventsPerServerCore: number;
  /** Where the service, its engine and the load generator ran. */
  layout: string;
  users: number;
  uniqueUsers: number;
  linksExpected: number;
  linksApplied: number;
  aliasCalls: number;
  engageOps: number;
  checks: 'ok' | string;
  load1: number;
}

/** Identity links the service holds (its SQLite metadata store in DATA_DIR). */
async function linkCount(dataDir: string, projectId: number): Promise<number> {
  const db = openMetadataStore({ dataDir });
  try {
    const rows: Array<{ n: number }> = await db('identity_links').where({ project_id: projectId }).count({ n: '*' });
    return Number(rows[0].n);
  } finally {
    await db.destroy();
  }
}

async function run(store: string, env: Record<string, string>, data: Dataset): Promise<Result> {
  const { url, child, dataDir } = await startServer(env);
  try {
    const org = await api(url, 'POST', '/admin/orgs', { name: 'bench' });
    const project = await api(url, 'POST', `/admin/orgs/${org.id}/projects`, { name: 'bench' });
    const clock0 = await serviceClock(url);
    const t0 = performance.now();
    // 503s (a full in-process buffer) count as failures here, not retries: the run must not need them.
    const failures = (await sendAll(url, project.token, data.requests, CONNECTIONS, { retryUnavailable: false })).failed;
    const accepted = performance.now() - t0;
    // Visible: /api/data/stats counts every event and the metadata store holds every link.
    let stored = 0;
    let links = 0;
    for (;;) {
      const stats = await api(url, 'GET', `/api/data/stats?projectId=${project.id}`);
      stored = stats.events;
      if (stored >= data.events) links = await linkCount(dataDir, project.id);
      if ((stored >= data.events && links >= data.links) || performance.now() - t0 > 600_000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const endToEnd = performance.now() - t0;
    const load = serviceLoad(clock0, await serviceClock(url));
    const rss = peakRss(child.pid!);
    const load1 = Math.round(loadavg()[0] * 10) / 10;
    // The answers: one unique user per generated user (anonymous visits merged into their user).
    const unique = await uniqueUsers(url, BENCH_KEY, project.id);
    const problems: string[] = [];
    if (failures) problems.push(`${failures} requests failed`);
    if (stored !== data.events) problems.push(`stored ${stored} of ${data.events} events`);
    if (unique !== data.users) problems.push(`unique users ${unique}, generated ${data.users}`);
    if (links !== data.links) problems.push(`links ${links}, expected ${data.links}`);
    if (data.mergedProfile) {
      const { user, key, value } = data.mergedProfile;
      const detail = await api(url, 'GET', `/api/data/users/${encodeURIComponent(user)}?projectId=${project.id}&limit=1`);
      if (!JSON.stringify(detail).includes(`"${key}":"${value}"`)) problems.push(`profile of ${user} lacks ${key}=${value} set on its anonymous id`);
    }
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    const raw = rawInsert(store, store === 'duckdb' ? [path.join(dataDir, 'events.duckdb')] : [env.CLICKHOUSE_URL, env.CLICKHOUSE_DATABASE]);
    const endToEndPerSec = Math.round(stored / (endToEnd / 1000));
    const result: Result = {
      store,
      events: data.events,
      stored,
      failedRequests: failures,
      acceptedPerSec: Math.round(data.events / (accepted / 1000)),
      endToEndPerSec,
      rawPerSec: raw.perSec,
      ratio: Math.round((endToEndPerSec / raw.perSec) * 1000) / 1000,
      seconds: Math.round(endToEnd) / 1000,
      peakRssMiB: Math.round(rss),
      serverCpuCores: load.cpuCores,
      mainThreadBusy: load.mainThreadBusy,
      eventsPerServerCore: load.cpuCores > 0 ? Math.round(endToEndPerSec / load.cpuCores) : 0,
      layout: layoutOf(store),
      users: data.users,
      uniqueUsers: unique,
      linksExpected: data.links,
      linksApplied: links,
      aliasCalls: data.aliasCalls,
      engageOps: data.engageOps,
      checks: problems.length ? problems.join('; ') : 'ok',
      load1,
    };
    if (!JSON_ONLY) {
      console.log(`${store}: ${result.stored} events in ${result.seconds} s: accepted ${result.acceptedPerSec} ev/s, end to end ${result.endToEndPerSec} ev/s, ` +
        `raw insert ${result.rawPerSec} ev/s (${raw.rows} rows, ${raw.how}), ratio ${result.ratio}; server peak RSS ${result.peakRssMiB} MiB, ` +
        `${result.serverCpuCores} cores (${result.eventsPerServerCore} ev/s per core), main thread busy ${result.mainThreadBusy}; layout: ${result.layout}; ` +
        `unique users ${unique}/${data.users}, links ${links}/${data.links}; load ${load1}; checks: ${result.checks}`);
    }
    return result;
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The engine's raw insert rate of the rows the service stored: a child process (pinned to the
 * server's CPU) reads them back from the stopped service's store, then times inserting them into
 * a fresh table of the same shape with the engine's own client, 10,000 rows per insert.
 */
function rawInsert(store: string, args: string[]): { perSec: number; rows: number; how: string } {
  const r = spawnSync(...nodeCommand(['--raw', store, ...args]), { env: process.env, encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`raw insert (${store}) failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!);
  return { perSec: Math.round(out.rows / (out.ms / 1000)), rows: out.rows, how: out.how };
}

/** `taskset -c <server CPU> node --import tsx <this script> ...args`. */
function nodeCommand(args: string[]): [string, string[]] {
  const node = [process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), ...args];
  return hasTaskset ? ['taskset', ['-c', CPU_SERVER, ...node]] : [node[0], node.slice(1)];
}

const RAW_CHUNK = 10_000;
const EVENT_COLUMNS = 'project_id, id, event, distinct_id, time, insert_id, prop_keys, prop_values, prop_types, received_at, person_id';

/**
 * DuckDB: the appender into a temporary table with the lists joined into one string each, then
 * `INSERT INTO events SELECT ... string_split(...)`: the fastest path from Node we measured
 * (appending the lists element by element with `appendList` ran at ~3,000 rows/s, a DataChunk of
 * list values no faster than this). The service does the same plus its dedup anti-join.
 */
async function rawDuckDb(source: string) {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const src = await DuckDBInstance.create(source, { access_mode: 'READ_ONLY' });
  const srcConn = await src.connect();
  const rows = (await srcConn.runAndReadAll(`SELECT ${EVENT_COLUMNS} FROM events`)).getRows();
  srcConn.closeSync();
  src.closeSync();
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-ingest-raw-'));
  try {
    // The service's instance settings (ports/events/duckdb.ts) and its events table.
    const db = await DuckDBInstance.create(path.join(dir, 'raw.duckdb'), duckDbSettings());
    const conn = await db.connect();
    await conn.run(EVENT_STORE_DDL.duckdb[0]);
    await conn.run(`CREATE TEMP TABLE staging (project_id INTEGER, id BIGINT, event VARCHAR, distinct_id VARCHAR, time BIGINT,
      insert_id VARCHAR, prop_keys VARCHAR, prop_values VARCHAR, prop_types VARCHAR, received_at BIGINT, person_id VARCHAR)`);
    const joined = (list: unknown) => {
      let s = '';
      for (const x of (list as { items: string[] }).items) s += '\u0000' + x;
      return s;
    };
    const t0 = performance.now();
    for (let i = 0; i < rows.length; i += RAW_CHUNK) {
      const a = await conn.createAppender('staging', null, 'temp');
      for (let j = i; j < Math.min(rows.length, i + RAW_CHUNK); j++) {
        const row = rows[j];
        a.appendInteger(row[0] as number);
        a.appendBigInt(row[1] as bigint);
        a.appendVarchar(row[2] as string);
        a.appendVarchar(row[3] as string);
        a.appendBigInt(row[4] as bigint);
        a.appendVarchar(row[5] as string);
        a.appendVarchar(joined(row[6]));
        a.appendVarchar(joined(row[7]));
        a.appendVarchar(row[8] as string);
        a.appendBigInt(row[9] as bigint);
        a.appendVarchar(row[10] as string);
        a.endRow();
      }
      a.closeSync();
      await conn.run(`INSERT INTO events (${EVENT_COLUMNS}, person_key) SELECT project_id, id, event, distinct_id, time, insert_id,
        string_split(prop_keys, chr(0))[2:], string_split(prop_values, chr(0))[2:], prop_types, received_at, person_id, ${PERSON_KEY_SQL.duckdb('person_id')} FROM staging`);
      await conn.run('DELETE FROM staging');
    }
    const ms = performance.now() - t0;
    const n = Number((await conn.runAndReadAll('SELECT count(*) FROM events')).getRows()[0][0]);
    if (n !== rows.length) throw new Error(`raw table holds ${n} of ${rows.length} rows`);
    conn.closeSync();
    db.closeSync();
    return { rows: rows.length, ms, how: 'appender into a staging table + INSERT SELECT, 10,000 rows per insert' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function rawClickHouse(url: string, database: string) {
  const { createClient } = await import('@clickhouse/client');
  const client = createClient({ url, database });
  const rawDb = `${database}_raw`;
  try {
    const rows = await (await client.query({ query: `SELECT ${EVENT_COLUMNS} FROM events`, format: 'JSONEachRow' })).json<Record<string, unknown>>();
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${rawDb}` });
    await client.command({ query: EVENT_STORE_DDL.clickhouse[0].replace('CREATE TABLE IF NOT EXISTS events', `CREATE TABLE ${rawDb}.events`) });
    const t0 = performance.now();
    for (let i = 0; i < rows.length; i += RAW_CHUNK) {
      await client.insert({ table: `${rawDb}.events`, values: rows.slice(i, i + RAW_CHUNK), format: 'JSONEachRow' });
    }
    const ms = performance.now() - t0;
    const n = Number((await (await client.query({ query: `SELECT count() AS n FROM ${rawDb}.events`, format: 'JSONEachRow' })).json<{ n: string }>())[0].n);
    if (n !== rows.length) throw new Error(`raw table holds ${n} of ${rows.length} rows`);
    return { rows: rows.length, ms, how: '@clickhouse/client insert JSONEachRow, 10,000 rows per insert' };
  } finally {
    await client.command({ query: `DROP DATABASE IF EXISTS ${rawDb}` }).catch(() => undefined);
    await client.close();
  }
}

const JSON_ONLY = process.argv.includes('--json');

async function main() {
  // Pipeline mode (API -> JetStream -> worker -> ClickHouse, separate processes): scripts/bench-pipeline.ts.
  if (process.argv.includes('--pipeline')) {
    await import('./bench-pipeline.js');
    return;
  }
  const rawAt = process.argv.indexOf('--raw');
  if (rawAt >= 0) {
    const [store, a, b] = process.argv.slice(rawAt + 1);
    console.log(JSON.stringify(store === 'duckdb' ? await rawDuckDb(a) : await rawClickHouse(a, b)));
    return;
  }
  if (hasTaskset && process.env.BENCH_PINNED !== '1') {
    // Re-run this script pinned to the generator's CPU.
    const r = spawnSync('taskset', ['-c', CPU_CLIENT, process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
      stdio: 'inherit', env: { ...process.env, BENCH_PINNED: '1' },
    });
    process.exit(r.status ?? 1);
  }
  const data = makeDataset({ events: EVENTS, batch: BATCH });
  if (!JSON_ONLY) {
    console.log(`bench:ingest: ${data.events} events (${data.users} users; ${data.links} identity links, ${data.aliasCalls} of them by /alias; ${data.engageOps} /engage ops) ` +
      `in ${data.requests.length} requests (/track batches of ${BATCH}, /alias and /engage of ${AUX_BATCH}), ${CONNECTIONS} connections; ` +
      `server on CPU ${hasTaskset ? CPU_SERVER : 'any'}, generator on CPU ${hasTaskset ? CPU_CLIENT : 'any'}`);
  }
  const results: Result[] = [await run('duckdb', {}, data)];
  const ch = process.env.BENCH_CLICKHOUSE_URL ?? process.env.TEST_CLICKHOUSE_URL;
  if (ch) {
    const db = `bench_ingest_${process.pid}`;
    try {
      results.push(await run('clickhouse', { CLICKHOUSE_URL: ch, CLICKHOUSE_DATABASE: db }, data));
    } finally {
      await fetch(ch, { method: 'POST', body: `DROP DATABASE IF EXISTS ${db}` }).catch(() => undefined);
    }
  }
  if (JSON_ONLY) {
    const pick = (r: Result) => ({
      events: r.stored, acceptedPerSec: r.acceptedPerSec, endToEndPerSec: r.endToEndPerSec, rawPerSec: r.rawPerSec, ratio: r.ratio,
      peakRssMiB: r.peakRssMiB, serverCpuCores: r.serverCpuCores, mainThreadBusy: r.mainThreadBusy, eventsPerServerCore: r.eventsPerServerCore, layout: r.layout, linksApplied: r.linksApplied, uniqueUsers: r.uniqueUsers, users: r.users, load1: r.load1, checks: r.checks,
    });
    console.log(JSON.stringify(Object.fromEntries(results.map((r) => [r.store, pick(r)]))));
  }
  if (results.some((r) => r.checks !== 'ok')) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
