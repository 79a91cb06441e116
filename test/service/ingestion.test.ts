import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { Client } from '../support/http.js';
import { drained, ev, ingest } from '../support/ingestion.js';

forEachBackend('ingestion /track', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let globex: Tenant;

  before(async () => {
    // 127.0.0.1 is a trusted proxy here, so X-Forwarded-For decides the client address.
    t = await startTestService(backend, { TRUSTED_PROXIES: '127.0.0.1' });
    acme = await createTenant(t, 'Acme');
    globex = await createTenant(t, 'Globex');
  });
  after(async () => t?.close());

  const events = async (tenant: Tenant, q = '') => {
    await drained(t);
    const r = await tenant.owner.get(`/api/data/events?projectId=${tenant.project.id}${q}`);
    assert.equal(r.status, 200, r.text);
    return r.body as { events: any[]; total: number };
  };

  it('accepts one event with the header token and browses it back, enriched', async () => {
    const before = Date.now();
    const r = await ingest(t, acme.project.token, { 'x-forwarded-for': '81.2.69.142' }).post('/track', ev('Signed up', 'u-1', { plan: 'pro', n: 3, nested: { a: [1, 2] } }));
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { status: 1, inserted: 1 });
    const { events: rows, total } = await events(acme, '&event=Signed%20up');
    assert.equal(total, 1);
    const row = rows[0];
    assert.equal(row.event, 'Signed up');
    assert.equal(row.distinct_id, 'u-1');
    assert.ok(row.time >= before && row.time <= Date.now(), 'time defaults to receive time');
    assert.equal(typeof row.id, 'number');
    assert.equal(row.properties.plan, 'pro');
    assert.deepEqual(row.properties.nested, { a: [1, 2] });
    assert.equal(row.properties.$received_at, row.time);
    assert.equal(typeof row.properties.$processed_at, 'number');
    assert.ok(row.properties.$processed_at >= row.properties.$received_at);
    assert.ok(row.properties.$payload_size > 10);
    assert.equal(row.properties.$country_code, 'GB');
    assert.equal(typeof row.properties.$city, 'string');
    assert.equal(typeof row.properties.$insert_id, 'string');
    assert.equal(row.properties.token, undefined);
  });

  it('never overrides client-sent values and honours X-Forwarded-For only from trusted proxies', async () => {
    await ingest(t, acme.project.token, { 'x-forwarded-for': '81.2.69.142' })
      .post('/track', ev('Client wins', 'u-2', { $city: 'Atlantis', $received_at: 5, time: 1_700_000_000_000 }));
    const [row] = (await events(acme, '&event=Client%20wins')).events;
    assert.equal(row.properties.$city, 'Atlantis');
    assert.equal(row.properties.$received_at, 5);
    assert.equal(row.time, 1_700_000_000_000);
    assert.equal(row.properties.$country_code, 'GB');

    const untrusted = await startTestService(backend);
    try {
      const tenant = await createTenant(untrusted, 'Solo');
      await ingest(untrusted, tenant.project.token, { 'x-forwarded-for': '81.2.69.142' }).post('/track', ev('Spoof', 'u-3'));
      await drained(untrusted);
      const r = await tenant.owner.get(`/api/data/events?projectId=${tenant.project.id}`);
      assert.equal(r.body.total, 1);
      assert.equal(r.body.events[0].properties.$country_code, undefined, 'loopback peer is not trusted: no geo from the header');
    } finally {
      await untrusted.close();
    }
  });

  it('accepts batches, per-record tokens (which win over the header) and the /v/0.14 prefix', async () => {
    const r = await ingest(t, acme.project.token).post('/v/0.14/track', [
      ev('Batch', 'b-1'),
      ev('Batch', 'b-2', { token: globex.project.token }),
      ev('Batch', 'b-3'),
    ]);
    assert.deepEqual(r.body, { status: 1, inserted: 3 });
    const a = await events(acme, '&event=Batch');
    assert.deepEqual(a.events.map((e) => e.distinct_id).sort(), ['b-1', 'b-3']);
    const g = await events(globex, '&event=Batch');
    assert.deepEqual(g.events.map((e) => e.distinct_id), ['b-2']);
    assert.equal(g.events[0].properties.token, undefined, 'token stripped before storage');
    // Per-record token only, no header.
    const anon = new Client(t.url);
    const r2 = await anon.post('/track', [ev('NoHeader', 'n-1', { token: acme.project.token })]);
    assert.deepEqual(r2.body, { status: 1, inserted: 1 });
    assert.equal((await events(acme, '&event=NoHeader')).total, 1);
  });

  it('stores duplicates once: in a batch, across batches and across retries', async () => {
    const dup = ev('Dup', 'd-1', { time: 1_710_000_000_000, $insert_id: 'ins-1', v: 1 });
    const numeric = ev('DupNum', 'd-1', { time: 1_710_000_000_000, $insert_id: 42 });
    await ingest(t, acme.project.token).post('/track', [numeric, numeric]);
    await ingest(t, acme.project.token).post('/track', numeric);
    assert.equal((await events(acme, '&event=DupNum')).total, 1, 'numeric $insert_id dedups too');
    await ingest(t, acme.project.token).post('/track', [dup, dup, ev('Dup', 'd-1', { time: 1_710_000_000_000, $insert_id: 'ins-2' })]);
    await ingest(t, acme.project.token).post('/track', dup);
    await ingest(t, acme.project.token).post('/track', [dup, dup]);
    const r = await events(acme, '&event=Dup');
    assert.equal(r.total, 2);
    assert.deepEqual(r.events.map((e) => e.properties.$insert_id).sort(), ['ins-1', 'ins-2']);
    const names = (await acme.owner.get(`/api/data/event-names?projectId=${acme.project.id}`)).body;
    assert.equal(names.find((n: any) => n.name === 'Dup').count, 2);
    // Same insert id but a different time or person is a different event.
    await ingest(t, acme.project.token).post('/track', [
      ev('Dup', 'd-1', { time: 1_710_000_000_001, $insert_id: 'ins-1' }),
      ev('Dup', 'd-2', { time: 1_710_000_000_000, $insert_id: 'ins-1' }),
    ]);
    assert.equal((await events(acme, '&event=Dup')).total, 4);
  });

  it('stores __proto__ and constructor as ordinary properties, and sanitises strings and numbers', async () => {
    const raw = '{"event":"Proto","properties":{"distinct_id":"pp","__proto__":{"polluted":1},"constructor":"c",' +
      '"lone":"\\ud800x","nul":"a\\u0000b","big":1e400,"deep":{"a":{"b":[1,{"c":true}]}}}}';
    const r = await ingest(t, acme.project.token).raw('/track', raw);
    assert.deepEqual(r.body, { status: 1, inserted: 1 });
    const [row] = (await events(acme, '&event=Proto')).events;
    assert.ok(Object.hasOwn(row.properties, '__proto__'));
    assert.deepEqual(Object.getOwnPropertyDescriptor(row.properties, '__proto__')!.value, { polluted: 1 });
    assert.equal(row.properties.constructor, 'c');
    assert.equal(row.properties.lone, '\ufffdx');
    assert.equal(row.properties.nul, 'a\ufffdb');
    assert.equal(row.properties.big, null);
    assert.deepEqual(row.properties.deep, { a: { b: [1, { c: true }] } });
    assert.equal(({} as any).polluted, undefined);
    const keys = (await acme.owner.get(`/api/data/properties?projectId=${acme.project.id}&event=Proto`)).body.map((p: any) => p.key);
    assert.ok(keys.includes('__proto__') && keys.includes('constructor'));
  });

  it('reads Mixpanel-style time in seconds', async () => {
    await ingest(t, acme.project.token).post('/track', ev('Seconds', 's-1', { time: 1_700_000_123 }));
    await ingest(t, acme.project.token).post('/track', ev('Seconds', 's-1', { time: 1_700_000_124.5 }));
    const r = await events(acme, '&event=Seconds');
    assert.deepEqual(r.events.map((e) => e.time).sort(), [1_700_000_123_000, 1_700_000_124_500]);
  });

  it('refuses bad tokens, malformed JSON, oversize batches and bad records with the API errors, storing nothing', async () => {
    const before = (await events(acme)).total;
    const anon = new Client(t.url);
    let r = await anon.post('/track', ev('X', 'x'));
    assert.equal(r.status, 401);
    assert.deepEqual(r.body, { status: 0, error: 'invalid token' });
    r = await ingest(t, 'not-a-token').post('/track', ev('X', 'x'));
    assert.deepEqual([r.status, r.body], [401, { status: 0, error: 'invalid token' }]);
    // One record with a bad token refuses the whole batch.
    r = await ingest(t, acme.project.token).post('/track', [ev('X', 'x'), ev('X', 'y', { token: 'nope' })]);
    assert.equal(r.status, 401);
    r = await anon.post('/track', []);
    assert.deepEqual([r.status, r.body], [401, { status: 0, error: 'invalid token' }]);
    r = await ingest(t, acme.project.token).post('/track', []);
    assert.deepEqual([r.status, r.body], [200, { status: 1, inserted: 0 }]);
    r = await ingest(t, acme.project.token).raw('/track', '{"event": "X", ');
    assert.deepEqual([r.status, r.body], [400, { status: 0, error: 'invalid json' }]);
    r = await ingest(t, acme.project.token).post('/track', Array.from({ length: 501 }, (_, i) => ev('X', `x${i}`)));
    assert.deepEqual([r.status, r.body], [400, { status: 0, error: 'batch too large' }]);
    r = await ingest(t, acme.project.token).post('/track', [ev('X', 'x'), { event: 'X', properties: {} }]);
    assert.equal(r.status, 400);
    assert.equal(r.body.status, 0);
    assert.equal(r.body.error, 'invalid json');
    r = await ingest(t, acme.project.token).post('/track', { event: 'X', properties: { distinct_id: 'x', time: 'yesterday' } });
    assert.equal(r.status, 400);
    r = await ingest(t, acme.project.token).raw('/track', Buffer.alloc(1024 * 1024 + 10, 'a'));
    assert.deepEqual([r.status, r.body], [413, { status: 0, error: 'payload too large' }]);
    assert.equal((await events(acme)).total, before);
  });

  it('makes events readable within one second of the 200', async () => {
    const start = Date.now();
    await ingest(t, acme.project.token).post('/track', ev('Fast', 'f-1'));
    for (;;) {
      const r = await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&event=Fast`);
      if (r.body.total === 1) break;
      assert.ok(Date.now() - start < 1000, 'not visible within 1 s');
      await new Promise((res) => setTimeout(res, 20));
    }
  });

  it('counts accepted events in the organisation usage', async () => {
    const month = new Date().toISOString().slice(0, 7);
    const usage = (await t.admin.get(`/admin/usage?month=${month}`)).body;
    const row = usage.find((u: any) => u.org_id === globex.org.id);
    assert.equal(row.events, 1);
  });
});
