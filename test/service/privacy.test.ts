import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { linkIdentities, mirrorLinks } from '../../apps/server/src/identity/links.js';
import type { Deps } from '../../apps/server/src/deps.js';
import type { StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { eventPropLists } from '../../apps/server/src/ingestion/records.js';
import { drained, ev, ingest } from '../support/ingestion.js';

const T0 = Date.UTC(2024, 0, 1);
const H = 3_600_000;
let nextId = 1;

/** alice (with a linked device id), bob and carol; the same rows go into a control project without alice. */
function dataset(projectId: number, withAlice: boolean): StoredEvent[] {
  const rows: Array<[string, string, number, Record<string, string>]> = [
    ['view', 'bob', T0 + 1 * H, { country: 'de' }],
    ['buy', 'bob', T0 + 25 * H, {}],
    ['view', 'carol', T0 + 2 * H, { country: 'fr' }],
    ['view', 'carol', T0 + 26 * H, { country: 'fr' }],
  ];
  if (withAlice) {
    rows.push(['view', '$device:alice-phone', T0 + 1 * H, { country: 'fr' }], ['view', 'alice', T0 + 3 * H, { country: 'fr' }],
      ['buy', 'alice', T0 + 27 * H, { plan: 'pro' }], ['view', 'alice', T0 + 28 * H, { country: 'fr' }]);
  }
  return rows.map(([event, distinct_id, time, props], i) => ({
    project_id: projectId, id: nextId++, event, distinct_id, time, insert_id: `i${i}-${distinct_id}`, 
    ...eventPropLists(props), received_at: time,
  }));
}

async function load(deps: Deps, projectId: number, withAlice: boolean) {
  await deps.events.writeEvents(projectId, dataset(projectId, withAlice));
  const people = withAlice ? ['alice', 'bob'] : ['bob'];
  await deps.events.writeProfiles(people.map((p) => ({
    project_id: projectId, distinct_id: p, properties: JSON.stringify({ name: p }), prop_keys: ['name'], prop_values: [p], updated_at: 1, deleted: false, batch_id: 'b1',
  })));
  if (withAlice) {
    const { made } = await linkIdentities(deps, projectId, [{ alias: '$device:alice-phone', distinctId: 'alice', retroactive: 'always', at: T0 }]);
    assert.equal(made.length, 1);
    await mirrorLinks(deps, made);
  }
}

async function waitDone(t: TestService, client: ReturnType<TestService['client']>, id: number) {
  for (let i = 0; i < 600; i++) {
    const r = await client.get(`/api/privacy/requests/${id}`);
    assert.equal(r.status, 200, r.text);
    if (r.body.status === 'completed' || r.body.status === 'failed') return r.body;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`request ${id} did not finish`);
}

const ndjson = (text: string) => text.split('\n').filter(Boolean).map((l) => JSON.parse(l));

forEachBackend('privacy requests', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  let pid: number;
  let control: number;
  before(async function () {
    this.timeout(120_000);
    t = await startTestService(backend);
    tenant = await createTenant(t, 'priv');
    other = await createTenant(t, 'priv-other');
    pid = tenant.project.id;
    control = (await t.admin.post(`/admin/orgs/${tenant.org.id}/projects`, { name: 'control' })).body.id;
    await load(t.svc.deps, pid, true);
    await load(t.svc.deps, control, false);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('bad input and roles: clear 4xx, nothing queued, no audit row', async () => {
    const owner = t.client(tenant.tokens.owner);
    for (const [body, re] of [
      [{ type: 'delete', distinctIds: [] }, /^distinctIds: /],
      [{ type: 'delete', distinctIds: Array.from({ length: 101 }, (_, i) => `u${i}`) }, /^distinctIds: /],
      [{ type: 'delete', distinctIds: [''] }, /^distinctIds\.0: /],
      [{ type: 'erase', distinctIds: ['alice'] }, /^type: /],
      [{ distinctIds: ['alice'] }, /^type: /],
      [{ type: 'access', distinctIds: ['alice'], extra: 1 }, /extra/],
    ] as const) {
      const r = await owner.post(`/api/privacy/requests?projectId=${pid}`, body);
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error, re);
    }
    for (const role of ['admin', 'member', 'viewer'] as const) {
      const r = await t.client(tenant.tokens[role]).post(`/api/privacy/requests?projectId=${pid}`, { type: 'delete', distinctIds: ['alice'] });
      assert.equal(r.status, 403, `${role}: ${r.text}`);
    }
    for (const role of ['member', 'viewer'] as const) {
      const c = t.client(tenant.tokens[role]);
      assert.equal((await c.post(`/api/privacy/requests?projectId=${pid}`, { type: 'access', distinctIds: ['alice'] })).status, 403);
      assert.equal((await c.get(`/api/privacy/requests?projectId=${pid}`)).status, 403);
    }
    assert.equal((await t.anon.get(`/api/privacy/requests?projectId=${pid}`)).status, 401);
    // another organisation's owner cannot name this project
    const foreign = await t.client(other.tokens.owner).post(`/api/privacy/requests?projectId=${pid}`, { type: 'delete', distinctIds: ['alice'] });
    assert.ok(foreign.status === 403 || foreign.status === 404, foreign.text);
    assert.deepEqual((await owner.get(`/api/privacy/requests?projectId=${pid}`)).body, []);
    assert.equal((await t.svc.deps.db('privacy_audit').count({ n: '*' }))[0].n, 0);
  });

  it('access: completes, downloads the whole cluster as NDJSON; unknown ids give an empty download', async function () {
    this.timeout(60_000);
    const admin = t.client(tenant.tokens.admin);
    const r = await admin.post(`/api/privacy/requests?projectId=${pid}`, { type: 'access', distinctIds: ['$device:alice-phone'] });
    assert.equal(r.status, 202, r.text);
    assert.equal(r.body.status, 'pending');
    assert.equal(r.body.type, 'access');
    assert.equal(r.body.completed_at, null);
    const done = await waitDone(t, admin, r.body.id);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.ok(done.completed_at >= done.created_at);
    const dl = await admin.get(`/api/privacy/requests/${r.body.id}/download`);
    assert.equal(dl.status, 200, dl.text);
    assert.match(String(dl.headers.get('content-type')), /ndjson/);
    const rows = ndjson(dl.text);
    const events = rows.filter((x) => x.kind === 'event');
    assert.deepEqual(events.map((e) => [e.distinct_id, e.event, e.time]), [
      ['$device:alice-phone', 'view', T0 + 1 * H], ['alice', 'view', T0 + 3 * H], ['alice', 'buy', T0 + 27 * H], ['alice', 'view', T0 + 28 * H],
    ]);
    assert.deepEqual(events[2].properties, { plan: 'pro' });
    assert.deepEqual(rows.filter((x) => x.kind === 'profile').map((p) => [p.distinct_id, p.properties]), [['alice', { name: 'alice' }]]);
    assert.deepEqual(rows.filter((x) => x.kind === 'identity_link').map((l) => [l.distinct_id, l.canonical_id]), [['$device:alice-phone', 'alice']]);
    assert.ok(!dl.text.includes('bob') && !dl.text.includes('carol'), 'nobody else is in the download');

    const none = await admin.post(`/api/privacy/requests?projectId=${pid}`, { type: 'export', distinctIds: ['nobody-at-all'] });
    assert.equal((await waitDone(t, admin, none.body.id)).status, 'completed');
    const empty = await admin.get(`/api/privacy/requests/${none.body.id}/download`);
    assert.equal(empty.status, 200);
    assert.equal(empty.text, '');
    // audit rows name the actor and the hashed ids, never the ids
    const audit = await t.svc.deps.db('privacy_audit').where({ request_id: r.body.id });
    assert.equal(audit.length, 1);
    assert.deepEqual(JSON.parse(audit[0].id_hashes), [createHash('sha256').update('$device:alice-phone').digest('hex')]);
    assert.ok(audit[0].actor_user_id > 0);
    assert.ok(!JSON.stringify(audit).includes('alice'));
    // other organisations see nothing
    assert.equal((await t.client(other.tokens.owner).get(`/api/privacy/requests/${r.body.id}`)).status, 404);
  });

  it("delete: the cluster is gone from events, profiles, links and browsing; others' numbers equal a project without them", async function () {
    this.timeout(180_000);
    const owner = t.client(tenant.tokens.owner);
    const seg = (projectId: number, type: string) => owner.post('/api/query/segmentation', { projectId, event: 'view', from: '2024-01-01', to: '2024-01-03', unit: 'day', type, breakdown: 'country' });
    const before = await seg(pid, 'unique');
    assert.notDeepEqual(before.body.series, (await seg(control, 'unique')).body.series, 'alice counts before the delete');
    const cohort = await owner.post('/api/cohorts', { projectId: pid, name: 'buyers', definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'buy', op: 'gte', count: 1, windowDays: 0 }] } });
    assert.equal(cohort.status, 201, cohort.text);
    const members = async () => ((await owner.get(`/api/cohorts/${cohort.body.id}/members`)).body.members as string[]).sort();
    assert.deepEqual(await members(), ['alice', 'bob']);
    const flag = await owner.post('/api/flags', { projectId: pid, key: 'buyers-only', name: 'buyers only', rules: [{ rolloutPct: 100, cohortId: cohort.body.id }] });
    assert.equal(flag.status, 201, flag.text);
    const enabledFor = async (id: string) => (await t.anon.post('/flags/evaluate', { distinct_id: id, flag_keys: ['buyers-only'] }, { headers: { 'x-service-token': tenant.project.token } })).body.flags['buyers-only'].enabled;
    assert.deepEqual([await enabledFor('$device:alice-phone'), await enabledFor('bob')], [true, true]);
    const r = await owner.post('/api/privacy/requests', { projectId: pid, type: 'delete', distinctIds: ['alice'] });
    assert.equal(r.status, 202, r.text);
    const done = await waitDone(t, owner, r.body.id);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    const deps = t.svc.deps;
    for (const id of ['alice', '$device:alice-phone']) assert.equal((await deps.events.idsWithEvents(pid, [id])).size === 1, false, id);
    assert.deepEqual(await deps.events.latestProfiles(pid, ['alice']), []);
    assert.deepEqual(await deps.db('identity_links').where({ project_id: pid }), []);
    const final = deps.events.dialect === 'clickhouse' ? ' FINAL' : '';
    assert.deepEqual(await deps.events.query(`SELECT distinct_id FROM identity_links${final} WHERE project_id = ${pid}`), []);
    assert.deepEqual(await deps.events.query(`SELECT distinct_id FROM profiles${final} WHERE project_id = ${pid} AND distinct_id = 'alice'`), []);
    for (const type of ['unique', 'total']) {
      const a = await seg(pid, type);
      const b = await seg(control, type);
      assert.equal(a.status, 200, a.text);
      assert.deepEqual(a.body.series, b.body.series, `${type} segmentation equals the project without alice`);
    }
    const browse = await owner.get(`/api/data/events?projectId=${pid}&from=2024-01-01&to=2024-01-03`);
    assert.equal(browse.status, 200, browse.text);
    assert.equal(browse.body.total, 4);
    assert.ok(!browse.text.includes('alice'));
    const users = await owner.get(`/api/data/users?projectId=${pid}`);
    assert.ok(!users.text.includes('alice'), users.text);
    assert.deepEqual(await members(), ['bob'], 'the cohort no longer holds the person');
    assert.deepEqual([await enabledFor('$device:alice-phone'), await enabledFor('alice'), await enabledFor('bob')], [false, false, true], 'flag evaluation no longer sees the person');
    // the bob/carol rows were untouched; a completed delete keeps no ids
    assert.equal((await deps.events.countEvents([pid])).get(pid), 4);
    const stored = await deps.db('privacy_requests').where({ id: r.body.id }).first();
    assert.equal(stored.distinct_ids, '[]');
    const sha = (x: string) => createHash('sha256').update(x).digest('hex');
    assert.deepEqual(JSON.parse(stored.cluster_ids).sort(), [sha('alice'), sha('$device:alice-phone')].sort(), 'only hashes of the cluster stay');
    // an access request after the delete finds nothing
    const after = await owner.post(`/api/privacy/requests?projectId=${pid}`, { type: 'access', distinctIds: ['alice'] });
    await waitDone(t, owner, after.body.id);
    assert.equal((await owner.get(`/api/privacy/requests/${after.body.id}/download`)).text, '');
  });

  it('a request left running by a dead process is taken over and completes', async function () {
    this.timeout(60_000);
    const db = t.svc.deps.db;
    const [{ id }] = await db('privacy_requests').insert({
      project_id: pid, type: 'access', status: 'running', distinct_ids: JSON.stringify(['bob']), attempts: 1, created_at: Date.now() - 3_600_000,
      started_at: Date.now() - 3_600_000, heartbeat_at: Date.now() - 3_600_000,
    }).returning('id');
    const done = await waitDone(t, t.client(tenant.tokens.owner), Number(id));
    assert.equal(done.status, 'completed');
    const rows = ndjson((await t.client(tenant.tokens.owner).get(`/api/privacy/requests/${id}/download`)).text);
    assert.equal(rows.filter((x) => x.kind === 'event').length, 2);
  });

  it('tombstones: events and links naming a deleted cluster are dropped at ingestion; others are kept', async function () {
    this.timeout(120_000);
    const send = (body: unknown) => ingest(t, tenant.project.token).post('/track', body);
    const deps = t.svc.deps;
    const r1 = await send([
      ev('view', 'dora', { $device_id: '$device:dora-tab', $user_id: 'dora', time: T0 + 5 * H }),
      ev('view', '$device:dora-tab', { time: T0 + 4 * H }),
    ]);
    assert.equal(r1.status, 200, r1.text);
    await drained(t);
    assert.equal((await deps.events.idsWithEvents(pid, ['$device:dora-tab'])).size === 1, true);
    const owner = t.client(tenant.tokens.owner);
    const del = await owner.post(`/api/privacy/requests?projectId=${pid}`, { type: 'delete', distinctIds: ['dora'] });
    assert.equal((await waitDone(t, owner, del.body.id)).status, 'completed');
    assert.equal((await deps.events.idsWithEvents(pid, ['$device:dora-tab'])).size === 1, false);
    // arriving after the delete: the user id, the device id (found through the cluster), an alias onto dora
    await send([ev('buy', 'dora', { time: T0 + 30 * H }), ev('view', '$device:dora-tab', { time: T0 + 31 * H }), ev('view', 'erin', { time: T0 + 32 * H })]);
    await ingest(t, tenant.project.token).post('/alias', { alias: 'dora-new-login', distinct_id: 'dora' });
    await drained(t);
    for (const id of ['dora', '$device:dora-tab']) assert.equal((await deps.events.idsWithEvents(pid, [id])).size === 1, false, id);
    assert.equal((await deps.events.idsWithEvents(pid, ['erin'])).size === 1, true, 'someone else in the same batch is stored');
    assert.equal(await deps.db('identity_links').where({ project_id: pid, distinct_id: 'dora-new-login' }).first(), undefined);
    // the completed request keeps only hashes
    const stored = await deps.db('privacy_requests').where({ id: del.body.id }).first();
    assert.ok(!stored.cluster_ids.includes('dora'));
    assert.equal(JSON.parse(stored.cluster_ids).length, 2);
  });
});
