/**
 * `npm run bench:flags [-- --json]`: feature-flag serving speed against its peers, one run.
 *
 * Servers, each in its own process pinned to core 0 (`taskset -c 0`, once set up); the load
 * generators, this process (autocannon) and scripts/bench-open-loop.mjs (the open-loop phases),
 * pinned to core 1 (`taskset -c 1`). All of them answer for the same 100 flags of 10
 * rules each (8 override lists of 5 ids with a forced variant, a 10% rollout forcing variant b, a
 * 50% rollout over 3 weighted variants), for a distinct user id per request (user-0 … user-9999):
 *
 * - ours: POST /flags/evaluate of the service (all 100 flags), on a fresh PostgreSQL database
 *   (DATABASE_URL when set instead; BENCH_OURS_EMBEDDED=1: the embedded SQLite store);
 * - unleash: unleash-server's frontend API, GET /api/frontend?userId=… with a frontend token, on a
 *   fresh database of the same PostgreSQL; the flags are created through its admin API as
 *   flexibleRollout strategies (userId IN constraints for the override lists) with variants;
 * - unleash-proxy: @unleash/proxy, Unleash's dedicated remote-evaluation server, GET /proxy?userId=…,
 *   fed by that unleash-server;
 * - floor: a bare node:http server answering a precomputed body, ours for user-0 (same byte size).
 *
 * unleash-server and @unleash/proxy are not dependencies of the project: they are installed on the
 * first run into .bench-peers/ (ignored) and run by scripts/bench-flags-peers.mjs. Before the load,
 * the script checks that Unleash's two servers enable, for the same ids, exactly the flags that
 * unleash-client enables in process from the same definitions.
 *
 * Phases per server, one server at a time (the others idle): a warm-up, the saturated throughput
 * (autocannon, BENCH_CONNECTIONS fixed connections, default 10), then open-loop uniform loads at
 * BENCH_RATE req/s (default 1000) and at a rate every server sustains (BENCH_LOW_RATE, default half
 * the lowest saturated throughput, at most half BENCH_RATE, rounded down to 50). Per phase: req/s,
 * p50/p99 latency, and CPU ms per request of the server's processes (utime+stime from /proc/<pid>/stat
 * over the phase, divided by the requests answered). Before the load, each server's CPU with no load
 * (ms per second over 5 s): at a low rate it is a large part of the CPU per request.
 *
 * Then (BENCH_LOCAL=0 skips it) local evaluations per second in this process: the Node SDK from
 * the polled definitions, @growthbook/growthbook and unleash-client on equivalent definitions.
 *
 * Env: BENCH_DURATION (seconds per phase, default 10), BENCH_RATE, BENCH_LOW_RATE, BENCH_CONNECTIONS,
 * BENCH_PG_URL (PostgreSQL server for the fresh databases; default TEST_DATABASE_URL, else
 * postgres://postgres@127.0.0.1:5432/postgres), BENCH_EVALS (local evaluations per library and round,
 * default 300000), BENCH_LOCAL. `--json` prints one final JSON line on stdout (the rest on stderr).
 */
import { once } from 'node:events';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { createRequire } from 'node:module';
import pg from 'pg';
import { GrowthBookClient } from '@growthbook/growthbook';
import { Unleash } from 'unleash-client';
import { Tally } from '../apps/sdk/src/index.js';
import { ROOT, benchApi, cpuMs, processTree, startBenchService } from './bench-support.js';

// autocannon ships no type declarations.
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<any>;
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Math.min(3, DURATION);
const EVALS = Number(process.env.BENCH_EVALS ?? 300_000);
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const LOCAL = process.env.BENCH_LOCAL !== '0';
/** BENCH_FREEZE=0 leaves the servers not under load running during another's phase. */
const FREEZE = process.env.BENCH_FREEZE !== '0';
const JSON_OUT = process.argv.includes('--json');
const FLAGS = 100;
const IDS = 10_000;
const PEERS_DIR = path.join(ROOT, '.bench-peers');
const PEERS_SCRIPT = path.join(ROOT, 'scripts/bench-flags-peers.mjs');
const PEER_PACKAGES = ['unleash-server@7', '@unleash/proxy@1'];
const PG_URL = process.env.BENCH_PG_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const UNLEASH_ADMIN = '*:*.bench-admin-secret';
const UNLEASH_BACKEND = 'default:development.bench-backend-secret';
const UNLEASH_FRONTEND = 'default:development.bench-frontend-secret';
const PROXY_KEY = 'bench-proxy-key';
/** Human-readable output: stdout, or stderr with --json (stdout then holds the JSON line only). */
const say = (...args: unknown[]) => (JSON_OUT ? console.error : console.log)(...args);
interface Variant { key: string; rolloutPct: number; payload: unknown }
interface Rule { rolloutPct: number; distinctIds?: string[]; variant?: string }

