import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect } from 'nats';
import { loadConfig } from '../../apps/server/src/config.js';
import { JetStreamBuffer } from '../../apps/server/src/ports/buffer/jetstream.js';
import { natsConfig } from '../../apps/server/src/ports/buffer/jetstream-config.js';
import type { IngestionBatch } from '../../apps/server/src/ports/buffer/port.js';
import { freePort, sleep, startRole, tempDir, waitFor, type Child } from '../support/processes.js';
import { SecuredNats, adminCreate, makeTestPki, type TestPki } from '../support/pipeline.js';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type TestService } from '../support/service.js';

/**
 * The JetStream buffer against nats-servers that ask for credentials and TLS: private
 * nats-server processes started from config files on loopback ports, certificates from a
 * throwaway CA made with openssl. Covers the settings' checks, each way to authenticate, TLS
 * with a CA and with client certificates, refusals (wrong password, unknown CA) with the error a
 * person sees, the service's roles failing to start on them without losing what was accepted,
 * and events reaching the event store through a credentialed TLS JetStream.
 */
const USER = { name: 'tally', password: 'right-password' };
const TOKEN = 's3cr3t-token';

let pkiDir: string;
let pki: TestPki;
const servers: SecuredNats[] = [];


async function server(opts: Parameters<typeof SecuredNats.start>[0]): Promise<SecuredNats> {
  const s = await SecuredNats.start(opts);
  servers.push(s);
  return s;
}

/** What the buffer logged, by level. */
function captureLog() {
  const lines = { info: [] as string[], error: [] as string[] };
  return {
    lines,
    log: {
      info: (msg: string, meta?: Record<string, unknown>) => lines.info.push(`${msg} ${JSON.stringify(meta ?? {})}`),
      error: (msg: string, meta?: Record<string, unknown>) => lines.error.push(`${msg} ${JSON.stringify(meta ?? {})}`),
    },
  };
}

function configFor(url: string, env: Record<string, string>) {
  const tag = randomBytes(4).toString('hex');
  return natsConfig({ NATS_URL: url, NATS_STREAM: `S_${tag}`, NATS_SUBJECT_PREFIX: `s_${tag}`, NATS_STREAM_STORAGE: 'memory', ...env });
}

/** Opens the buffer with env's credentials, publishes a batch and consumes it back. */
async function roundTrip(url: string, env: Record<string, string>): Promise<void> {
  const buffer = await JetStreamBuffer.open(url, configFor(url, env));
  try {
    const batch: IngestionBatch = { id: randomBytes(6).toString('hex'), kind: 'track', projectId: 7, acceptedAt: Date.now(), records: [{ n: 1 }] };
    await buffer.publish(batch);
    await buffer.ping();
    const got = await new Promise<IngestionBatch>((resolve) => {
      const consumer = buffer.consume(async (b) => { resolve(b); void consumer.stop(); });
    });
    assert.equal(got.id, batch.id);
    assert.deepEqual(got.records, batch.records);
  } finally {
    await buffer.close();
  }
}

/** Opens the buffer expecting a refusal: the error thrown and what was logged at error level. */
async function refused(url: string, env: Record<string, string>, startupTimeoutMs = 0) {
  const { lines, log } = captureLog();
  const started = Date.now();
  const err = await JetStreamBuffer.open(url, configFor(url, env), { log, startupTimeoutMs }).then(
    async (b) => { await b.close(); return undefined; },
    (e: Error) => e,
  );
  assert.ok(err, 'the connection was refused');
  return { message: err.message, errors: lines.error, elapsedMs: Date.now() - started };
}

