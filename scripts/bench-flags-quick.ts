/**
 * `tsx scripts/bench-flags-quick.ts`: a shorter loop for working on `POST /flags/evaluate` than
 * `npm run bench:flags` (no Unleash peers, no local evaluation): the service on a fresh PostgreSQL
 * database with the same 100 flags × 10 rules, and the bare node:http floor answering ours for
 * user-0, each pinned to core 0 (this process, the load generator, to core 1). Per round and
 * server: saturated autocannon (BENCH_CONNECTIONS, default 10) for BENCH_DURATION seconds (default
 * 8), req/s and CPU ms per request (utime+stime from /proc), then, with BENCH_RATE (req/s, 0 skips),
 * p50/p99 of autocannon at that overall rate. BENCH_ROUNDS (default 3) alternates ours and the
 * floor, so both see the same machine. BENCH_PROFILE=<dir> runs the service with --cpu-prof into
 * that directory (the profile is written when the server stops, after the rounds).
 * BENCH_COMPARE=<dir>: a second service from another checkout (its apps/server/src/main.ts through
 * tsx, same flags, own database), measured in the same rounds: A/B on the same machine state.
 * `--json` prints one JSON line on stdout at the end.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import path from 'node:path';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { ROOT, benchApi, cpuMs, processTree, startBenchService } from './bench-support.js';

const autocannon = createRequire(import.meta.url)('autocannon') as (opts: Record<string, unknown>) => Promise<any>;
const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 0);
const PROFILE = process.env.BENCH_PROFILE;
const PG_URL = process.env.BENCH_PG_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const JSON_OUT = process.argv.includes('--json');
const say = (...a: unknown[]) => console.error(...a);

function flagSpecs() {
  return Array.from({ length: 100 }, (_, i) => {
    const key = `bench-flag-${i}`;
    const variants = [
      { key: 'a', rolloutPct: 34, payload: { color: 'red', i } },
      { key: 'b', rolloutPct: 33, payload: { color: 'green', i } },
      { key: 'c', rolloutPct: 33, payload: { color: 'blue', i } },
    ];
    const rules: Array<Record<string, unknown>> = [];
    for (let r = 0; r < 8; r++) rules.push({ rolloutPct: 100, distinctIds: Array.from({ length: 5 }, (_, k) => `vip-${i}-${r}-${k}`), variant: variants[r % 3].key });
    rules.push({ rolloutPct: 10, variant: 'b' });
    rules.push({ rolloutPct: 50 });
    return { key, name: key, variants, rules };
  });
}

const pin = (pid: number, core: number) => {
  for (const p of processTree(pid)) spawnSync('taskset', ['-a', '-p', '-c', String(core), String(p)], { stdio: 'ignore' });
};

let n = 0;
async function load(url: string, token: string, opts: Record<string, unknown>) {
  const r = await autocannon({
    url, connections: CONNECTIONS, ...opts,
    requests: [{
      method: 'POST', path: '/flags/evaluate', headers: { 'content-type': 'application/json', 'x-service-token': token },
      setupRequest: (req: any) => ({ ...req, body: JSON.stringify({ distinct_id: `user-${n++ % 10_000}` }) }),
    }],
  });
  return { rps: Math.round(r.requests.average), requests: r.requests.total as number, p50: r.latency.p50 as number, p99: r.latency.p99 as number, errors: (r.errors + r.non2xx) as number };
}

async function main() {
  const db = `bench_flags_quick_${process.pid}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  const dbUrl = new URL(PG_URL);
  dbUrl.pathname = '/' + db;
  const children: ChildProcess[] = [];
  const dropAlso: string[] = [];
  let dataDir: string | undefined;
  try {
    const svc = await startBenchService({
      name: 'bench-flags-quick', role: 'api',
      nodeArgs: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : [],
      env: { FLAGS_EVALUATE_RATE_PER_SECOND: '1000000000', FLAGS_EVALUATE_RATE_BURST: '1000000000', DATABASE_URL: dbUrl.toString() },
    });
    children.push(svc.child);
    dataDir = svc.dataDir;
    const org = await benchApi(svc.url, 'POST', '/admin/orgs', { name: 'bench' });
    const project = await benchApi(svc.url, 'POST', `/admin/orgs/${org.id}/projects`, { name: 'bench' });
    for (const f of flagSpecs()) await benchApi(svc.url, 'POST', '/api/flags', { projectId: project.id, ...f });
    let other: { url: string; pid: number; token: string } | undefined;
    if (process.env.BENCH_COMPARE) {
      const db2 = `${db}_b`;
      await admin.query(`CREATE DATABASE ${db2}`);
      const url2 = new URL(PG_URL);
      url2.pathname = '/' + db2;
      const b = await startBenchService({
        name: 'bench-flags-quick-b', role: 'api', nodeArgs: ['--import', 'tsx'], entry: path.join(process.env.BENCH_COMPARE, 'apps/server/src/main.ts'),
        env: { FLAGS_EVALUATE_RATE_PER_SECOND: '1000000000', FLAGS_EVALUATE_RATE_BURST: '1000000000', DATABASE_URL: url2.toString() },
      });
      children.push(b.child);
      const org2 = await benchApi(b.url, 'POST', '/admin/orgs', { name: 'bench' });
      const project2 = await benchApi(b.url, 'POST', `/admin/orgs/${org2.id}/projects`, { name: 'bench' });
      for (const f of flagSpecs()) await benchApi(b.url, 'POST', '/api/flags', { projectId: project2.id, ...f });
      other = { url: b.url, pid: b.child.pid!, token: project2.token };
      pin(b.child.pid!, 0);
      dropAlso.push(db2);
    }
    const body = await (await fetch(svc.url + '/flags/evaluate', { method: 'POST', headers: { 'content-type': 'application/json', 'x-service-token': project.token }, body: '{"distinct_id":"user-0"}' })).text();
    const floorChild = spawn(process.execPath, [path.join(ROOT, 'scripts/bench-flags-peers.mjs'), 'floor'], { env: { ...process.env, BENCH_FLOOR_BODY: body }, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(floorChild);
    const floorUrl = await new Promise<string>((resolve) => floorChild.stdout!.on('data', (d) => { const m = /listening on (\S+)/.exec(String(d)); if (m) resolve(m[1]); }));
    pin(svc.child.pid!, 0);
    pin(floorChild.pid!, 0);
    pin(process.pid, 1);
    say(`node ${process.version}, ${cpus().length} CPUs, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}, body ${Buffer.byteLength(body)} B`);
    const servers: Array<[string, string, number, string]> = [['ours', svc.url, svc.child.pid!, project.token], ['floor', floorUrl, floorChild.pid!, project.token]];
    if (other) servers.push(['compare', other.url, other.pid, other.token]);
    const out: Record<string, Array<Record<string, number>>> = Object.fromEntries(servers.map(([name]) => [name, []]));
    for (const [, url, , token] of servers) await load(url, token, { duration: 3 });
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, url, pid, token] of servers) {
        const before = cpuMs(pid);
        const r = await load(url, token, { duration: DURATION });
        const cpu = Math.round(((cpuMs(pid) - before) / r.requests) * 1000) / 1000;
        const row: Record<string, number> = { ...r, cpuMsPerRequest: cpu };
        if (RATE > 0) {
          const o = await load(url, token, { duration: DURATION, overallRate: RATE, connections: 50 });
          Object.assign(row, { openRps: o.rps, openP50: o.p50, openP99: o.p99 });
        }
        out[name].push(row);
        say(`round ${round} ${name.padEnd(7)}: ${r.rps} req/s, ${cpu} CPU ms/req, p50 ${r.p50} p99 ${r.p99} ms, errors ${r.errors}${RATE > 0 ? `; at ${RATE} req/s p50 ${row.openP50} p99 ${row.openP99} ms` : ''}`);
      }
      say(`round ${round} ratio ours/floor ${(out.ours[round].rps / out.floor[round].rps).toFixed(3)}; load ${loadavg()[0].toFixed(2)}`);
    }
    if (JSON_OUT) console.log(JSON.stringify({ loadavg: loadavg(), ...out }));
  } finally {
    for (const c of children) {
      c.kill('SIGINT');
      await Promise.race([once(c, 'exit'), new Promise((r) => setTimeout(r, 5000))]);
    }
    for (const d of [db, ...dropAlso]) await admin.query(`DROP DATABASE IF EXISTS ${d} WITH (FORCE)`);
    await admin.end();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
