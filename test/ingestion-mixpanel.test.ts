import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { forEachBackend } from './support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from './support/service.js';
import { Client } from './support/http.js';
import { drained } from './ingestion.support.js';

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
    t = await startTestService(backend);
    acme = await createTenant(t, 'Acme');
    host = new URL(t.url).host;
  });
  after(async () => t?.close());

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
});
