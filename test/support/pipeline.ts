import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { freePort, spawnLogged, tempDir, waitFor, type Child } from './processes.js';

/** Helpers of the pipeline tests that run the service's roles as processes (reliability, cluster, NATS security). */

/** A fresh PostgreSQL database on TEST_DATABASE_URL's server: its URL, and how to drop it. */
export async function freshPgDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env.TEST_DATABASE_URL!;
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const run = async (sql: string) => {
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    try { await admin.query(sql); } finally { await admin.end(); }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined) };
}

/** The sum of a Prometheus metric's samples on `<url>/metrics`. */
export async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name)) sum += Number(line.split(' ').pop());
  return sum;
}

/** POSTs an admin route with the superadmin key; asserts 201 and returns the body. */
export async function adminCreate<T>(apiUrl: string, key: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as T;
}

/**
 * A throwaway PKI made with openssl in `dir`: a CA, a server certificate for 127.0.0.1 and
 * localhost signed by it, a client certificate signed by it, and an unrelated CA (for the
 * "unknown CA" cases). EC keys, so it takes milliseconds.
 */
export interface TestPki { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string; otherCa: string }

export function makeTestPki(dir: string): TestPki {
  const f = (name: string) => path.join(dir, name);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'other-ca']) ssl('req', '-x509', ...newKey, '-keyout', f(`${ca}.key`), '-out', f(`${ca}.crt`), '-days', '2', '-subj', `/CN=Tally test ${ca}`);
  const sign = (name: string, ext: string) => {
    ssl('req', ...newKey, '-keyout', f(`${name}.key`), '-out', f(`${name}.csr`), '-subj', `/CN=${name}`);
    fs.writeFileSync(f(`${name}.ext`), ext);
    ssl('x509', '-req', '-in', f(`${name}.csr`), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f(`${name}.crt`), '-days', '2', '-extfile', f(`${name}.ext`));
  };
  sign('server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  sign('client', 'extendedKeyUsage=clientAuth\n');
  return { ca: f('ca.crt'), serverCert: f('server.crt'), serverKey: f('server.key'), clientCert: f('client.crt'), clientKey: f('client.key'), otherCa: f('other-ca.crt') };
}

/**
 * nats-server with JetStream on a private loopback port, started from a config file that asks
 * for a user and password or a token, and optionally TLS (with client certificates when
 * `verifyClients`). Its store and config live in a temp dir removed by `close`.
 */
export class SecuredNats {
  private constructor(readonly port: number, readonly dir: string, readonly child: Child) {}

  static async start(opts: { user?: { name: string; password: string }; token?: string; tls?: TestPki; verifyClients?: boolean; port?: number }): Promise<SecuredNats> {
    const port = opts.port ?? await freePort();
    const dir = tempDir('nats-secured-');
    const q = (s: string) => JSON.stringify(s);
    const lines = [`listen: "127.0.0.1:${port}"`, `jetstream { store_dir: ${q(path.join(dir, 'store'))} }`];
    if (opts.user) lines.push(`authorization { user: ${q(opts.user.name)}, password: ${q(opts.user.password)} }`);
    if (opts.token) lines.push(`authorization { token: ${q(opts.token)} }`);
    if (opts.tls) {
      lines.push(`tls { cert_file: ${q(opts.tls.serverCert)}, key_file: ${q(opts.tls.serverKey)}, ca_file: ${q(opts.tls.ca)}, verify: ${opts.verifyClients ? 'true' : 'false'}, timeout: 2 }`);
    }
    return SecuredNats.run(port, dir, lines.join('\n') + '\n');
  }

  /**
   * nats-server from a config text of the caller's (e.g. one a chart renders), given a loopback
   * `port` (and `dir`, removed by `close`); `env` is its environment (the config's $VARIABLES).
   */
  static async run(port: number, dir: string, config: string, env: Record<string, string> = {}): Promise<SecuredNats> {
    const conf = path.join(dir, 'nats.conf');
    fs.writeFileSync(conf, config);
    const child = spawnLogged('nats-server', '/usr/sbin/nats-server', ['-c', conf], { logDir: dir, env: { ...process.env, ...env } });
    const s = new SecuredNats(port, dir, child);
    await waitFor(`nats-server (log: ${child.logFile})`, async () => /Server is ready/.test(child.log()) || !child.running, 20_000, 50);
    if (!child.running) throw new Error(`nats-server exited: ${child.log()}`);
    return s;
  }

  get url() { return `nats://127.0.0.1:${this.port}`; }

  async close() {
    await this.child.kill('SIGTERM');
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
