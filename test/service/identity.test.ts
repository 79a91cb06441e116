import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import { IdentityStore } from '../../apps/server/src/identity/store.js';
import type { EventStore } from '../../apps/server/src/ports/events/index.js';

forEachBackend('identity', (backend) => {
  let t: TestService;
  let acme: Tenant;
  const T0 = 1_720_000_000_000;

  before(async () => {
    t = await startTestService(backend);
    acme = await createTenant(t, 'Acme');
  });
  after(async () => t?.close());

  const send = (body: unknown) => ingest(t, acme.project.token).post('/track', body);
  const alias = (alias: string, distinctId: string) => ingest(t, acme.project.token).post('/alias', { alias, distinct_id: distinctId });
  /** distinct_id of each stored event of `event`, ordered by time. */
  const owners = async (event: string) => {
    await drained(t);
    const r = await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&event=${encodeURIComponent(event)}&limit=1000`);
    assert.equal(r.status, 200, r.text);
    return (r.body.events as any[]).sort((a, b) => a.time - b.time).map((e) => e.distinct_id);
  };
  const identity = () => new IdentityStore(t.svc.deps.db);
  const mirrored = async (distinctId: string) => {
    const d = t.svc.deps.events.dialect;
    const q = `'${distinctId.replace(/'/g, "''")}'`;
    const rows = await t.svc.deps.events.query<{ canonical_id: string; from_time: number }>(
      `SELECT canonical_id, from_time FROM identity_links ${d === 'clickhouse' ? 'FINAL' : ''} WHERE project_id = ${acme.project.id} AND distinct_id = ${q}`,
    );
    return rows.map((r) => ({ canonical_id: r.canonical_id, from_time: Number(r.from_time) }));
  };

  it('links a device history into the user on /track ($device_id/$user_id rule)', async () => {
    await send([
      ev('Viewed', '$device:d1', { time: T0 }),
      ev('Viewed', '$device:d1', { time: T0 + 1000 }),
    ]);
    assert.deepEqual(await owners('Viewed'), ['$device:d1', '$device:d1']);
    await send(ev('Logged in', 'user-1', { $device_id: '$device:d1', $user_id: 'user-1', time: T0 + 2000 }));
    assert.deepEqual(await owners('Viewed'), ['user-1', 'user-1']);
    assert.equal(await identity().canonicalOf(acme.project.id, '$device:d1'), 'user-1');
    assert.deepEqual(await mirrored('$device:d1'), [{ canonical_id: 'user-1', from_time: 0 }]);
    // distinctId of any cluster member finds the whole cluster.
    const r = await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&distinctId=${encodeURIComponent('$device:d1')}`);
    assert.deepEqual(r.body.events.map((e: any) => e.distinct_id), ['user-1', 'user-1', 'user-1']);
    // Not linked: distinct_id differs from $user_id, or the two are equal.
    await send(ev('Other', 'x', { $device_id: '$device:d9', $user_id: 'user-9' }));
    await send(ev('Other', 'user-8', { $device_id: 'user-8', $user_id: 'user-8' }));
    await drained(t);
    assert.equal(await identity().canonicalOf(acme.project.id, '$device:d9'), '$device:d9');
  });

  it('/alias of an anonymous id is retroactive', async () => {
    const anon = '0b7e3a52-9d4c-4c1e-9f61-6f3a8f8e2a10';
    await send([ev('Browse', anon, { time: T0 }), ev('Browse', anon, { time: T0 + 10 })]);
    const r = await alias(anon, 'user-2');
    assert.deepEqual([r.status, r.body], [200, { status: 1 }]);
    assert.deepEqual(await owners('Browse'), ['user-2', 'user-2']);
  });

  it('/alias of an id with nothing stored is retroactive too (events sent under it later resolve)', async () => {
    await alias('email@example.test', 'user-3');
    await send(ev('Later', 'email@example.test', { time: T0 }));
    assert.deepEqual(await owners('Later'), ['user-3']);
  });

  it('/alias of an id with events of its own applies only from the link time', async () => {
    await send(ev('Own', 'legacy-42', { time: T0 }));
    await drained(t);
    const before = Date.now();
    await alias('legacy-42', 'user-4');
    await drained(t);
    await send(ev('Own', 'legacy-42', { time: Date.now() + 1000 }));
    assert.deepEqual(await owners('Own'), ['legacy-42', 'user-4']);
    const [link] = await mirrored('legacy-42');
    assert.equal(link.canonical_id, 'user-4');
    assert.ok(link.from_time >= before);
  });

  it('silently refuses an alias already in another cluster, and links that would merge two users', async () => {
    await alias('$device:d5', 'user-5');
    let r = await alias('$device:d5', 'user-6');
    assert.deepEqual([r.status, r.body], [200, { status: 1 }]);
    await drained(t);
    assert.equal(await identity().canonicalOf(acme.project.id, '$device:d5'), 'user-5');
    // user-5 is the canonical id of a cluster: it cannot join user-6's.
    r = await alias('user-5', 'user-6');
    assert.deepEqual(r.body, { status: 1 });
    await drained(t);
    assert.equal(await identity().canonicalOf(acme.project.id, 'user-5'), 'user-5');
    // Joining through any member lands on the canonical id (flat clusters).
    await alias('$device:d7', '$device:d5');
    await drained(t);
    assert.equal(await identity().canonicalOf(acme.project.id, '$device:d7'), 'user-5');
    assert.deepEqual((await identity().clusterOf(acme.project.id, 'user-5')).sort(), ['$device:d5', '$device:d7', 'user-5']);
    // A device already linked is not moved by the /track rule either.
    await send(ev('Login', 'user-6', { $device_id: '$device:d5', $user_id: 'user-6' }));
    await drained(t);
    assert.equal(await identity().canonicalOf(acme.project.id, '$device:d5'), 'user-5');
    // Self-links are ignored.
    await alias('user-6', 'user-6');
    await drained(t);
    assert.equal(await identity().canonicalOf(acme.project.id, 'user-6'), 'user-6');
  });

  it('handles $create_alias sent to /track (what Mixpanel SDKs send) as an alias', async () => {
    await send(ev('Pre', '$device:d8', { time: T0 }));
    const r = await send({ event: '$create_alias', properties: { distinct_id: 'user-8b', alias: '$device:d8' } });
    assert.deepEqual(r.body, { status: 1, inserted: 1 });
    assert.deepEqual(await owners('Pre'), ['user-8b']);
    assert.deepEqual(await owners('$create_alias'), []);
  });

  it('resolves a batch of new links with one metadata insert, one event-store insert and one profile read', async () => {
    const deps = t.svc.deps;
    // Profiles of their own on some devices: merged into the users' profiles.
    await ingest(t, acme.project.token).post('/engage', [0, 1, 2].map((i) => ({ $distinct_id: `$device:bulk${i}`, $set: { plan: `p${i}`, seen: 'device' } })));
    await ingest(t, acme.project.token).post('/engage', { $distinct_id: 'bulk-user-0', $set: { seen: 'user' } });
    await drained(t);
    // Statements writing links to the metadata store (all inside linkIdentities' one transaction).
    const counts = { linkInserts: 0, writeLinks: 0, latestProfiles: 0 };
    const onQuery = (q: { sql: string }) => {
      if (/^\s*insert into .?identity_links\b/i.test(q.sql)) counts.linkInserts++;
    };
    deps.db.on('query', onQuery);
    // Counted around the service's own methods (the store's wrapper keeps its data-version bumps).
    const events = deps.events as Partial<EventStore>;
    const { writeLinks, latestProfiles } = deps.events;
    events.writeLinks = (rows) => { counts.writeLinks++; return writeLinks(rows); };
    events.latestProfiles = (p, ids) => { counts.latestProfiles++; return latestProfiles(p, ids); };
    try {
      const records = [];
      for (let i = 0; i < 120; i++) records.push(ev('Bulk', `bulk-user-${i}`, { $device_id: `$device:bulk${i}`, $user_id: `bulk-user-${i}`, time: T0 + i }));
      // A chain inside the batch: an alias of an id linked earlier in the same batch joins its cluster.
      records.push({ event: '$create_alias', properties: { distinct_id: '$device:bulk5', alias: 'bulk-mail-5' } });
      records.push(ev('Bulk', 'bulk-mail-5', { time: T0 + 500 }));
      await send(records);
      await drained(t);
    } finally {
      delete events.writeLinks;
      delete events.latestProfiles;
    }
    assert.deepEqual(counts, { linkInserts: 1, writeLinks: 1, latestProfiles: 1 });
    assert.equal(await identity().canonicalOf(acme.project.id, '$device:bulk119'), 'bulk-user-119');
    assert.equal(await identity().canonicalOf(acme.project.id, 'bulk-mail-5'), 'bulk-user-5');
    assert.deepEqual(await mirrored('bulk-mail-5'), [{ canonical_id: 'bulk-user-5', from_time: 0 }]);
    assert.equal((await owners('Bulk')).filter((o) => o === 'bulk-user-5').length, 2);
    const u0 = await acme.owner.get(`/api/data/users/bulk-user-0?projectId=${acme.project.id}`);
    assert.equal(u0.status, 200, u0.text);
    assert.deepEqual([u0.body.properties.plan, u0.body.properties.seen], ['p0', 'user']);
    const u2 = await acme.owner.get(`/api/data/users/bulk-user-2?projectId=${acme.project.id}`);
    assert.deepEqual([u2.body.properties.plan, u2.body.properties.seen], ['p2', 'device']);
    // The same link again (SDKs repeat it on every identified event): nothing written.
    try {
      await send(ev('Bulk', 'bulk-user-7', { $device_id: '$device:bulk7', $user_id: 'bulk-user-7', time: T0 + 7 }));
      await drained(t);
    } finally {
      deps.db.off('query', onQuery);
    }
    assert.deepEqual(counts, { linkInserts: 1, writeLinks: 1, latestProfiles: 1 });
  });

  it('refuses /alias bodies missing a field, and bad tokens', async () => {
    for (const body of [{ alias: 'a' }, { distinct_id: 'b' }, { alias: '', distinct_id: 'b' }, { alias: 3.5e400, distinct_id: 'b' }, 'x', [{ alias: 'a', distinct_id: 'b' }, {}]]) {
      const r = await ingest(t, acme.project.token).post('/alias', body);
      assert.deepEqual([r.status, r.body], [400, { status: 0, error: 'alias and distinct_id required' }], JSON.stringify(body));
    }
    const r = await ingest(t, 'bad').post('/alias', { alias: 'a', distinct_id: 'b' });
    assert.deepEqual([r.status, r.body], [401, { status: 0, error: 'invalid token' }]);
    const v = await ingest(t, acme.project.token).post('/v/0.14/alias', { alias: '$device:v14', distinct_id: 'user-v14' });
    assert.deepEqual(v.body, { status: 1 });
  });

  it('applies a redelivered batch once (idempotent applyBatch)', async () => {
    const { applyBatch } = await import('../../apps/server/src/ingestion/apply.js');
    const batch = {
      id: 'redeliver-1', kind: 'track' as const, projectId: acme.project.id, acceptedAt: T0,
      records: [{ t: 'e', id: 77, event: 'Redelivered', distinct_id: '$device:r1', time: T0, insert_id: 'r1', received_at: T0, properties: { $insert_id: 'r1' } },
        { t: 'a', alias: '$device:r1', distinct_id: 'user-r1' }],
    };
    await applyBatch(t.svc.deps, batch);
    await applyBatch(t.svc.deps, batch);
    const engage = { id: 'redeliver-2', kind: 'engage' as const, projectId: acme.project.id, acceptedAt: T0, records: [{ index: 0, distinct_id: 'user-r1', add: { n: 1 } }] };
    await applyBatch(t.svc.deps, engage);
    await applyBatch(t.svc.deps, engage);
    assert.deepEqual(await owners('Redelivered'), ['user-r1']);
    assert.equal((await mirrored('$device:r1')).length >= 1, true);
    const u = await acme.owner.get(`/api/data/users/user-r1?projectId=${acme.project.id}`);
    assert.equal(u.status, 200, u.text);
    assert.equal(u.body.properties.n, 1);
  });
});
