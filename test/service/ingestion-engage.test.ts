import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, SUPERADMIN_KEY, type Tenant, type TestService } from '../support/service.js';
import { drained, ev, ingest } from '../support/ingestion.js';

forEachBackend('ingestion /engage', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let globex: Tenant;

  before(async () => {
    t = await startTestService(backend, { TRUSTED_PROXIES: '127.0.0.1' });
    acme = await createTenant(t, 'Acme');
    globex = await createTenant(t, 'Globex');
  });
  after(async () => t?.close());

  const engage = (body: unknown, headers: Record<string, string> = {}) => ingest(t, acme.project.token, headers).post('/engage', body);
  const profile = async (id: string) => {
    await drained(t);
    const r = await acme.owner.get(`/api/data/users/${encodeURIComponent(id)}?projectId=${acme.project.id}`);
    return r.status === 200 ? r.body.properties : undefined;
  };

  it('applies $set, $set_once and $add in order, with geo and $last_seen defaults', async () => {
    const before = Date.now();
    const r = await engage(
      [
        { distinct_id: 'p-1', $set: { name: 'Ada', plan: 'free' } },
        { distinct_id: 'p-1', $set_once: { first_plan: 'free', name: 'Not Ada' } },
        { distinct_id: 'p-1', $add: { logins: 2 } },
        { distinct_id: 'p-1', $add: { logins: 3, credits: -1.5 } },
        { distinct_id: 'p-1', $set: { plan: 'pro' } },
      ],
      { 'x-forwarded-for': '81.2.69.142' },
    );
    assert.deepEqual(r.body, { status: 1, applied: 5 });
    const p = await profile('p-1');
    assert.equal(p.name, 'Ada');
    assert.equal(p.plan, 'pro');
    assert.equal(p.first_plan, 'free');
    assert.equal(p.logins, 5);
    assert.equal(p.credits, -1.5);
    assert.equal(p.$country_code, 'GB');
    assert.ok(p.$last_seen >= before);
    // Client-sent keys win over the defaults.
    await engage({ distinct_id: 'p-1', $set: { $city: 'Atlantis', $last_seen: 7 } }, { 'x-forwarded-for': '81.2.69.142' });
    const q = await profile('p-1');
    assert.equal(q.$city, 'Atlantis');
    assert.equal(q.$last_seen, 7);
  });

  it('applies two identical requests twice (a repeated $add is not a redelivery)', async () => {
    const op = { distinct_id: 'p-twice', $add: { clicks: 1 } };
    await engage(op);
    await drained(t);
    await engage(op);
    assert.equal((await profile('p-twice')).clicks, 2);
  });

  it('refuses $unset and $delete one by one without an elevated credential, applying the rest', async () => {
    await engage({ distinct_id: 'p-2', $set: { a: 1, b: 2 } });
    for (const auth of [undefined, acme.tokens.admin, acme.tokens.member, globex.tokens.owner, 'garbage']) {
      const r = await engage(
        [
          { distinct_id: 'p-2', $unset: ['a'] },
          { distinct_id: 'p-2', $set: { c: 3 } },
          { distinct_id: 'p-2', $delete: true },
        ],
        auth ? { authorization: `Bearer ${auth}` } : {},
      );
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, {
        status: 0,
        error: '$delete/$unset require an owner or superadmin credential',
        applied: 1,
        refused: [{ index: 0, op: '$unset' }, { index: 2, op: '$delete' }],
      });
    }
    const p = await profile('p-2');
    assert.deepEqual([p.a, p.b, p.c], [1, 2, 3]);
  });

  it('honours $unset and $delete with an owner ID token or the superadmin key', async () => {
    await engage({ distinct_id: 'p-3', $set: { a: 1, b: 2 } });
    let r = await engage({ distinct_id: 'p-3', $unset: ['a'] }, { authorization: `Bearer ${acme.tokens.owner}` });
    assert.deepEqual(r.body, { status: 1, applied: 1 });
    const p = await profile('p-3');
    assert.equal('a' in p, false);
    assert.equal(p.b, 2);
    r = await engage({ distinct_id: 'p-3', $delete: true }, { authorization: `Bearer ${SUPERADMIN_KEY}` });
    assert.deepEqual(r.body, { status: 1, applied: 1 });
    assert.equal(await profile('p-3'), undefined);
    // A later $set starts a fresh profile.
    await engage({ distinct_id: 'p-3', $set: { z: 1 } });
    const fresh = await profile('p-3');
    assert.equal(fresh.z, 1);
    assert.equal(fresh.b, undefined);
  });

  it('keys profiles by the identity cluster and merges a linked id’s profile', async () => {
    await engage({ distinct_id: '$device:e1', $set: { source: 'ad', plan: 'trial' } });
    await engage({ distinct_id: 'user-e1', $set: { plan: 'pro' } });
    await drained(t);
    await ingest(t, acme.project.token).post('/alias', { alias: '$device:e1', distinct_id: 'user-e1' });
    const p = await profile('$device:e1');
    assert.equal(p.plan, 'pro', 'the cluster profile wins');
    assert.equal(p.source, 'ad', 'the linked id fills gaps');
    // Ops on any member update the cluster's profile.
    await engage({ distinct_id: '$device:e1', $add: { visits: 1 } });
    assert.equal((await profile('user-e1')).visits, 1);
    const users = (await acme.owner.get(`/api/data/users?projectId=${acme.project.id}&search=user-e1`)).body;
    assert.deepEqual(users.users.map((u: any) => u.distinct_id), ['user-e1']);
  });

  it('accepts Mixpanel field names ($distinct_id, $token) and per-op tokens over the header', async () => {
    const r = await ingest(t, 'wrong-header').post('/engage', [
      { $distinct_id: 'p-4', $token: acme.project.token, $set: { m: 1 } },
      { distinct_id: 'p-4', token: globex.project.token, $set: { g: 1 } },
    ]);
    assert.deepEqual(r.body, { status: 1, applied: 2 });
    assert.equal((await profile('p-4')).m, 1);
    await drained(t);
    const g = await globex.owner.get(`/api/data/users/p-4?projectId=${globex.project.id}`);
    assert.equal(g.body.properties.g, 1);
    assert.equal(g.body.properties.m, undefined);
  });

  it('refuses malformed ops with 400 and stores nothing of the batch', async () => {
    for (const body of [
      [{ distinct_id: 'p-5', $set: { ok: 1 } }, { $set: { a: 1 } }],
      [{ distinct_id: 'p-5', $set: { ok: 1 } }, { distinct_id: 'p-5', $add: { a: 'x' } }],
      [{ distinct_id: 'p-5', $set: { ok: 1 } }, { distinct_id: 'p-5', $set: [1] }],
      [{ distinct_id: 'p-5', $set: { ok: 1 } }, { distinct_id: 'p-5', $unset: 'a' }],
    ]) {
      const r = await engage(body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.status, 0);
      assert.equal(r.body.error, 'invalid json');
    }
    assert.equal(await profile('p-5'), undefined);
    const r = await ingest(t, acme.project.token).post('/engage', Array.from({ length: 501 }, () => ({ distinct_id: 'x', $set: {} })));
    assert.deepEqual([r.status, r.body], [400, { status: 0, error: 'batch too large' }]);
  });

  it('shows a profile without events in /api/data/users and stats', async () => {
    await ingest(t, acme.project.token).post('/track', ev('Seen', 'p-1'));
    await drained(t);
    const list = (await acme.owner.get(`/api/data/users?projectId=${acme.project.id}&limit=100`)).body;
    const p1 = list.users.find((u: any) => u.distinct_id === 'p-1');
    assert.equal(p1.event_count, 1);
    assert.equal(typeof p1.first_seen, 'number');
    const p2 = list.users.find((u: any) => u.distinct_id === 'p-2');
    assert.deepEqual([p2.event_count, p2.first_seen, p2.last_seen], [0, null, null]);
    assert.equal(list.users.some((u: any) => u.distinct_id === 'p-3' && u.properties.b !== undefined), false);
  });
});