function flagSpecs() {
  return Array.from({ length: FLAGS }, (_, i) => {
    const key = `bench-flag-${i}`;
    const variants: Variant[] = [
      { key: 'a', rolloutPct: 34, payload: { color: 'red', i } },
      { key: 'b', rolloutPct: 33, payload: { color: 'green', i } },
      { key: 'c', rolloutPct: 33, payload: { color: 'blue', i } },
    ];
    const rules: Rule[] = [];
    for (let r = 0; r < 8; r++) rules.push({ rolloutPct: 100, distinctIds: Array.from({ length: 5 }, (_, k) => `vip-${i}-${r}-${k}`), variant: variants[r % 3].key });
    rules.push({ rolloutPct: 10, variant: 'b' });
    rules.push({ rolloutPct: 50 });
    return { key, name: key, variants, rules };
  });
}

// ---------------------------------------------------------------------------------------------
// processes: pinning, CPU time, peers

const TASKSET = cpus().length >= 2 && spawnSync('taskset', ['-V']).status === 0;

/**
 * Pins every thread of `pid` and of its descendants to `core` (threads created later inherit it);
 * the servers start unpinned so that their setup (migrations, creating the flags) is quicker.
 * Returns false unless /proc shows every thread on that core alone.
 */
function pin(pid: number, core: number): boolean {
  if (!TASKSET) return false;
  let ok = true;
  for (const p of processTree(pid)) {
    spawnSync('taskset', ['-a', '-p', '-c', String(core), String(p)], { stdio: 'ignore' });
    for (const tid of readdirSync(`/proc/${p}/task`)) {
      const status = readFileSync(`/proc/${p}/task/${tid}/status`, 'utf8');
      if (/Cpus_allowed_list:\s*(\S+)/.exec(status)?.[1] !== String(core)) ok = false;
    }
  }
  return ok;
}
function peerVersions() {
  const version = (name: string) => {
    try { return JSON.parse(readFileSync(path.join(PEERS_DIR, 'node_modules', name, 'package.json'), 'utf8')).version as string; } catch { return undefined; }
  };
  return { 'unleash-server': version('unleash-server'), '@unleash/proxy': version('@unleash/proxy') };
}

/** Installs the peers into .bench-peers/ unless they are there (they are not project dependencies). */
function ensurePeers() {
  const v = peerVersions();
  if (v['unleash-server'] && v['@unleash/proxy']) return v;
  say(`installing ${PEER_PACKAGES.join(' ')} into .bench-peers/ (first run only)`);
  const r = spawnSync('npm', ['install', '--prefix', PEERS_DIR, '--no-audit', '--no-fund', ...PEER_PACKAGES], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error('npm install of the peers failed');
  return peerVersions();
}

/** Runs a mode of scripts/bench-flags-peers.mjs (plain node); resolves with its URL. */
async function startPeer(mode: string, env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [PEERS_SCRIPT, mode], {
    cwd: ROOT,
    env: { ...process.env, ...env, BENCH_PEERS_DIR: PEERS_DIR, NODE_NO_WARNINGS: '1', NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`${mode} exited (${code}): ${out}`)));
  });
  return { url, child };
}

async function stopChild(child: ChildProcess | undefined) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await once(child, 'exit').catch(() => undefined);
  clearTimeout(timer);
}

async function withPg<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try { return await fn(client); } finally { await client.end(); }
}

function databaseUrl(name: string) {
  const u = new URL(PG_URL);
  u.pathname = '/' + name;
  return u.toString();
}

// ---------------------------------------------------------------------------------------------
// the servers under load

interface Target {
  name: string;
  label: string;
  url: string;
  pid: number;
  method: 'GET' | 'POST';
  path: (id: string) => string;
  headers: Record<string, string>;
  body?: (id: string) => string;
}

function oursTarget(name: string, label: string, url: string, pid: number, token: string): Target {
  return {
    name, label, url, pid, method: 'POST', path: () => '/flags/evaluate',
    headers: { 'content-type': 'application/json', 'x-service-token': token },
    body: (id) => JSON.stringify({ distinct_id: id }),
  };
}

