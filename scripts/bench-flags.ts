/**
 * `npm run bench:flags`: feature-flag speed, one run.
 *
 * 1. Starts the service in a child process (embedded stores unless DATABASE_URL / CLICKHOUSE_URL
 *    are set), creates a project with 100 flags of 10 rules each (8 override lists of 5 ids with a
 *    forced variant, a 10% rollout forcing variant b, a 50% rollout over 3 weighted variants).
 * 2. Remote, on loopback against POST /flags/evaluate (all 100 flags, a rotating distinct_id
 *    per request): max throughput with autocannon (10 connections), then an open-loop uniform
 *    1,000 req/s; p50 / p99 latency of each.
 * 3. Local: evaluations per second of the Node SDK (in process, from the polled definitions),
 *    of @growthbook/growthbook and of unleash-client, each evaluating the equivalent 100 flags for
 *    the same rotating ids in the same process.
 *
 * Env: BENCH_DURATION (seconds per remote phase, default 10), BENCH_RATE (requests per second of
 * the uniform phase, default 1000), BENCH_EVALS (local evaluations per library and round, default 300000).
 */
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { createRequire } from 'node:module';
import { GrowthBookClient } from '@growthbook/growthbook';
import { Unleash } from 'unleash-client';
import { Tally } from '../apps/sdk/src/index.js';
import { benchApi, startBenchService } from './bench-support.js';

// autocannon ships no type declarations.
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<any>;
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const EVALS = Number(process.env.BENCH_EVALS ?? 300_000);
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const FLAGS = 100;

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

function startServer() {
  return startBenchService({ name: 'bench-flags', role: 'api' });
}

const api = benchApi;

async function cannon(url: string, token: string, opts: { connections: number; overallRate?: number }) {
  let n = 0;
  const result = await autocannon({
    url: url + '/flags/evaluate',
    connections: opts.connections,
    duration: DURATION,
    ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
    requests: [{
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-token': token },
      setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ distinct_id: `user-${n++ % 10000}` }) }),
    }],
  });
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    total: result.requests.total,
  };
}

/**
 * Open-loop load at a uniform rate (autocannon's overallRate sends each second's quota as a burst
 * and corrects for coordinated omission with a 1 ms interval, which measures queueing rather than
 * latency at that rate). Every 2 ms the requests that are due go out, each on an idle keep-alive
 * socket (a new one when all are busy); latency runs from the scheduled send time to the last
 * byte. The client is raw HTTP/1.1 over net sockets so that it costs the server little CPU.
 */
