import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Private server processes for the reliability tests: nats-server (JetStream, file store in a
 * temp dir), clickhouse-server (own config, data dir and ports) and the service's own roles as
 * child processes. Missing binaries fail loudly: nothing is skipped.
 */

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const tcpOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });

function requireBinary(file: string, hint: string) {
  if (!fs.existsSync(file)) throw new Error(`${file} is missing (${hint}); the reliability tests need it`);
}

/** A child process whose output goes to a log file; `exited` resolves with its exit code/signal. */
export class Child {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  constructor(readonly name: string, readonly proc: ChildProcess, readonly logFile: string) {
    this.exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  }
  get pid() { return this.proc.pid!; }
  get running() { return this.proc.exitCode === null && this.proc.signalCode === null; }
  async kill(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000) {
    if (!this.running) return;
    this.proc.kill(signal);
    const t = setTimeout(() => this.proc.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }
  log(): string {
    try { return fs.readFileSync(this.logFile, 'utf8'); } catch { return ''; }
  }
}

export function spawnLogged(name: string, cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; logDir: string }): Child {
  fs.mkdirSync(opts.logDir, { recursive: true });
  const logFile = path.join(opts.logDir, `${name}.log`);
  const fd = fs.openSync(logFile, 'a');
  const proc = spawn(cmd, args, { env: opts.env ?? process.env, cwd: opts.cwd, stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  return new Child(name, proc, logFile);
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** nats-server with JetStream on a private port, its file store in `dir` (kept across restarts). */
export class NatsServer {
  child?: Child;
  private constructor(readonly port: number, readonly dir: string) {}

  static async start(): Promise<NatsServer> {
    requireBinary('/usr/sbin/nats-server', 'apt-get install nats-server, or run scripts/services.sh');
    const s = new NatsServer(await freePort(), tempDir('nats-'));
    await s.restart();
    return s;
  }

  get url() { return `nats://127.0.0.1:${this.port}`; }

  async restart(): Promise<void> {
    if (this.child?.running) await this.stop();
    this.child = spawnLogged('nats-server', '/usr/sbin/nats-server',
      ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', path.join(this.dir, 'store')],
      { logDir: this.dir });
    await waitFor('nats-server', () => tcpOpen(this.port), 20_000);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM') {
    await this.child?.kill(signal);
  }

  async close() {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Three (or `size`) nats-servers with JetStream, clustered by routes on loopback, each with its
 * own file store (kept across restarts) and server name `n<i>`. `start` resolves once JetStream
 * answers through every server (the meta leader is elected).
 */
export class NatsCluster {
  readonly children: Array<Child | undefined> = [];
  private constructor(readonly ports: number[], readonly routePorts: number[], readonly dir: string) {}

  static async start(size = 3): Promise<NatsCluster> {
    requireBinary('/usr/sbin/nats-server', 'apt-get install nats-server, or run scripts/services.sh');
    const ports: number[] = [];
    const routePorts: number[] = [];
    for (let i = 0; i < size; i++) { ports.push(await freePort()); routePorts.push(await freePort()); }
    const c = new NatsCluster(ports, routePorts, tempDir('nats-cluster-'));
    try {
      await Promise.all(ports.map((_, i) => c.restart(i, false)));
      await c.waitForJetStream();
    } catch (err) {
      await c.close();
      throw err;
    }
    return c;
  }

  /** Every server, comma-separated (what NATS_URL takes). */
  get url() { return this.ports.map((p) => `nats://127.0.0.1:${p}`).join(','); }

  name(i: number) { return `n${i}`; }
  indexOf(serverName: string) { return this.ports.findIndex((_, i) => this.name(i) === serverName); }

  /** (Re)starts server i; waits for its client port and, unless told not to, for JetStream. */
  async restart(i: number, waitJetStream = true): Promise<void> {
    if (this.children[i]?.running) await this.stop(i);
    const routes = this.routePorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
    this.children[i] = spawnLogged(this.name(i), '/usr/sbin/nats-server', [
      '-a', '127.0.0.1', '-p', String(this.ports[i]), '-n', this.name(i), '-js', '-sd', path.join(this.dir, this.name(i)),
      '--cluster_name', 'test', '--cluster', `nats://127.0.0.1:${this.routePorts[i]}`, '--routes', routes,
    ], { logDir: this.dir });
    await waitFor(`nats-server ${this.name(i)} (log: ${this.children[i]!.logFile})`, () => tcpOpen(this.ports[i]), 20_000);
    if (waitJetStream) await this.waitForJetStream([i]);
  }

  async stop(i: number, signal: NodeJS.Signals = 'SIGTERM') {
    await this.children[i]?.kill(signal);
  }

  /** Waits until JetStream answers an account-info request through each given server. */
  async waitForJetStream(servers = this.ports.map((_, i) => i), timeoutMs = 60_000): Promise<void> {
    const { connect } = await import('nats');
    for (const i of servers) {
      await waitFor(`JetStream through ${this.name(i)} (log: ${this.children[i]?.logFile})`, async () => {
        const nc = await connect({ servers: `nats://127.0.0.1:${this.ports[i]}`, timeout: 2000, noRandomize: true });
        try {
          await (await nc.jetstreamManager({ timeout: 2000 })).getAccountInfo();
          return true;
        } finally {
          await nc.close();
        }
      }, timeoutMs, 250);
    }
  }

  async close() {
    for (let i = 0; i < this.ports.length; i++) await this.stop(i).catch(() => undefined);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * clickhouse-server (the machine's 18.16 binary) with a config derived from
 * /etc/clickhouse-server: its own ports, data and log directories, so it can be stopped and
 * started without touching the shared server on 8123.
 */
export class ClickHouseServer {
  child?: Child;
  private constructor(readonly httpPort: number, readonly dir: string, private configFile: string) {}

  static async start(): Promise<ClickHouseServer> {
    requireBinary('/usr/sbin/clickhouse-server', 'apt-get install clickhouse-server, or run scripts/services.sh');
    requireBinary('/etc/clickhouse-server/config.xml', 'the config template comes from the Debian package');
    const dir = tempDir('clickhouse-');
    const [httpPort, tcpPort, interPort] = [await freePort(), await freePort(), await freePort()];
    const data = path.join(dir, 'data') + '/';
    fs.mkdirSync(path.join(data, 'tmp'), { recursive: true });
    fs.mkdirSync(path.join(data, 'user_files'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'log'), { recursive: true });
    let xml = fs.readFileSync('/etc/clickhouse-server/config.xml', 'utf8');
    xml = xml
      .replace(/<http_port>\d+<\/http_port>/, `<http_port>${httpPort}</http_port>`)
      .replace(/<tcp_port>\d+<\/tcp_port>/, `<tcp_port>${tcpPort}</tcp_port>`)
      .replace(/<interserver_http_port>\d+<\/interserver_http_port>/, `<interserver_http_port>${interPort}</interserver_http_port>`)
      .replace(/<port>9000<\/port>/g, `<port>${tcpPort}</port>`)
      .replace(/\/var\/lib\/clickhouse\//g, data)
      .replace(/\/var\/log\/clickhouse-server\//g, path.join(dir, 'log') + '/')
      .replace(/<listen_host>::<\/listen_host>/g, '')
      .replace(/<users_config>[^<]*<\/users_config>/, `<users_config>/etc/clickhouse-server/users.xml</users_config>`);
    const configFile = path.join(dir, 'config.xml');
    fs.writeFileSync(configFile, xml);
    const s = new ClickHouseServer(httpPort, dir, configFile);
    await s.restart();
    return s;
  }

  get url() { return `http://127.0.0.1:${this.httpPort}`; }

  async ping(): Promise<boolean> {
    const r = await fetch(`${this.url}/ping`).catch(() => undefined);
    return !!r && r.ok;
  }

  async restart(): Promise<void> {
    if (this.child?.running) await this.stop();
    this.child = spawnLogged('clickhouse-server', '/usr/sbin/clickhouse-server', [`--config-file=${this.configFile}`], {
      logDir: this.dir, cwd: this.dir,
    });
    await waitFor(`clickhouse-server (log: ${this.child.logFile})`, () => this.ping(), 60_000, 200);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM') {
    await this.child?.kill(signal, 30_000);
  }

  async close() {
    await this.stop();
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The service's entry point as a child process: `node --import tsx apps/server/src/main.ts <role>`
 * (node itself, not the tsx CLI, which would run the service in a grandchild that a SIGKILL of
 * the child would not reach).
 */
export function startRole(name: string, role: 'api' | 'worker' | 'all', env: Record<string, string>, logDir: string): Child {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  // ROLE_NODE_ARGS: extra node flags for the service processes, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
  const nodeArgs = (process.env.ROLE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  return spawnLogged(name, process.execPath, [...nodeArgs, '--import', 'tsx', path.join(root, 'apps/server/src/main.ts'), role], {
    env: { ...process.env, ...env, ROLE: role },
    cwd: root,
    logDir,
  });
}

// ------------------------------------------------------------------ load generation

export interface LoadOptions {
  url: string;
  token: string;
  /** Events in all; event `seq` (0-based) gets time `timeBase + seq`, so time identifies it. */
  total: number;
  batchSize: number;
  concurrency: number;
  timeBase: number;
  /** Pace the load at about this many events per second (unpaced when absent). */
  eventsPerSecond?: number;
  /** Retry a batch refused with 503/429 or a connection error after Retry-After (capped), as SDKs do. */
  retry?: boolean;
  /** Upper bound on the wait between retries (ms). */
  maxRetryWaitMs?: number;
  /** Updated as the load runs (events answered 200 so far). */
  progress?: { accepted: number };
}

export interface LoadResult {
  /** Events the API answered 200 for. */
  accepted: number;
  /** Answers by HTTP status (`0` = connection error). */
  statuses: Record<number, number>;
  /** Every 503 carried a Retry-After of at least 1 and the `{status: 0, error}` envelope. */
  unavailableWellFormed: boolean;
  /** [ms since start, cumulative accepted events] at each 200. */
  acceptedCurve: Array<[number, number]>;
  elapsedMs: number;
}

/** Sends `total` events to /track in batches; every batch is retried until it gets a 200 when `retry`. */
export async function sendEvents(o: LoadOptions): Promise<LoadResult> {
  const statuses: Record<number, number> = {};
  const acceptedCurve: Array<[number, number]> = [];
  let accepted = 0;
  let unavailableWellFormed = true;
  const batches = Math.ceil(o.total / o.batchSize);
  let next = 0;
  const started = Date.now();
  const body = (b: number) => {
    const events = [];
    for (let seq = b * o.batchSize; seq < Math.min(o.total, (b + 1) * o.batchSize); seq++) {
      events.push({ event: seq % 10 === 0 ? 'signup' : 'page_view', properties: { distinct_id: `u${seq % 997}`, time: o.timeBase + seq, seq, plan: seq % 3 === 0 ? 'pro' : 'free' } });
    }
    return { json: JSON.stringify(events), n: events.length };
  };
  const worker = async () => {
    while (next < batches) {
      const b = next++;
      if (o.eventsPerSecond) {
        const due = started + (b * o.batchSize * 1000) / o.eventsPerSecond;
        if (due > Date.now()) await sleep(due - Date.now());
      }
      const { json, n } = body(b);
      for (;;) {
        let status = 0;
        let retryAfter = 0.5;
        try {
          const res = await fetch(`${o.url}/track`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-service-token': o.token },
            body: json,
            signal: AbortSignal.timeout(15_000),
          });
          status = res.status;
          const text = await res.text();
          if (status === 503 || status === 429) {
            const ra = Number(res.headers.get('retry-after'));
            retryAfter = ra;
            let parsed: { status?: number; error?: string } = {};
            try { parsed = JSON.parse(text); } catch { /* checked below */ }
            if (status === 503 && !(ra >= 1 && parsed.status === 0 && typeof parsed.error === 'string')) unavailableWellFormed = false;
          } else if (status !== 200) {
            throw new Error(`/track answered ${status}: ${text.slice(0, 300)}`);
          }
        } catch (err) {
          if (status !== 0) throw err;
        }
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status === 200) {
          accepted += n;
          if (o.progress) o.progress.accepted = accepted;
          acceptedCurve.push([Date.now() - started, accepted]);
          break;
        }
        if (!o.retry) break;
        await sleep(Math.min(retryAfter * 1000, o.maxRetryWaitMs ?? 1000));
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  return { accepted, statuses, unavailableWellFormed, acceptedCurve, elapsedMs: Date.now() - started };
}