let idCounter = 0;
const nextId = () => `user-${idCounter++ % IDS}`;

interface Phase {
  rps: number;
  requests: number;
  p50: number;
  p99: number;
  errors: number;
  cpuMsPerRequest: number;
  /** CPU ms the other (idle) servers spent during the phase. */
  othersCpuMs: number;
  /** Share of one core this process (the load generator) was busy. */
  generatorBusy: number;
  sustained?: boolean;
  /** Open loop: requests still unanswered at the cutoff (counted in errors). */
  unanswered?: number;
  /** Open loop: p50 / p99 of how late the generator sent the requests it did not have to queue. */
  lag50?: number;
  lag99?: number;
  /** Open loop: p99 latency from the moment the request was written (without the generator's own lateness). */
  p99FromSend?: number;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * SIGSTOP (or SIGCONT) every process of the servers not under load: they share core 0 with the one
 * measured, and their own timers (Unleash's metrics jobs, the proxy's polling) took up to 1 s of
 * that core in a 10 s phase, which landed in the measured server's tail.
 */
function freeze(targets: Target[], signal: 'SIGSTOP' | 'SIGCONT') {
  if (!FREEZE) return;
  for (const t of targets) for (const p of processTree(t.pid)) {
    try { process.kill(p, signal); } catch { /* exited */ }
  }
}

/** Waits until a server is done with what it still had queued (under 5% of a core over 0.5 s; at most 30 s). */
async function settle(target: Target) {
  for (let i = 0; i < 60; i++) {
    const before = cpuMs(target.pid);
    await new Promise((r) => setTimeout(r, 500));
    if (cpuMs(target.pid) - before < 25) return;
  }
}

/** One phase's load: what it measured, before the CPU figures `measured` adds. */
type PhaseRun = () => Promise<Omit<Phase, 'cpuMsPerRequest' | 'othersCpuMs' | 'generatorBusy'> & { generatorBusy?: number }>;

async function measured(target: Target, all: Target[], run: PhaseRun): Promise<Phase> {
  const others = all.filter((t) => t !== target);
  freeze(others, 'SIGSTOP');
  try {
    return await measuredAlone(target, others, run);
  } finally {
    freeze(others, 'SIGCONT');
    await settle(target);
  }
}

async function measuredAlone(target: Target, others: Target[], run: PhaseRun): Promise<Phase> {
  const before = cpuMs(target.pid);
  const othersBefore = others.reduce((s, t) => s + cpuMs(t.pid), 0);
  const own = process.cpuUsage();
  const t0 = performance.now();
  const r = await run();
  const wall = performance.now() - t0;
  const ownUsed = process.cpuUsage(own);
  const used = cpuMs(target.pid) - before;
  return {
    ...r,
    cpuMsPerRequest: Math.round((used / Math.max(1, r.requests)) * 1000) / 1000,
    othersCpuMs: Math.round(others.reduce((s, t) => s + cpuMs(t.pid), 0) - othersBefore),
    // the open loop's generator is a process of its own, which measures itself
    generatorBusy: r.generatorBusy ?? round2((ownUsed.user + ownUsed.system) / 1000 / wall),
  };
}

async function cannon(target: Target, seconds: number) {
  const result = await autocannon({
    url: target.url,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [{
      method: target.method,
      headers: target.headers,
      setupRequest: (req: any) => {
        const id = nextId();
        return { ...req, path: target.path(id), ...(target.body ? { body: target.body(id) } : {}) };
      },
    }],
  });
  return {
    rps: Math.round(result.requests.average),
    requests: result.requests.total as number,
    p50: result.latency.p50 as number,
    p99: result.latency.p99 as number,
    errors: (result.errors + result.non2xx) as number,
  };
}

/**
 * Open-loop load at a uniform rate (autocannon's overallRate sends each second's quota as a burst
 * and corrects for coordinated omission with a 1 ms interval, which measures queueing rather than
 * latency at that rate), from scripts/bench-open-loop.mjs in a process of its own on the load
 * generator's core (what it does is described there). Latency runs from the scheduled send time to
 * the last byte; the p99 from the write of each request is reported too.
 */
async function uniformLoad(target: Target, ratePerSecond: number, seconds: number) {
  const config = {
    url: target.url, method: target.method, headers: target.headers, path: target.path('%ID%'), body: target.body?.('%ID%'),
    rate: ratePerSecond, seconds, idStart: idCounter, ids: IDS,
  };
  const node = [process.execPath, path.join(ROOT, 'scripts/bench-open-loop.mjs'), JSON.stringify(config)];
  const [cmd, ...args] = TASKSET ? ['taskset', '-c', '1', ...node] : node;
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => { out += d; });
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`open-loop generator exited with ${code}: ${out}`);
  const r = JSON.parse(out.trim().split('\n').pop()!) as Omit<Phase, 'cpuMsPerRequest' | 'othersCpuMs'> & { sent: number; busy: number };
  idCounter += r.sent;
  const { sent: _sent, busy, ...phase } = r;
  return { ...phase, generatorBusy: busy };
}
/** GrowthBook features equivalent to flagSpecs(): force rules for override lists, a force rollout, an experiment. */
function growthbookFeatures() {
  const features: Record<string, unknown> = {};
  for (const f of flagSpecs()) {
    const payloadOf = (k: string) => f.variants.find((v) => v.key === k)!.payload;
    features[f.key] = {
      defaultValue: null,
      rules: [
        ...f.rules.slice(0, 8).map((r) => ({ condition: { id: { $in: r.distinctIds } }, force: payloadOf(r.variant!) })),
        { force: payloadOf('b'), coverage: 0.1, hashAttribute: 'id' },
        { key: f.key, variations: f.variants.map((v) => v.payload), weights: f.variants.map((v) => v.rolloutPct / 100), coverage: 0.5, hashAttribute: 'id' },
      ],
    };
  }
  return features;
}