async function uniformLoad(url: string, token: string, ratePerSecond: number, seconds: number) {
  const target = new URL(url);
  const idle: net.Socket[] = [];
  const all: net.Socket[] = [];
  const latencies: number[] = [];
  /** How late the generator itself sent each request (its own scheduling delay on a busy machine). */
  const sendLag: number[] = [];
  let errors = 0;
  let n = 0;
  let pending = 0;
  const request = (id: string) => {
    const body = JSON.stringify({ distinct_id: id });
    return `POST /flags/evaluate HTTP/1.1\r\nhost: ${target.host}\r\ncontent-type: application/json\r\nx-service-token: ${token}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };
  const waiting = new Map<net.Socket, { scheduled: number; buf: Buffer }>();
  const onData = (sock: net.Socket, chunk: Buffer) => {
    const w = waiting.get(sock);
    if (!w) return;
    w.buf = w.buf.length ? Buffer.concat([w.buf, chunk]) : chunk;
    const headEnd = w.buf.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const head = w.buf.subarray(0, headEnd).toString('latin1');
    const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
    if (w.buf.length < headEnd + 4 + len) return;
    if (!head.startsWith('HTTP/1.1 200')) errors++;
    latencies.push(performance.now() - w.scheduled);
    waiting.delete(sock);
    pending--;
    idle.push(sock);
  };
  const socket = () =>
    new Promise<net.Socket>((resolve) => {
      const sock = net.connect(Number(target.port), target.hostname, () => resolve(sock));
      sock.setNoDelay(true);
      sock.on('data', (c) => onData(sock, c));
      sock.on('error', () => { if (waiting.delete(sock)) { errors++; pending--; } });
      all.push(sock);
    });
  for (let i = 0; i < 32; i++) idle.push(await socket());
  const send = async (scheduled: number) => {
    pending++;
    const sock = idle.pop() ?? (await socket());
    waiting.set(sock, { scheduled, buf: Buffer.alloc(0) });
    sendLag.push(performance.now() - scheduled);
    sock.write(request(`user-${n++ % 10000}`));
  };
  const start = performance.now();
  const total = ratePerSecond * seconds;
  let sent = 0;
  await new Promise<void>((done) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * ratePerSecond));
      while (sent < due) void send(start + (sent++ * 1000) / ratePerSecond);
      if (sent >= total) done();
      else setTimeout(tick, 2);
    };
    tick();
  });
  while (pending > 0) await new Promise((r) => setTimeout(r, 5));
  const elapsed = (performance.now() - start) / 1000;
  for (const s of all) s.destroy();
  const quantile = (xs: number[], p: number) => {
    xs.sort((a, b) => a - b);
    return Math.round(xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] * 100) / 100;
  };
  return {
    rps: Math.round(total / elapsed), p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: quantile(latencies, 1),
    lag50: quantile(sendLag, 0.5), lag99: quantile(sendLag, 0.99), errors,
  };
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

/** Unleash toggles equivalent to flagSpecs(): userWithId strategies, flexible rollouts with variants. */
function unleashFeatures() {
  return flagSpecs().map((f) => {
    const variant = (v: Variant, weight: number) => ({ name: v.key, weight, weightType: 'variable', stickiness: 'userId', payload: { type: 'json', value: JSON.stringify(v.payload) } });
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
          name: 'userWithId',
          parameters: { userIds: r.distinctIds!.join(',') },
          constraints: [],
          variants: [variant(f.variants.find((v) => v.key === r.variant)!, 1000)],
        })),
        { name: 'flexibleRollout', parameters: { rollout: '10', stickiness: 'userId', groupId: `${f.key}-10` }, constraints: [], variants: [variant(f.variants[1], 1000)] },
        { name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: f.key }, constraints: [], variants: f.variants.map((v) => variant(v, v.rolloutPct * 10)) },
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

async function main() {
  const { url, child, dataDir } = await startServer();
  try {
    const org = await api(url, 'POST', '/admin/orgs', { name: 'bench' });
    const project = await api(url, 'POST', `/admin/orgs/${org.id}/projects`, { name: 'bench' });
    for (const f of flagSpecs()) await api(url, 'POST', '/api/flags', { projectId: project.id, ...f });
    const { secret } = await api(url, 'POST', `/api/projects/${project.id}/flag-secret`);
    const stores = `${process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite'} + ${process.env.CLICKHOUSE_URL ? 'ClickHouse' : 'DuckDB'}`;
    console.log(`service: ${url} [${stores}], ${FLAGS} flags x 10 rules, node ${process.version}, ${DURATION}s per phase, ${cpus().length} CPUs, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);

    // warm-up, then the two remote phases
    await cannon(url, project.token, { connections: 10 }).catch(() => undefined);
    const max = await cannon(url, project.token, { connections: 10 });
    const fixed = await uniformLoad(url, project.token, RATE, DURATION);
    console.log('\nremote POST /flags/evaluate (100 flags per request)');
    console.log(`  max throughput (autocannon, 10 connections): ${max.rps} req/s, p50 ${max.p50} ms, p99 ${max.p99} ms, errors ${max.errors}`);
    console.log(`  uniform ${RATE.toLocaleString('en')} req/s (open loop): ${fixed.rps} req/s, p50 ${fixed.p50} ms, p99 ${fixed.p99} ms, max ${fixed.max} ms, errors ${fixed.errors} (generator's own send delay p50 ${fixed.lag50} ms, p99 ${fixed.lag99} ms)`);

    const sdk = new Tally({ token: project.token, host: url, flagSecret: secret, flushOnExit: false });
    await sdk.ready();
    if (sdk.flags.definitionList().length !== FLAGS) throw new Error('SDK did not load the definitions');
    const gb = new GrowthBookClient().initSync({ payload: { features: growthbookFeatures() as any } });
    const { unleash, close } = await startUnleash();

    const ours = rate((key, id) => sdk.flags.evaluateLocal(key, id)!.enabled);
    const growthbook = rate((key, id) => gb.evalFeature(key, { attributes: { id } }).on);
    const unlOne = rate((key, id) => unleash.getVariant(key, { userId: id }).enabled);
    console.log('\nlocal evaluation in process (one flag for one id per evaluation; best of 3 rounds)');
    console.log(`  @tally-analytics/node (this SDK): ${ours.perSecond.toLocaleString('en')} evals/s (enabled ${ours.enabled}%)`);
    console.log(`  @growthbook/growthbook evalFeature: ${growthbook.perSecond.toLocaleString('en')} evals/s (on ${growthbook.enabled}%)`);
    console.log(`  unleash-client getVariant: ${unlOne.perSecond.toLocaleString('en')} evals/s (variant ${unlOne.enabled}%)`);
    await sdk.shutdown();
    await close();
  } finally {
    child.kill('SIGTERM');
    await once(child, 'exit').catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
