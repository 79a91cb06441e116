/** What the benchmark scripts share: starting the service in a child process and calling its API. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BENCH_KEY = 'bench-superadmin-key';

/**
 * Starts `apps/server/src/main.ts` (role `role`, or all roles) on a free loopback port with a fresh
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
  /** A compiled entry point (dist/…/main.js) run with plain node instead of the sources through tsx. */
  entry?: string;
}): Promise<{ url: string; child: ChildProcess; dataDir: string }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `${opts.name}-`));
  const main = opts.entry ? [opts.entry] : ['--import', 'tsx', path.join(ROOT, 'apps/server/src/main.ts')];
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
