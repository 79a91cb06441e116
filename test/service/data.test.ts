import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { drained, ev, ingest } from '../support/ingestion.js';

forEachBackend('data browsing', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let globex: Tenant;
  const now = Date.now();
  const MIN = 60_000;
  const DAY = 86_400_000;

  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Acme');
    globex = await createTenant(t, 'Globex');
    const send = (body: unknown) => ingest(t, acme.project.token).post('/track', body);
    // Anonymous device: two sessions 40 minutes apart, later linked to alice.
    await send([
      ev('Page', '$device:a', { time: now - 100 * MIN, path: '/home', $insert_id: 'p1' }),
      ev('Page', '$device:a', { time: now - 90 * MIN, path: '/pricing', $insert_id: 'p2' }),
      ev('Page', '$device:a', { time: now - 50 * MIN, path: '/home', $insert_id: 'p3' }),
      ev('Page', '$device:a', { time: now - 50 * MIN, path: '/home', $insert_id: 'p3' }), // duplicate
    ]);
    await send(ev('Signup', 'alice', { time: now - 49 * MIN, $device_id: '$device:a', $user_id: 'alice', plan: 'pro' }));
    await send([ev('Page', 'bob', { time: now - 40 * DAY, path: '/old' }), ev('Purchase', 'bob', { time: now - 2 * MIN, amount: 12 })]);
    await ingest(t, acme.project.token).post('/engage', [
      { distinct_id: '$device:a', $set: { name: 'Alice A', city: 'Paris' } },
      { distinct_id: 'carol', $set: { name: 'Carol' } },
    ]);
    await ingest(t, globex.project.token).post('/track', ev('Page', 'zed'));
    await drained(t);
  });

  const get = async (path: string, tenant = acme) => {
    const r = await tenant.owner.get(path + (path.includes('?') ? '&' : '?') + `projectId=${tenant.project.id}`);
    assert.equal(r.status, 200, r.text);
    return r.body;
  };

  it('lists events newest first, identity-resolved, deduplicated, with filters and paging', async () => {
    const all = await get('/api/data/events');
    assert.equal(all.total, 6);
    assert.deepEqual(all.events.map((e: any) => e.time), [...all.events.map((e: any) => e.time)].sort((a, b) => b - a));
    assert.deepEqual(all.events.filter((e: any) => e.event === 'Page' && e.time > now - DAY).map((e: any) => e.distinct_id), ['alice', 'alice', 'alice']);
    const page = await get('/api/data/events?limit=2&offset=1');
    assert.equal(page.total, 6);
    assert.deepEqual(page.events.map((e: any) => e.id), all.events.slice(1, 3).map((e: any) => e.id));
    const alice = await get(`/api/data/events?distinctId=${encodeURIComponent('$device:a')}`);
    assert.equal(alice.total, 4);
    const pages = await get('/api/data/events?event=Page');
    assert.equal(pages.total, 4);
    const today = new Date(now).toISOString().slice(0, 10);
    const recent = await get(`/api/data/events?from=${today}&to=${today}`);
    assert.ok(recent.events.every((e: any) => e.time >= Date.parse(today)));
    assert.ok(recent.total >= 1 && recent.total <= 5);
    const ms = await get(`/api/data/events?from=${now - 45 * MIN}&to=${now}`);
    assert.deepEqual(ms.events.map((e: any) => e.event), ['Purchase']);
    assert.equal((await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&limit=1001`)).status, 400);
    // Dates are parsed strictly: what is not a calendar day or a safe Unix ms is refused, never ignored or a 5xx.
    for (const [q, path] of [['from=abc', 'from'], ['from=1e20', 'from'], ['to=2024-02-30', 'to'], ['from=99999999999999999', 'from'], ['to=2024-13-01', 'to']]) {
      const r = await acme.owner.get(`/api/data/events?projectId=${acme.project.id}&${q}`);
      assert.equal(r.status, 400, `${q}: ${r.text}`);
      assert.match(r.body.error, new RegExp(`^${path}: `), q);
    }
    // Tenancy: another organisation's project is forbidden.
    assert.equal((await globex.owner.get(`/api/data/events?projectId=${acme.project.id}`)).status, 403);
    assert.equal((await t.anon.get('/api/data/events')).status, 401);
  });

  it('counts event names over the lifetime and the last 30 days', async () => {
    const names = await get('/api/data/event-names');
    const page = names.find((n: any) => n.name === 'Page');
    assert.deepEqual({ ...page, last_seen: undefined }, { name: 'Page', count: 4, recent_count: 3, last_seen: undefined });
    assert.equal(page.last_seen, now - 50 * MIN);
    assert.deepEqual(names.map((n: any) => n.name).sort(), ['Page', 'Purchase', 'Signup']);
  });

  it('summarises property keys with sample values', async () => {
    const props = await get('/api/data/properties?event=Page');
    const path = props.find((p: any) => p.key === 'path');
    assert.equal(path.count, 4);
    assert.deepEqual(path.sampleValues, ['/home', '/old', '/pricing']);
    assert.equal(props.some((p: any) => p.key === 'amount'), false);
    const all = await get('/api/data/properties');
    assert.equal(all.find((p: any) => p.key === 'amount').count, 1);
  });

  it('lists users with profiles, first/last seen and counts, and searches them', async () => {
    const { users, total } = await get('/api/data/users');
    assert.equal(total, 3);
    assert.deepEqual(users.map((u: any) => u.distinct_id), ['bob', 'alice', 'carol']);
    const alice = users[1];
    assert.deepEqual(
      { ...alice, properties: undefined },
      { distinct_id: 'alice', properties: undefined, first_seen: now - 100 * MIN, last_seen: now - 49 * MIN, event_count: 4 },
    );
    assert.equal(alice.properties.name, 'Alice A');
    assert.deepEqual([users[2].event_count, users[2].first_seen, users[2].last_seen], [0, null, null]);
    assert.deepEqual((await get('/api/data/users?search=paris')).users.map((u: any) => u.distinct_id), ['alice']);
    assert.deepEqual((await get('/api/data/users?search=BO')).users.map((u: any) => u.distinct_id), ['bob']);
    const paged = await get('/api/data/users?limit=1&offset=1');
    assert.deepEqual([paged.total, paged.users.map((u: any) => u.distinct_id)], [3, ['alice']]);
  });

  it('shows one user with sessions over the whole history and their events', async () => {
    const d = await get(`/api/data/users/${encodeURIComponent('$device:a')}`);
    assert.equal(d.distinct_id, 'alice');
    assert.equal(d.event_count, 4);
    assert.equal(d.sessions, 2, '100 and 90 minutes ago, then 50 and 49 minutes ago');
    assert.equal(d.events.length, 4);
    assert.ok(d.events.every((e: any) => e.distinct_id === 'alice'));
    assert.deepEqual([d.distinct_ids[0], [...d.distinct_ids].sort()], ['alice', ['$device:a', 'alice']]);
    const bob = await get('/api/data/users/bob');
    assert.equal(bob.sessions, 2);
    const carol = await get('/api/data/users/carol');
    assert.deepEqual([carol.sessions, carol.events, carol.properties.name], [0, [], 'Carol']);
    assert.equal((await acme.owner.get(`/api/data/users/nobody?projectId=${acme.project.id}`)).status, 404);
  });

  it('reports stats', async () => {
    const s = await get('/api/data/stats');
    const today = Math.floor(now / DAY) * DAY;
    const todayCount = [now - 100 * MIN, now - 90 * MIN, now - 50 * MIN, now - 49 * MIN, now - 2 * MIN].filter((x) => x >= today).length;
    assert.deepEqual(s, { events: 6, users: 2, profiles: 2, event_names: 3, events_today: todayCount, sessions: 3 });
    const g = await get('/api/data/stats', globex);
    assert.deepEqual([g.events, g.users, g.profiles], [1, 1, 0]);
  });
});