describe('NATS security', function () {
  before(function () {
    pkiDir = tempDir('nats-pki-');
    pki = makeTestPki(pkiDir);
  });
  after(async function () {
    for (const s of servers.splice(0)) await s.close();
    fs.rmSync(pkiDir, { recursive: true, force: true });
  });

  describe('settings', function () {
    const base = { NATS_URL: 'nats://127.0.0.1:4222' };
    const fails = (env: Record<string, string>, pattern: RegExp) => assert.throws(() => loadConfig({ ...base, ...env }), pattern);

    it('takes a user and password, a token, a creds file and TLS files into the NATS settings', function () {
      assert.deepEqual(loadConfig({ ...base, NATS_USER: 'u', NATS_PASSWORD: 'p' }).nats.security, { user: 'u', password: 'p', token: undefined, credsFile: undefined, tls: undefined });
      assert.equal(loadConfig({ ...base, NATS_TOKEN: 't' }).nats.security.token, 't');
      const tls = loadConfig({ ...base, NATS_TLS_CA: pki.ca, NATS_TLS_CERT: pki.clientCert, NATS_TLS_KEY: pki.clientKey }).nats.security.tls;
      assert.deepEqual(tls, { caFile: pki.ca, certFile: pki.clientCert, keyFile: pki.clientKey });
      const creds = path.join(pkiDir, 'user.creds');
      fs.writeFileSync(creds, '-----BEGIN NATS USER JWT-----\neyJ0\n------END NATS USER JWT------\n-----BEGIN USER NKEY SEED-----\nSUA\n------END USER NKEY SEED------\n');
      assert.equal(loadConfig({ ...base, NATS_CREDS: creds }).nats.security.credsFile, creds);
      assert.deepEqual(loadConfig(base).nats.security, {});
    });

    it('stops the start with a message naming the variables when a setting is incomplete, ambiguous or unreadable', function () {
      fails({ NATS_TLS_CERT: pki.clientCert }, /NATS_TLS_CERT and NATS_TLS_KEY go together.*NATS_TLS_CERT is set, NATS_TLS_KEY is not/);
      fails({ NATS_TLS_KEY: pki.clientKey }, /NATS_TLS_CERT and NATS_TLS_KEY go together.*NATS_TLS_KEY is set, NATS_TLS_CERT is not/);
      fails({ NATS_USER: 'u' }, /NATS_USER and NATS_PASSWORD go together/);
      fails({ NATS_PASSWORD: 'p' }, /NATS_USER and NATS_PASSWORD go together/);
      fails({ NATS_USER: 'u', NATS_PASSWORD: 'p', NATS_TOKEN: 't' }, /only one of .* \(got NATS_USER\/NATS_PASSWORD and NATS_TOKEN\)/);
      fails({ NATS_TLS_CA: path.join(pkiDir, 'missing.crt') }, /NATS_TLS_CA: cannot read .*missing\.crt \(ENOENT\)/);
      fails({ NATS_TLS_CA: pki.serverKey }, /NATS_TLS_CA: .* does not hold a PEM certificate/);
      fails({ NATS_TLS_CERT: pki.clientCert, NATS_TLS_KEY: pki.clientCert }, /NATS_TLS_KEY: .* does not hold a PEM private key/);
      const noSeed = path.join(pkiDir, 'no-seed.creds');
      fs.writeFileSync(noSeed, '-----BEGIN NATS USER JWT-----\neyJ0\n------END NATS USER JWT------\n');
      fails({ NATS_CREDS: noSeed }, /NATS_CREDS: .* holds no user NKey seed/);
      assert.throws(() => loadConfig({ NATS_TOKEN: 't' }), /NATS_TOKEN set without NATS_URL/);
    });
  });

  describe('against nats-server', function () {
    this.timeout(60_000);

    it('user and password: connects and round-trips a batch; a wrong password is refused, retried within the start-up time, and said as an authorization error', async function () {
      const s = await server({ user: USER });
      await roundTrip(s.url, { NATS_USER: USER.name, NATS_PASSWORD: USER.password });
      const r = await refused(s.url, { NATS_USER: USER.name, NATS_PASSWORD: 'wrong-password' }, 1500);
      assert.match(r.message, /^NATS: cannot connect to nats:\/\/127\.0\.0\.1:\d+: authorization refused \(.*Authorization Violation.*\): check NATS_USER\/NATS_PASSWORD/i);
      assert.ok(r.errors.length >= 2, `each attempt logged as an error (got ${r.errors.length})`);
      assert.ok(r.errors.every((e) => e.startsWith('NATS refused the connection: authorization refused')), r.errors.join('\n'));
      assert.ok(!r.message.includes('wrong-password') && !r.errors.join('').includes('wrong-password'), 'the password is never logged');
      assert.ok(r.elapsedMs < 10_000, `gave up once the start-up time was spent (${r.elapsedMs} ms)`);
      // No credentials at all: refused the same way.
      assert.match((await refused(s.url, {})).message, /authorization refused/);
    });

    it("credentials that stop working on a running connection: unready, the server's refusal logged, and back once they work again (the client never gives up)", async function () {
      const port = await freePort();
      let s = await SecuredNats.start({ user: USER, port });
      const { lines, log } = captureLog();
      const buffer = await JetStreamBuffer.open(s.url, configFor(s.url, { NATS_USER: USER.name, NATS_PASSWORD: USER.password }), { log });
      try {
        await buffer.ping();
        // The server now knows another password (as after a rotation the service has not caught up with).
        await s.close();
        s = await SecuredNats.start({ user: { name: USER.name, password: 'rotated' }, port });
        await waitFor('the server refusing the reconnection', async () => lines.error.some((l) => /^NATS reported an error .*authorization refused/.test(l)), 20_000, 100);
        await assert.rejects(buffer.ping(), 'not ready while refused');
        await sleep(1500); // several refused attempts: the client's default is to give up after two
        await s.close();
        s = await SecuredNats.start({ user: USER, port });
        // A fresh server has no stream: set-up runs again, as at the next start.
        await waitFor('reconnected with the working password', async () => { await buffer.ensureStreams(); await buffer.ping(); return true; }, 20_000, 200);
      } finally {
        await buffer.close();
        await s.close();
      }
    });

    it('token: connects with NATS_TOKEN; a wrong token is refused', async function () {
      const s = await server({ token: TOKEN });
      await roundTrip(s.url, { NATS_TOKEN: TOKEN });
      const r = await refused(s.url, { NATS_TOKEN: 'not-the-token' });
      assert.match(r.message, /authorization refused/);
      assert.equal(r.errors.length, 1);
    });

    it('TLS: connects with NATS_TLS_CA naming the throwaway CA; without it, or with another CA, the certificate is rejected', async function () {
      const s = await server({ user: USER, tls: pki });
      const creds = { NATS_USER: USER.name, NATS_PASSWORD: USER.password };
      await roundTrip(s.url, { ...creds, NATS_TLS_CA: pki.ca });
      for (const env of [creds, { ...creds, NATS_TLS_CA: pki.otherCa }]) {
        const r = await refused(s.url, env);
        assert.match(r.message, /^NATS: cannot connect .*: TLS certificate rejected \(.*certificate.*\): check NATS_TLS_CA/);
        assert.match(r.errors[0] ?? '', /^NATS refused the connection: TLS certificate rejected/);
      }
    });

    it('TLS with client certificates: NATS_TLS_CERT/NATS_TLS_KEY are presented; without them the server refuses', async function () {
      const s = await server({ tls: pki, verifyClients: true });
      await roundTrip(s.url, { NATS_TLS_CA: pki.ca, NATS_TLS_CERT: pki.clientCert, NATS_TLS_KEY: pki.clientKey });
      const r = await refused(s.url, { NATS_TLS_CA: pki.ca });
      assert.match(r.message, /^NATS: cannot connect .*: TIMEOUT \(with TLS, a server that requires client certificates .*: set NATS_TLS_CERT and NATS_TLS_KEY\)$/);
    });

    it('NATS_TLS_* against a server without TLS: refused, naming the mismatch', async function () {
      const s = await server({ token: TOKEN });
      const r = await refused(s.url, { NATS_TOKEN: TOKEN, NATS_TLS_CA: pki.ca });
      assert.match(r.message, /TLS: NATS_TLS_\* is set but the server does not offer TLS/);
    });
  });

  describe('the service roles on a credentialed TLS NATS', function () {
    this.timeout(120_000);
    const SUPERADMIN_KEY = 'nats-security-superadmin';
    let logDir: string;
    const children: Child[] = [];
    let s: SecuredNats;
    const good = () => ({ NATS_URL: s.url, NATS_USER: USER.name, NATS_PASSWORD: USER.password, NATS_TLS_CA: pki.ca });

    before(async function () {
      logDir = tempDir('nats-roles-');
      s = await server({ user: USER, tls: pki });
    });
    after(async function () {
      for (const c of children) await c.kill('SIGTERM', 10_000).catch(() => undefined);
      if (!process.env.KEEP_NATS_LOGS && this.currentTest?.state !== "failed") fs.rmSync(logDir, { recursive: true, force: true });
    });
    afterEach(function () {
      if (this.currentTest?.state === 'failed') for (const c of children) console.log(`--- ${c.name} (${c.logFile})\n${c.log().slice(-3000)}`);
    });

    /** Starts a role process on its own embedded stores. */
    function role(name: string, which: 'api' | 'worker', env: Record<string, string>): Child {
      const c = startRole(name, which, {
        SUPERADMIN_KEY, LOG_LEVEL: 'info', HOST: '127.0.0.1', DATA_DIR: path.join(logDir, `${name}-data`),
        NATS_STREAM_STORAGE: 'memory', ...env,
      }, logDir);
      children.push(c);
      return c;
    }

    /** Waits for a refused role to exit; /health/ready must never have answered 200 meanwhile. */
    async function exitsUnready(c: Child, readyUrl: string) {
      let ready = false;
      const exit = await Promise.race([
        c.exited,
        (async () => {
          while (c.running) {
            const res = await fetch(readyUrl).catch(() => undefined);
            if (res?.status === 200) ready = true;
            await sleep(100);
          }
          return c.exited;
        })(),
      ]);
      assert.equal(ready, false, '/health/ready never answered 200');
      return exit;
    }

    it('accepted events stay in the stream while workers with a wrong password or an unknown CA fail to start: each logs why, never turns ready and exits non-zero', async function () {
      const port = await freePort();
      const api = role('api', 'api', { ...good(), PORT: String(port) });
      const apiUrl = `http://127.0.0.1:${port}`;
      await waitFor(`api ready (log: ${api.logFile})`, async () => (await fetch(`${apiUrl}/health/ready`)).status === 200, 60_000, 200);
      const org = await adminCreate<{ id: number }>(apiUrl, SUPERADMIN_KEY, '/admin/orgs', { name: 'nats-secured' });
      const project = await adminCreate<{ id: number; token: string }>(apiUrl, SUPERADMIN_KEY, `/admin/orgs/${org.id}/projects`, { name: 'web' });
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${apiUrl}/track`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-service-token': project.token },
          body: JSON.stringify([{ event: 'signup', properties: { distinct_id: `u${i}`, time: Date.now() } }]),
        });
        assert.equal(res.status, 200, await res.text());
      }

      const cases = [
        { name: 'worker-wrong-password', env: { ...good(), NATS_PASSWORD: 'wrong-password' }, reason: /"level":"error","msg":"NATS refused the connection: authorization refused/ },
        { name: 'worker-unknown-ca', env: { ...good(), NATS_TLS_CA: pki.otherCa }, reason: /"level":"error","msg":"NATS refused the connection: TLS certificate rejected/ },
      ];
      for (const c of cases) {
        const metricsPort = await freePort();
        const w = role(c.name, 'worker', { ...c.env, METRICS_PORT: String(metricsPort), STARTUP_TIMEOUT_MS: '3000' });
        const exit = await exitsUnready(w, `http://127.0.0.1:${metricsPort}/health/ready`);
        assert.equal(exit.code, 1, `${c.name} exits non-zero (log: ${w.log()})`);
        const log = w.log();
        assert.match(log, c.reason);
        assert.match(log, /^NATS: cannot connect to nats:\/\/127\.0\.0\.1:\d+: /m, 'its last word names NATS and the reason');
        assert.ok(!log.includes('wrong-password'), 'the password is never logged');
      }

      // Nothing accepted was lost: the five batches wait in the stream for a worker that can connect.
      const nc = await connect({ servers: s.url, user: USER.name, pass: USER.password, tls: { caFile: pki.ca } });
      try {
        assert.equal((await (await nc.jetstreamManager()).streams.info('INGEST')).state.messages, 5);
      } finally {
        await nc.close();
      }
    });
  });

  forEachBackend('events through a credentialed TLS JetStream reach the event store', (backend) => {
    let t: TestService;
    let s: SecuredNats;
    before(async function () {
      this.timeout(60_000);
      s = await server({ user: USER, tls: pki });
      t = await startTestService(backend, {
        NATS_URL: s.url, NATS_USER: USER.name, NATS_PASSWORD: USER.password, NATS_TLS_CA: pki.ca, NATS_STREAM_STORAGE: 'memory',
      });
    });
    after(async function () {
      await t?.close();
    });

    it('stores every event accepted by /track', async function () {
      this.timeout(60_000);
      assert.equal(t.svc.deps.buffer.kind, 'jetstream');
      const tenant = await createTenant(t, 'natssecure');
      const events = Array.from({ length: 20 }, (_, i) => ({ event: 'page_view', properties: { distinct_id: `u${i % 4}`, time: Date.now() - i } }));
      const res = await t.anon.post('/track', events, { headers: { 'x-service-token': tenant.project.token } });
      assert.equal(res.status, 200, res.text);
      await waitFor('20 events stored', async () => (await t.svc.deps.events.countEvents([tenant.project.id])).get(tenant.project.id) === 20, 30_000, 200);
      const health = await t.anon.get('/health/ready');
      assert.equal(health.status, 200);
      assert.equal(health.body.checks.buffer, 'ok');
    });
  });
});