/**
 * Unleash toggles equivalent to flagSpecs(), in strategy order: a 100% flexibleRollout with a
 * `userId IN` constraint per override list (the userWithId strategy is gone from unleash-server 7),
 * then flexible rollouts of 10% and 50% with the variants. The same definitions go to
 * unleash-server's admin API and to the in-process unleash-client.
 */
function unleashFeatures() {
  return flagSpecs().map((f) => {
    // 'fix' weights are kept as given; unleash-server spreads the rest evenly over the 'variable' ones
    const variant = (v: Variant, weight: number, weightType = 'variable') => ({ name: v.key, weight, weightType, stickiness: 'userId', payload: { type: 'json', value: JSON.stringify(v.payload) } });
    const rollout = (pct: number, groupId: string) => ({ rollout: String(pct), stickiness: 'userId', groupId });
    return {
      name: f.key,
      enabled: true,
      type: 'release',
      project: 'default',
      stale: false,
      impressionData: false,
      variants: [],
      strategies: [
        ...f.rules.slice(0, 8).map((r) => ({
          name: 'flexibleRollout',
          parameters: rollout(100, f.key),
          constraints: [{ contextName: 'userId', operator: 'IN', values: r.distinctIds!, inverted: false, caseInsensitive: false }],
          variants: [variant(f.variants.find((v) => v.key === r.variant)!, 1000)],
        })),
        { name: 'flexibleRollout', parameters: rollout(10, `${f.key}-10`), constraints: [], variants: [variant(f.variants[1], 1000)] },
        { name: 'flexibleRollout', parameters: rollout(50, f.key), constraints: [], variants: f.variants.map((v, i) => variant(v, v.rolloutPct * 10, i < f.variants.length - 1 ? 'fix' : 'variable')) },
      ],
    };
  });
}

async function startUnleash(): Promise<{ unleash: Unleash; close: () => Promise<void> }> {
  const features = unleashFeatures();
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url?.startsWith('/api/client/features')) res.end(JSON.stringify({ version: 2, features }));
    else res.end('{}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const unleash = new Unleash({ url: `http://127.0.0.1:${port}/api/`, appName: 'bench', disableMetrics: true, refreshInterval: 3_600_000, skipInstanceCountWarning: true });
  unleash.on('error', () => undefined);
  await once(unleash, 'synchronized');
  return { unleash, close: async () => { unleash.destroy(); await new Promise<void>((r) => server.close(() => r())); } };
}

