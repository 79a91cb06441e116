/** What the benchmark scripts share: starting the service in a child process and calling its API. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { metric } from '../test/support/pipeline.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BENCH_KEY = 'bench-superadmin-key';

/** The value after `--<name>` on the command line, or `fallback` when the flag or its value is absent. */
export function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

/** `arg` read as a number. */
export function numberArg(name: string, fallback: number): number {
  return Number(arg(name, String(fallback)));
}

/**
 * The services this bench started and not yet exited: stopped when the bench ends in any way it
 * can see (its end, an error, Ctrl-C, a SIGTERM from `timeout` or a test runner), so a bench
 * stopped half-way leaves no service behind holding a port, its data directory and the cores.
 */
const children = new Set<ChildProcess>();
const stopChildren = () => {
  for (const c of children) c.kill('SIGTERM');
};
process.once('exit', stopChildren);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    stopChildren();
    process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
  });
}

/**
 * Starts `bin/tally.ts` (the image's entry; role `role`, or all roles) on a free loopback port with a fresh
 * DATA_DIR and rate limits out of the way; `prefix` wraps the node command (e.g. `taskset -c 0`).
 * Resolves with the URL it printed.
 */
export async function startBenchService(opts: {
  name: string;
  role?: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  prefix?: string[];
  /** What the process prints once it is up, the URL in the first group (default: the API's line). */
  listening?: RegExp;
  /** A compiled entry point (dist/bin/tally.js) run with plain node instead of the sources through tsx. */
  entry?: string;
  /** DATA_DIR of the process (stores seeded beforehand); default a fresh temporary directory. */
  dataDir?: string;
}): Promise<{ url: string; child: ChildProcess; dataDir: string }> {
  const dataDir = opts.dataDir ?? mkdtempSync(path.join(tmpdir(), `${opts.name}-`));
  const main = opts.entry ? [opts.entry] : ['--import', 'tsx', path.join(ROOT, 'bin/tally.ts')];
  const node = [process.execPath, ...(opts.nodeArgs ?? []), ...main, ...(opts.role ? [opts.role] : [])];
  const [cmd, ...args] = [...(opts.prefix ?? []), ...node];
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: {
      ...process.env, ...opts.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, SUPERADMIN_KEY: BENCH_KEY, LOG_LEVEL: 'error',
      RATE_LIMIT_PER_PROJECT: '1000000000', RATE_LIMIT_PER_IP: '1000000000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const m = (opts.listening ?? /listening on (http:\/\/\S+)/).exec(out);
      if (m) resolve(m[1].replace('localhost', '127.0.0.1'));
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}): ${out}`)));
  });
  return { url, child, dataDir };
}

/** A superadmin API call; throws on any status >= 300. */
export async function benchApi(url: string, method: string, p: string, body?: unknown) {
  const res = await fetch(url + p, { method, headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/**
 * The service's own running totals from its `GET /metrics`: CPU seconds of the whole process
 * (every thread) and the seconds its main thread ran (`tally_eventloop_active_seconds_total`).
 * Two readings give its cores in use and its event loop's utilisation over the interval.
 */
export async function serviceClock(url: string): Promise<{ at: number; cpuSeconds: number; loopActiveSeconds: number }> {
  const [cpuSeconds, loopActiveSeconds] = await Promise.all(
    ['process_cpu_seconds_total', 'tally_eventloop_active_seconds_total'].map((name) => metric(url, name)));
  // A running service has spent some of both: a zero is a counter missing from its /metrics.
  if (!(cpuSeconds > 0 && loopActiveSeconds > 0)) throw new Error(`${url}/metrics lacks process_cpu_seconds_total or tally_eventloop_active_seconds_total`);
  return { at: performance.now(), cpuSeconds, loopActiveSeconds };
}

/** Cores the service used and the share of the time its main thread ran, between two readings. */
export function serviceLoad(a: Awaited<ReturnType<typeof serviceClock>>, b: Awaited<ReturnType<typeof serviceClock>>) {
  const seconds = (b.at - a.at) / 1000;
  const round = (x: number) => Math.round(x * 100) / 100;
  return { cpuCores: round((b.cpuSeconds - a.cpuSeconds) / seconds), mainThreadBusy: round((b.loopActiveSeconds - a.loopActiveSeconds) / seconds) };
}

/** `pid` and its descendants (through /proc/<pid>/task/<tid>/children; tsx runs the service in a child node). */
export function processTree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let tids: string[] = [];
    try { tids = readdirSync(`/proc/${out[i]}/task`); } catch { continue; }
    for (const tid of tids) {
      try {
        for (const c of readFileSync(`/proc/${out[i]}/task/${tid}/children`, 'utf8').split(' ')) if (c.trim()) out.push(Number(c));
      } catch { /* exited */ }
    }
  }
  return out;
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

/** CPU milliseconds (user + system) spent so far by `pid` alone; 0 once it has exited. */
export function ownCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK; // utime, stime (fields 14 and 15)
  } catch {
    return 0;
  }
}

/** CPU milliseconds (user + system) spent so far by `pid` and its descendants. */
export function cpuMs(pid: number): number {
  let ms = 0;
  for (const p of processTree(pid)) ms += ownCpuMs(p);
  return ms;
}

/** Peak RSS (VmHWM, MiB) of the largest of `pid` and its descendants. */
export function peakRssMb(pid: number): number {
  let max = 0;
  for (const p of processTree(pid)) {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) max = Math.max(max, Number(m[1]) / 1024);
    } catch { /* exited */ }
  }
  return Math.round(max);
}
