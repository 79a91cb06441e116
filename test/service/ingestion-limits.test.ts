import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, startTestService, type Tenant, type TestService } from '../support/service.js';
import { Client } from '../support/http.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import { serviceUnavailable } from '../../apps/server/src/http/errors.js';

forEachBackend('ingestion limits', (backend) => {
  describe('rate limits', () => {
    let t: TestService;
    let acme: Tenant;
    let globex: Tenant;

    before(async () => {
      // Small buckets; X-Forwarded-For picks the client address so each test has its own IP.
      t = await startTestService(backend, {
        RATE_LIMIT_PER_IP: '3', RATE_LIMIT_PER_PROJECT: '5', RATE_LIMIT_WINDOW_MS: '60000', TRUSTED_PROXIES: '127.0.0.1',
      });
      acme = await createTenant(t, 'Acme');
      globex = await createTenant(t, 'Globex');
    });
    after(async () => t?.close());

    const total = async (tenant: Tenant) => {
      await drained(t);
      return (await tenant.owner.get(`/api/data/events?projectId=${tenant.project.id}`)).body.total;
    };

    it('limits /track and /engage per IP with 429 and Retry-After, storing nothing of the rejected batch', async () => {
      const c = ingest(t, acme.project.token, { 'x-forwarded-for': '10.0.0.1' });
      for (let i = 0; i < 2; i++) assert.equal((await c.post('/track', ev('Limited', `l${i}`))).status, 200);
      assert.equal((await c.post('/engage', { distinct_id: 'l', $set: { a: 1 } })).status, 200);
      const r = await c.post('/track', [ev('Limited', 'over-1'), ev('Limited', 'over-2')]);
      assert.equal(r.status, 429);
      assert.deepEqual(r.body, { status: 0, error: 'rate limited' });
      const retry = Number(r.headers.get('retry-after'));
      assert.ok(Number.isInteger(retry) && retry >= 1, `Retry-After ${r.headers.get('retry-after')}`);
      assert.equal((await c.post('/engage', { distinct_id: 'l', $set: { a: 2 } })).status, 429);
      await drained(t);
      const rows = (await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&event=Limited`)).body;
      assert.equal(rows.total, 2);
      // Another address is not affected; /alias has no per-IP limit.
      assert.equal((await ingest(t, acme.project.token, { 'x-forwarded-for': '10.0.0.2' }).post('/track', ev('Other', 'o'))).status, 200);
      assert.equal((await c.post('/alias', { alias: '$device:x', distinct_id: 'y' })).status, 200);
    });

    it('limits each project (all ingestion endpoints), independently of other projects', async () => {
      // Acme has used 5 requests of its 5 in the previous test (3 + 1 + 1 alias; rejected ones count nothing).
      const fresh = ingest(t, acme.project.token, { 'x-forwarded-for': '10.0.0.9' });
      const r = await fresh.post('/alias', { alias: '$device:z', distinct_id: 'z' });
      assert.equal(r.status, 429);
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      const before = await total(acme);
      assert.equal((await fresh.post('/track', ev('P', 'p'))).status, 429);
      assert.equal(await total(acme), before);
      // Flag evaluation has its own bucket per project token (docs/hardening.md): a project whose
      // ingestion is throttled still serves its flags, and evaluations spend nothing of ingestion's.
      const anon = new Client(t.url);
      for (const token of [acme.project.token, globex.project.token]) {
        for (let i = 0; i < 8; i++) {
          const flags = await anon.post('/flags/evaluate', { distinct_id: 'x', token });
          assert.deepEqual([flags.status, flags.body.flags], [200, {}], flags.text);
        }
      }
      // Globex evaluated 8 times, past its 5 ingestion requests: ingestion still has them all.
      assert.equal((await ingest(t, globex.project.token, { 'x-forwarded-for': '10.0.0.10' }).post('/track', ev('P', 'p'))).status, 200);
      // A batch mixing a limited project with a free one is rejected whole.
      const mixed = await ingest(t, globex.project.token, { 'x-forwarded-for': '10.0.0.11' })
        .post('/track', [ev('Mixed', 'm1'), ev('Mixed', 'm2', { token: acme.project.token })]);
      assert.equal(mixed.status, 429);
      assert.equal((await globex.owner.get(`/api/data/events?projectId=${globex.project.id}&event=Mixed`)).body.total, 0);
    });

    it('checks concurrent requests together (PostgreSQL: fewer statements than requests), exactly as one by one', async () => {
      const send = (tenant: Tenant, n: number, net: string) => Promise.all(Array.from({ length: n }, (_, i) =>
        ingest(t, tenant.project.token, { 'x-forwarded-for': `10.0.${net}.${i}` }).post('/track', ev('R', `r${i}`))));
      // 5 requests at once, all inside every window (the project's 5, 3 per address).
      const initech = await createTenant(t, 'Initech');
      let statements = 0;
      const counted = (q: { sql: string }) => { if (/rate_limit_windows/.test(q.sql)) statements++; };
      t.svc.deps.db.on('query', counted);
      try {
        assert.ok((await send(initech, 5, '1')).every((r) => r.status === 200));
      } finally {
        t.svc.deps.db.off('query', counted);
      }
      if (backend.name === 'production') assert.ok(statements < 5, `${statements} rate-limit statements for 5 concurrent requests`);
      // 12 at once from 12 addresses: the project's window of 5 admits exactly 5.
      const hooli = await createTenant(t, 'Hooli');
      const replies = await send(hooli, 12, '2');
      assert.deepEqual([replies.filter((r) => r.status === 200).length, replies.filter((r) => r.status === 429).length], [5, 7]);
      assert.equal(await total(hooli), 5);
    });
  });

  describe('monthly quota', () => {
    let t: TestService;
    let acme: Tenant;

    before(async () => {
      t = await sharedService(backend);
      acme = await createTenant(t, 'Quota');
      await t.admin.patch(`/admin/orgs/${acme.org.id}`, { monthlyEventQuota: 5 });
    });

    it('rejects a batch that would exceed the quota atomically with 429 and Retry-After 3600', async () => {
      const c = ingest(t, acme.project.token);
      assert.deepEqual((await c.post('/track', [ev('Q', 'a'), ev('Q', 'b'), ev('Q', 'c')])).body, { status: 1, inserted: 3 });
      const r = await c.post('/track', [ev('Q', 'd'), ev('Q', 'e'), ev('Q', 'f')]);
      assert.equal(r.status, 429);
      assert.deepEqual(r.body, { status: 0, error: 'monthly event quota exceeded' });
      assert.equal(r.headers.get('retry-after'), '3600');
      assert.deepEqual((await c.post('/track', [ev('Q', 'd'), ev('Q', 'e')])).body, { status: 1, inserted: 2 });
      assert.equal((await c.post('/track', ev('Q', 'g'))).status, 429);
      // Profiles and links are not events: they still pass.
      assert.equal((await c.post('/engage', { distinct_id: 'a', $set: { x: 1 } })).status, 200);
      await drained(t);
      const rows = (await acme.owner.get(`/api/data/events?projectId=${acme.project.id}`)).body;
      assert.deepEqual(rows.events.map((e: any) => e.distinct_id).sort(), ['a', 'b', 'c', 'd', 'e']);
      const month = new Date().toISOString().slice(0, 7);
      const usage = (await t.admin.get(`/admin/usage?month=${month}`)).body.find((u: any) => u.org_id === acme.org.id);
      assert.deepEqual([usage.events, usage.monthly_event_quota], [5, 5]);
      // Raising the quota lets events in again.
      await t.admin.patch(`/admin/orgs/${acme.org.id}`, { monthlyEventQuota: null });
      assert.equal((await c.post('/track', ev('Q', 'g'))).status, 200);
    });

    it('uncounts the events of a batch the buffer refused', async () => {
      const month = new Date().toISOString().slice(0, 7);
      const usage = async () => (await t.admin.get(`/admin/usage?month=${month}`)).body.find((u: any) => u.org_id === acme.org.id).events;
      const before = await usage();
      const buffer = t.svc.deps.buffer;
      const publish = buffer.publish;
      buffer.publish = async () => { throw serviceUnavailable('ingestion buffer unavailable', 5); };
      try {
        const r = await ingest(t, acme.project.token).post('/track', [ev('Down', 'x'), ev('Down', 'y')]);
        assert.equal(r.status, 503);
        assert.equal(r.headers.get('retry-after'), '5');
      } finally {
        buffer.publish = publish;
      }
      assert.equal(await usage(), before);
    });

    it('holds under concurrent batches (check-and-add in one transaction)', async () => {
      await t.admin.patch(`/admin/orgs/${acme.org.id}`, { monthlyEventQuota: 16 });
      // 6 used so far; 10 left: of 20 concurrent single-event requests exactly 10 pass.
      const anon = new Client(t.url);
      const replies = await Promise.all(
        Array.from({ length: 20 }, (_, i) => anon.post('/track', ev('C', `c${i}`), { headers: { 'x-service-token': acme.project.token } })),
      );
      assert.equal(replies.filter((r) => r.status === 200).length, 10);
      assert.equal(replies.filter((r) => r.status === 429).length, 10);
      await drained(t);
      assert.equal((await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&event=C`)).body.total, 10);
    });

    it('admits concurrent requests together (one statement for many), and of a group that does not fit exactly those that fit in arrival order', async () => {
      const burst = await createTenant(t, 'Quota burst');
      const anon = new Client(t.url);
      const send = (n: number, size: number, tag: string) => Promise.all(Array.from({ length: n }, (_, i) =>
        anon.post('/track', Array.from({ length: size }, (_, k) => ev('B', `${tag}${i}-${k}`)), { headers: { 'x-service-token': burst.project.token } })));
      let statements = 0;
      const counted = (q: { sql: string }) => { if (/usage_org_monthly/.test(q.sql)) statements++; };
      t.svc.deps.db.on('query', counted);
      try {
        // No quota: 16 concurrent requests, all admitted, in fewer statements than requests.
        assert.ok((await send(16, 2, 'free')).every((r) => r.status === 200));
      } finally {
        t.svc.deps.db.off('query', counted);
      }
      // PostgreSQL: requests arrive while an admit waits on its round trip; SQLite: an idle admit waits
      // for the requests read in the same turn of the event loop (it would answer before the next one).
      assert.ok(statements < 16, `${statements} quota statements for 16 concurrent requests`);
      // 32 counted; 10 left. 8 concurrent requests of 3 events: 3 fit (9), none after them.
      await t.admin.patch(`/admin/orgs/${burst.org.id}`, { monthlyEventQuota: 42 });
      const replies = await send(8, 3, 'q');
      assert.equal(replies.filter((r) => r.status === 200).length, 3);
      assert.equal(replies.filter((r) => r.status === 429).length, 5);
      const month = new Date().toISOString().slice(0, 7);
      const usage = (await t.admin.get(`/admin/usage?month=${month}`)).body.find((u: any) => u.org_id === burst.org.id);
      assert.equal(usage.events, 41);
      // One event still fits.
      assert.equal((await send(1, 1, 'last'))[0].status, 200);
    });
  });
});