/** Evaluations per second of `fn` over rotating ids and flag keys (best of 3 rounds after warm-up). */
function rate(fn: (key: string, id: string) => unknown): { perSecond: number; enabled: number } {
  const keys = flagSpecs().map((f) => f.key);
  const ids = Array.from({ length: 1000 }, (_, i) => `user-${i}`);
  let best = 0;
  let enabled = 0;
  for (let round = 0; round < 4; round++) {
    const n = round === 0 ? Math.min(EVALS, 20_000) : EVALS;
    let on = 0;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) if (fn(keys[i % FLAGS], ids[(i * 7) % 1000])) on++;
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    if (round > 0) {
      best = Math.max(best, n / seconds);
      enabled = on / n;
    }
  }
  return { perSecond: Math.round(best), enabled: Math.round(enabled * 1000) / 10 };
}

/**
 * Creates the unleashFeatures() on unleash-server through its admin API, 8 flags at a time (its
 * batch import refuses admin tokens): the flag, its strategies in order, then enabled in `development`.
 */
async function createUnleashFlags(url: string) {
  const call = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(url + p, { method, headers: { authorization: UNLEASH_ADMIN, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`unleash-server ${method} ${p}: ${res.status} ${text}`);
  };
  const features = unleashFeatures();
  let next = 0;
  const worker = async () => {
    while (next < features.length) {
      const f = features[next++];
      const env = `/api/admin/projects/default/features/${f.name}/environments/development`;
      await call('POST', '/api/admin/projects/default/features', { name: f.name, type: 'release' });
      for (const [sortOrder, s] of f.strategies.entries()) await call('POST', `${env}/strategies`, { ...s, sortOrder });
      await call('POST', `${env}/on`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

/** One request: its body size and the `flag:variant` pairs it enables. */
async function probe(t: Target, id: string) {
  const res = await fetch(t.url + t.path(id), { method: t.method, headers: t.headers, body: t.body?.(id) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${t.name}: ${res.status} ${text.slice(0, 300)}`);
  const json = JSON.parse(text);
  const on: string[] = json.flags
    ? Object.entries(json.flags as Record<string, { enabled: boolean; variant?: string | null }>).filter(([, r]) => r.enabled).map(([k, r]) => `${k}:${r.variant ?? ''}`)
    : (json.toggles as { name: string; variant: { name: string } }[]).map((x) => `${x.name}:${x.variant.name}`);
  return { bytes: Buffer.byteLength(text), on: on.sort() };
}

/** Ids checked before the load: ordinary ones and some on override lists. */
const CHECK_IDS = [...Array.from({ length: 40 }, (_, i) => `user-${i * 97}`), 'vip-3-2-1', 'vip-42-0-4', 'vip-99-7-0'];

/** Waits until `t` enables, for every CHECK_IDS id, exactly the flags and variants unleash-client does. */
async function waitAgrees(t: Target, unleash: Unleash, timeoutMs = 60_000) {
  const keys = flagSpecs().map((f) => f.key);
  const expected = (id: string) => keys.filter((k) => unleash.isEnabled(k, { userId: id })).map((k) => `${k}:${unleash.getVariant(k, { userId: id }).name}`).sort();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let mismatch = '';
    for (const id of CHECK_IDS) {
      const got = await probe(t, id).then((p) => p.on.join(' '), (err: Error) => err.message); // 503 until ready
      const want = expected(id).join(' ');
      if (got !== want) { mismatch = `${id}: ${t.name} enables [${got}], unleash-client [${want}]`; break; }
    }
    if (!mismatch) return;
    if (Date.now() > deadline) throw new Error(`${t.name} does not evaluate like unleash-client: ${mismatch}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

function table(targets: Target[], results: Record<string, Record<string, Phase>>, phases: [string, string][], sizes: Record<string, { bytes: number; on: number }>) {
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  const lines: string[] = [];
  lines.push(`${''.padEnd(36)}${phases.map(([, title]) => title.padEnd(38)).join('')}`);
  lines.push(`${'server'.padEnd(36)}${phases.map(() => `${pad('req/s', 7)}${pad('p50 ms', 8)}${pad('p99 ms', 8)}${pad('CPU ms/req', 11)}    `).join('')}${pad('bytes', 7)}${pad('flags on', 9)}`);
  for (const t of targets) {
    const cells = phases.map(([key]) => {
      const p = results[t.name][key];
      const flag = p.sustained === false ? '*' : p.errors ? '!' : ' ';
      const ms = (x: number) => (x >= 100 ? String(Math.round(x)) : String(x));
      return `${pad(p.rps, 7)}${pad(ms(p.p50), 8)}${pad(ms(p.p99), 8)}${pad(p.cpuMsPerRequest.toFixed(3), 11)}${flag}   `;
    });
    lines.push(`${t.label.padEnd(36)}${cells.join('')}${pad(sizes[t.name].bytes, 7)}${pad(sizes[t.name].on, 9)}`);
  }
  return lines.join('\n');
}

async function main() {
  const started = performance.now();
  const versions = ensurePeers();
  const suffix = `${process.pid}_${Date.now() % 1_000_000}`;
  const oursDb = process.env.DATABASE_URL || process.env.BENCH_OURS_EMBEDDED === '1' ? undefined : `bench_flags_${suffix}`;
  const unleashDb = `bench_flags_unleash_${suffix}`;
  await withPg(async (c) => {
    if (oursDb) await c.query(`CREATE DATABASE ${oursDb}`);
    await c.query(`CREATE DATABASE ${unleashDb}`);
  });
  const children: ChildProcess[] = [];
  let dataDir: string | undefined;
  let local: Awaited<ReturnType<typeof startUnleash>> | undefined;
  try {
    const svc = await startBenchService({ name: 'bench-flags', role: 'api', nodeArgs: (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
      // the /flags/evaluate token bucket (2,000/s per project by default) out of the way
      env: { FLAGS_EVALUATE_RATE_PER_SECOND: '1000000000', FLAGS_EVALUATE_RATE_BURST: '1000000000', ...(oursDb ? { DATABASE_URL: databaseUrl(oursDb) } : {}) },
    });
    children.push(svc.child);
    dataDir = svc.dataDir;
    const org = await benchApi(svc.url, 'POST', '/admin/orgs', { name: 'bench' });
    const project = await benchApi(svc.url, 'POST', `/admin/orgs/${org.id}/projects`, { name: 'bench' });
    for (const f of flagSpecs()) await benchApi(svc.url, 'POST', '/api/flags', { projectId: project.id, ...f });
    const { secret } = await benchApi(svc.url, 'POST', `/api/projects/${project.id}/flag-secret`);
    const ours = oursTarget('ours', 'this service POST /flags/evaluate', svc.url, svc.child.pid!, project.token);
    const oursBody = await (await fetch(ours.url + '/flags/evaluate', { method: 'POST', headers: ours.headers, body: ours.body!('user-0') })).text();
    const oursBytes = Buffer.byteLength(oursBody);

    const floorPeer = await startPeer('floor', { BENCH_FLOOR_BODY: oursBody });
    children.push(floorPeer.child);
    const floor = oursTarget('floor', `floor: bare node:http, ${oursBytes} B`, floorPeer.url, floorPeer.child.pid!, project.token);

    local = await startUnleash();
    let t = performance.now();
    const since = () => `${((performance.now() - t) / 1000).toFixed(1)} s`;
    const unleashPeer = await startPeer('unleash', { BENCH_UNLEASH_DB: databaseUrl(unleashDb), BENCH_UNLEASH_TOKENS: [UNLEASH_ADMIN, UNLEASH_BACKEND, UNLEASH_FRONTEND].join(',') });
    children.push(unleashPeer.child);
    say(`unleash-server up (fresh database, migrations) in ${since()}`);
    t = performance.now();
    await createUnleashFlags(unleashPeer.url);
    say(`${FLAGS} flags created through its admin API in ${since()}`);
    t = performance.now();
    const unleash: Target = {
      name: 'unleash', label: 'unleash-server GET /api/frontend', url: unleashPeer.url, pid: unleashPeer.child.pid!,
      method: 'GET', path: (id) => `/api/frontend?userId=${id}`, headers: { authorization: UNLEASH_FRONTEND },
    };
    await waitAgrees(unleash, local.unleash);
    const proxyPeer = await startPeer('proxy', { BENCH_UNLEASH_URL: unleashPeer.url, BENCH_UNLEASH_BACKEND_TOKEN: UNLEASH_BACKEND, BENCH_PROXY_KEY: PROXY_KEY });
    children.push(proxyPeer.child);
    const proxy: Target = {
      name: 'proxy', label: '@unleash/proxy GET /proxy', url: proxyPeer.url, pid: proxyPeer.child.pid!,
      method: 'GET', path: (id) => `/proxy?userId=${id}`, headers: { authorization: PROXY_KEY },
    };
    await waitAgrees(proxy, local.unleash);
    say(`unleash-server and @unleash/proxy evaluate like unleash-client for ${CHECK_IDS.length} ids (${since()} after the flags were created)`);

    const targets = [ours, unleash, proxy, floor];
    const pinned = TASKSET && targets.every((x) => pin(x.pid, 0)) && pin(process.pid, 1);
    const sizes: Record<string, { bytes: number; on: number }> = {};
    for (const t of targets) {
      let bytes = 0;
      let on = 0;
      for (let i = 0; i < 200; i++) {
        const p = await probe(t, `user-${i * 37}`);
        bytes += p.bytes;
        on += p.on.length;
      }
      sizes[t.name] = { bytes: Math.round(bytes / 200), on: Math.round(on / 2) / 100 };
    }
    const stores = `${process.env.DATABASE_URL ? 'DATABASE_URL' : oursDb ? `PostgreSQL ${oursDb}` : 'SQLite'} + ${process.env.CLICKHOUSE_URL ? 'ClickHouse' : 'DuckDB'}`;
    say(`${FLAGS} flags x 10 rules, ids user-0..user-${IDS - 1} rotating per request; node ${process.version}; ${cpus().length} CPUs (${cpus()[0]?.model.trim()}); load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    say(pinned ? 'servers pinned to core 0 (taskset -c 0), load generator to core 1 (taskset -c 1)'
      : TASKSET ? 'pinning with taskset did not take on every thread: processes NOT pinned, servers and load generator share the cores'
        : 'taskset unavailable (or a single CPU): processes NOT pinned, servers and load generator share the cores');
    say(FREEZE ? 'during each phase the servers not under load are stopped (SIGSTOP) and resumed after it; each phase ends when its server is idle again' : 'the servers not under load keep running during each phase (BENCH_FREEZE=0)');
    say(`ours: ${svc.url} [${stores}]; unleash-server ${versions['unleash-server']} on PostgreSQL (${unleashDb}); @unleash/proxy ${versions['@unleash/proxy']}; ${DURATION} s per phase (+${WARMUP} s warm-up)`);

    // background CPU of each server with no load (timers, caches, pollers): part of every phase's CPU
    const idleBefore = targets.map((x) => cpuMs(x.pid));
    const idleStart = performance.now();
    await new Promise((r) => setTimeout(r, Math.min(5, DURATION) * 1000));
    const idleSeconds = (performance.now() - idleStart) / 1000;
    const idleCpu: Record<string, number> = Object.fromEntries(targets.map((x, i) => [x.name, Math.round((cpuMs(x.pid) - idleBefore[i]) / idleSeconds)]));
    say(`  idle CPU ms per second: ${targets.map((x) => `${x.name} ${idleCpu[x.name]}`).join(', ')}`);

    const results: Record<string, Record<string, Phase>> = Object.fromEntries(targets.map((t) => [t.name, {}]));
    for (const t of targets) {
      await cannon(t, WARMUP);
      const r = await measured(t, targets, () => cannon(t, DURATION));
      results[t.name].saturated = r;
      say(`  saturated  ${t.label}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.cpuMsPerRequest} CPU ms/req, errors ${r.errors}, generator busy ${Math.round(r.generatorBusy * 100)}%`);
    }
    const lowest = Math.min(...targets.map((t) => results[t.name].saturated.rps));
    const LOW_RATE = Number(process.env.BENCH_LOW_RATE ?? Math.max(50, Math.floor(Math.min(lowest / 2, RATE / 2) / 50) * 50));
    for (const [key, rate] of [['open', RATE], ['openLow', LOW_RATE]] as const) {
      for (const t of targets) {
        // unmeasured, like the saturated phases' warm-up: a server resumed after the others' phases
        // fires its overdue timers and V8's memory reducer (a major GC after a quiet spell) first
        await uniformLoad(t, rate, WARMUP);
        const r = await measured(t, targets, () => uniformLoad(t, rate, DURATION));
        results[t.name][key] = r;
        say(`  ${String(rate).padStart(5)} req/s ${t.label}: ${r.rps} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.cpuMsPerRequest} CPU ms/req, errors ${r.errors}${r.unanswered ? ` (${r.unanswered} unanswered at the cutoff)` : ''}${r.sustained ? '' : ' (not sustained)'}, generator send delay p50 ${r.lag50} ms, p99 ${r.lag99} ms; p99 from the send ${r.p99FromSend} ms`);
      }
    }

    let localResult: Record<string, { perSecond: number; enabled: number }> | undefined;
    if (LOCAL) {
      const sdk = new Tally({ token: project.token, host: svc.url, flagSecret: secret, flushOnExit: false });
      await sdk.ready();
      if (sdk.flags.definitionList().length !== FLAGS) throw new Error('SDK did not load the definitions');
      const gb = new GrowthBookClient().initSync({ payload: { features: growthbookFeatures() as any } });
      const u = local.unleash;
      localResult = {
        sdk: rate((key, id) => sdk.flags.evaluateLocal(key, id)!.enabled),
        growthbook: rate((key, id) => gb.evalFeature(key, { attributes: { id } }).on),
        unleashClient: rate((key, id) => u.getVariant(key, { userId: id }).enabled),
      };
      await sdk.shutdown();
    }

    const sat = (n: string) => results[n].saturated.rps;
    const fastestPeer = sat('unleash') >= sat('proxy') ? 'unleash' : 'proxy';
    const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    const ratios = {
      saturatedOursOverFastestPeer: ratio(sat('ours'), sat(fastestPeer)),
      fastestPeer,
      saturatedOursOverFloor: ratio(sat('ours'), sat('floor')),
      saturatedOursOver: { unleash: ratio(sat('ours'), sat('unleash')), proxy: ratio(sat('ours'), sat('proxy')), floor: ratio(sat('ours'), sat('floor')) },
      cpuPerRequestAtLowRateOursOver: Object.fromEntries(['unleash', 'proxy', 'floor'].map((n) => [n, ratio(results.ours.openLow.cpuMsPerRequest, results[n].openLow.cpuMsPerRequest)])),
    };
    const totalSeconds = Math.round((performance.now() - started) / 1000);

    say('');
    say(table(targets, results, [['saturated', `saturated, ${CONNECTIONS} connections`], ['open', `open loop ${RATE.toLocaleString('en')} req/s`], ['openLow', `open loop ${LOW_RATE.toLocaleString('en')} req/s`]], sizes));
    say(`* not sustained (below 97% of the offered rate, errors or unanswered, or p99 over 250 ms: the backlog is in the latency); ! errors`);
    say(`idle CPU ms per second (no load): ${targets.map((x) => `${x.name} ${idleCpu[x.name]}`).join(', ')}; at a low rate it weighs on CPU ms/req`);
    say(`bytes: mean response body; flags on: mean flags enabled per response (Unleash answers only the enabled ones, ours all ${FLAGS})`);
    say(`saturated throughput: ours / fastest peer (${fastestPeer}) = ${ratios.saturatedOursOverFastestPeer}; ours / floor = ${ratios.saturatedOursOverFloor}`);
    say(`CPU per request at ${LOW_RATE} req/s, ours / peer: unleash ${ratios.cpuPerRequestAtLowRateOursOver.unleash}, proxy ${ratios.cpuPerRequestAtLowRateOursOver.proxy}, floor ${ratios.cpuPerRequestAtLowRateOursOver.floor}`);
    if (localResult) {
      say(`\nlocal evaluation in process (one flag for one id per evaluation; best of 3 rounds of ${EVALS.toLocaleString('en')})`);
      say(`  @tally-analytics/node (this SDK): ${localResult.sdk.perSecond.toLocaleString('en')} evals/s (enabled ${localResult.sdk.enabled}%)`);
      say(`  @growthbook/growthbook evalFeature: ${localResult.growthbook.perSecond.toLocaleString('en')} evals/s (on ${localResult.growthbook.enabled}%)`);
      say(`  unleash-client getVariant: ${localResult.unleashClient.perSecond.toLocaleString('en')} evals/s (variant ${localResult.unleashClient.enabled}%)`);
    }
    say(`\ntotal ${totalSeconds} s`);
    if (JSON_OUT) {
      console.log(JSON.stringify({
        bench: 'flags', date: new Date().toISOString(), node: process.version, cpus: cpus().length, pinned, othersFrozen: FREEZE,
        durationSeconds: DURATION, connections: CONNECTIONS, rate: RATE, lowRate: LOW_RATE, flags: FLAGS, versions,
        servers: Object.fromEntries(targets.map((t) => [t.name, { label: t.label, ...sizes[t.name], idleCpuMsPerSecond: idleCpu[t.name], ...results[t.name] }])),
        ratios, local: localResult ?? null, totalSeconds,
      }));
    }
  } finally {
    for (const c of children.reverse()) await stopChild(c);
    await local?.close();
    await withPg(async (c) => {
      for (const db of [oursDb, unleashDb]) if (db) await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
    }).catch((err) => console.error('dropping the bench databases:', err));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
