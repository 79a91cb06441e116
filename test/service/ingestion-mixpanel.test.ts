import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { forEachBackend } from '../support/backends.js';
import { SUPERADMIN_KEY, createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { Client } from '../support/http.js';
import { drained } from '../support/ingestion.js';

const require = createRequire(import.meta.url);
// The real SDK (CommonJS), pointed at the test server: a project instrumented with it only changes its host.
const Mixpanel = require('mixpanel') as typeof import('mixpanel');

const call = (fn: (cb: (err?: Error | Error[]) => void) => void) =>
  new Promise<Error | Error[] | undefined>((resolve) => fn((err) => resolve(err ?? undefined)));

forEachBackend('ingestion: Mixpanel SDK compatibility', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let host: string;

  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Acme');
    host = new URL(t.url).host;
  });

  const events = async (q: string) => {
    await drained(t);
    const r = await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&limit=1000${q}`);
    assert.equal(r.status, 200, r.text);
    return r.body.events as any[];
  };
  const profile = async (id: string) => {
    await drained(t);
    const r = await acme.owner.get(`/api/data/users/${encodeURIComponent(id)}?projectId=${acme.project.id}`);
    return r.status === 200 ? r.body : undefined;
  };

  it('tracks events, batches, profiles and aliases sent by the mixpanel npm package', async () => {
    const mp = Mixpanel.init(acme.project.token, { host, protocol: 'http', keepAlive: false });
    assert.equal(await call((cb) => mp.track('Anon visit', { distinct_id: '$device:mp1', page: '/' }, cb)), undefined);
    assert.equal(await call((cb) => mp.track('Signed up', { distinct_id: 'mp-user', plan: 'pro', time: 1_700_000_000 }, cb)), undefined);
    const batchErr = await call((cb) =>
      mp.track_batch(
        Array.from({ length: 60 }, (_, i) => ({ event: 'Batched', properties: { distinct_id: 'mp-user', i, time: Date.now() - i * 1000, $insert_id: `b-${i}` } })),
        { max_batch_size: 25 },
        cb as any,
      ),
    );
    assert.equal(batchErr, undefined);
    assert.equal(await call((cb) => mp.alias('mp-user', '$device:mp1', cb)), undefined);
    assert.equal(await call((cb) => mp.people.set('mp-user', { $email: 'u@example.test', name: 'MP' }, cb)), undefined);
    assert.equal(await call((cb) => mp.people.set_once('mp-user', 'first', 'yes', cb)), undefined);
    assert.equal(await call((cb) => mp.people.increment('mp-user', 'logins', 2, cb)), undefined);
    assert.equal(await call((cb) => (mp.people as any).increment('mp-user', 'logins', cb)), undefined);
    // Destructive verbs need an owner credential the SDK does not send: refused (reported as an error).
    assert.ok(await call((cb) => mp.people.delete_user('mp-user', cb)));

    const signedUp = await events('&event=Signed%20up');
    assert.equal(signedUp.length, 1);
    assert.equal(signedUp[0].time, 1_700_000_000_000, 'seconds read as seconds');
    assert.equal(signedUp[0].properties.plan, 'pro');
    assert.equal(signedUp[0].properties.mp_lib, 'node');
    assert.equal(signedUp[0].properties.token, undefined);
    assert.equal((await events('&event=Batched')).length, 60);
    // The alias moved the anonymous history onto the user.
    assert.deepEqual((await events('&event=Anon%20visit')).map((e) => e.distinct_id), ['mp-user']);
    const p = await profile('$device:mp1');
    assert.equal(p.distinct_id, 'mp-user');
    assert.deepEqual([p.properties.name, p.properties.$email, p.properties.first, p.properties.logins], ['MP', 'u@example.test', 'yes', 3]);
    assert.equal(p.event_count, 62);
  });

  it('answers verbose JSON, honours the /v/0.14 path and reports errors to the SDK', async () => {
    const verbose = Mixpanel.init(acme.project.token, { host, protocol: 'http', verbose: true, path: '/v/0.14', keepAlive: false });
    assert.equal(await call((cb) => verbose.track('Verbose', { distinct_id: 'v-1' }, cb)), undefined);
    assert.equal((await events('&event=Verbose')).length, 1);
    const wrong = Mixpanel.init('00000000-0000-0000-0000-000000000000', { host, protocol: 'http', verbose: true, keepAlive: false });
    const err = await call((cb) => wrong.track('Nope', { distinct_id: 'x' }, cb));
    assert.match(String(err), /invalid token/);
  });

  it('accepts form bodies with base64 or plain JSON data= (as mixpanel-browser sends them) and the ip= flag', async () => {
    const c = new Client(t.url);
    const form = { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '81.2.69.142' };
    const b64 = Buffer.from(JSON.stringify([{ event: 'Form', properties: { distinct_id: 'f-1', token: acme.project.token, time: 1_700_000_001 } }])).toString('base64');
    let r = await c.post('/track?verbose=1&ip=1', undefined, { raw: `data=${encodeURIComponent(b64)}`, headers: form });
    assert.deepEqual([r.status, r.body], [200, { status: 1, error: null, inserted: 1 }]);
    // Base64 with `+` sent without percent-encoding (as Mixpanel's SDKs do): `+` must not turn into a space.
    const plus = JSON.stringify({ event: 'Plus', properties: { distinct_id: 'f-9', token: acme.project.token, v: ['>>>', 'a>>>', 'aa>>>', '???'] } });
    const plusB64 = Buffer.from(plus).toString('base64');
    assert.ok(plusB64.includes('+') && plusB64.includes('/'));
    r = await c.post('/track?verbose=1', undefined, { raw: `data=${plusB64}`, headers: form });
    assert.deepEqual([r.status, r.body], [200, { status: 1, error: null, inserted: 1 }]);
    assert.deepEqual((await events('&event=Plus'))[0].properties.v, ['>>>', 'a>>>', 'aa>>>', '???']);
    const plain = JSON.stringify({ event: 'Form', properties: { distinct_id: 'f-2', token: acme.project.token } });
    r = await c.post('/track?ip=0', undefined, { raw: `data=${encodeURIComponent(plain)}`, headers: form });
    assert.deepEqual([r.status, r.text], [200, '1']);
    r = await c.post('/track', undefined, { raw: 'data=%%%not-base64', headers: form });
    assert.deepEqual([r.status, r.body], [400, { status: 0, error: 'invalid json' }]);
    r = await c.get(`/engage?data=${encodeURIComponent(Buffer.from(JSON.stringify({ $token: acme.project.token, $distinct_id: 'f-1', $set: { via: 'get' } })).toString('base64'))}`);
    assert.deepEqual([r.status, r.text], [200, '1']);
    // mixpanel-browser's $identify (original ID merge) links the anonymous id retroactively.
    const identify = [
      { event: 'Landing', properties: { distinct_id: 'anon-17f3c', token: acme.project.token, time: 1_700_000_002 } },
      { event: '$identify', properties: { distinct_id: 'f-3', $anon_distinct_id: 'anon-17f3c', token: acme.project.token } },
    ];
    r = await c.post('/track?verbose=1', undefined, { raw: `data=${encodeURIComponent(Buffer.from(JSON.stringify(identify)).toString('base64'))}`, headers: form });
    assert.equal(r.body.status, 1);
    assert.deepEqual((await events('&event=Landing')).map((e) => e.distinct_id), ['f-3']);
    const rows = await events('&event=Form');
    assert.deepEqual(rows.map((e) => e.distinct_id).sort(), ['f-1', 'f-2']);
    assert.equal(rows.find((e) => e.distinct_id === 'f-1').time, 1_700_000_001_000);
    // ip=0 means no geo from the connection; the loopback peer is not a trusted proxy anyway.
    assert.equal(rows.find((e) => e.distinct_id === 'f-2').properties.$country_code, undefined);
    assert.equal((await profile('f-1')).properties.via, 'get');
  });
  /**
   * The package sends its secret only over HTTPS: a TLS front (self-signed certificate, accepted
   * for this test only) forwarding to the test server, as a TLS-terminating proxy would.
   */
  async function tlsFront(): Promise<{ host: string; close(): Promise<void> }> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'import-tls-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
      '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'pipe' });
    const target = new URL(t.url);
    const server = https.createServer({ key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) }, (req, res) => {
      const fwd = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      });
      req.pipe(fwd);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    fs.rmSync(dir, { recursive: true, force: true });
    return { host: `127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
  }

  it("imports historical events with the package's import and import_batch, authenticated by a machine-access token", async function () {
    this.timeout(60_000);
    const mint = async (role: string) => {
      const r = await acme.owner.post('/api/org/tokens', { name: `import ${role}`, role });
      assert.equal(r.status, 201, r.text);
      return r.body.token as string;
    };
    const member = await mint('member');
    const viewer = await mint('viewer');
    const other = await createTenant(t, 'ImportOther');
    const old = Math.floor(Date.UTC(2019, 4, 1) / 1000); // years old: /import takes events of any age
    const front = await tlsFront();
    const tls = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
    try {
      const mp = (secret: string, token = acme.project.token) => Mixpanel.init(token, { host: front.host, protocol: 'https', secret, keepAlive: false, verbose: true } as any);
      assert.equal(await call((cb) => mp(member).import('Imported old', old, { distinct_id: 'imp-user', source: 'legacy' }, cb)), undefined);
      const batchErr = await call((cb) => (mp(member) as any).import_batch(
        Array.from({ length: 30 }, (_, i) => ({ event: 'Imported batch', properties: { distinct_id: 'imp-user', time: old + i * 3600, i, $insert_id: `imp-${i}` } })),
        { max_batch_size: 12 }, cb as any));
      assert.equal(batchErr, undefined);
      // The superadmin key imports too.
      assert.equal(await call((cb) => mp(SUPERADMIN_KEY).import('Imported by admin', old, { distinct_id: 'imp-user' }, cb)), undefined);
      // Refused: a viewer token, no or a wrong secret, the project token, another organisation's project.
      assert.ok(await call((cb) => mp(viewer).import('Refused', old, { distinct_id: 'imp-user' }, cb)));
      assert.ok(await call((cb) => mp('tally_nope').import('Refused', old, { distinct_id: 'imp-user' }, cb)));
      assert.ok(await call((cb) => mp(acme.project.token).import('Refused', old, { distinct_id: 'imp-user' }, cb)));
      assert.ok(await call((cb) => mp(member, other.project.token).import('Refused', old, { distinct_id: 'imp-user' }, cb)));
    } finally {
      if (tls === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
      else process.env.NODE_TLS_REJECT_UNAUTHORIZED = tls;
      await front.close();
    }
    const one = await events('&event=Imported%20old');
    assert.equal(one.length, 1);
    assert.equal(new Date(one[0].time).getTime(), old * 1000);
    assert.equal(one[0].properties.source, 'legacy');
    const batch = await events('&event=Imported%20batch');
    assert.equal(batch.length, 30);
    assert.equal((await events('&event=Imported%20by%20admin')).length, 1);
    assert.equal((await events('&event=Refused')).length, 0, 'nothing refused was stored');
    // No credential at all: 401 in the SDK envelope; unauthenticated GET with data= likewise.
    const bare = await t.anon.post('/import', [{ event: 'Refused', properties: { distinct_id: 'x', token: acme.project.token } }]);
    assert.deepEqual([bare.status, bare.body.status], [401, 0]);
    const viaGet = await t.anon.request('GET', `/v/0.14/import?data=${Buffer.from(JSON.stringify({ event: 'Refused', properties: { distinct_id: 'x', token: acme.project.token } })).toString('base64')}`,
      undefined, { headers: { authorization: 'Basic ' + Buffer.from(`${member}:`).toString('base64') } });
    assert.equal(viaGet.status, 200, viaGet.text);
    assert.equal((await events('&event=Refused')).length, 1, 'the GET form with the member token is accepted');
  });
});
