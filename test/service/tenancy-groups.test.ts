import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type TestService } from '../support/service.js';

/**
 * Sign-in by group (OIDC_GROUPS_CLAIM) with the test identity provider, the choice of organisation
 * (persisted, and per request with X-Tally-Organization), and the last-owner rule under two
 * concurrent demotions.
 */
forEachBackend('tenancy: groups, organisation choice, last owner', (backend) => {
  let t: TestService;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { OIDC_GROUPS_CLAIM: 'roles' });
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });
  const signIn = (sub: string, groups: unknown) => t.idp.token(sub, { email: `${sub}@example.test`, claims: { roles: groups } });

  it('a mapped group gives its role at sign-in (highest match), and it goes with the group or the mapping', async () => {
    const org = (await t.admin.post('/admin/orgs', { name: 'Grouped' })).body;
    const put = await t.admin.put(`/admin/orgs/${org.id}/groups`, { groups: [{ name: 'eng', role: 'member' }, { name: 'leads', role: 'admin' }] });
    assert.equal(put.status, 200, put.text);
    assert.equal((await t.client(await signIn('nobody', ['sales'])).get('/api/projects')).status, 403, 'no mapped group: no organisation');
    const both = await t.client(await signIn('gina', ['eng', 'leads'])).get('/api/account');
    assert.equal(both.status, 200, both.text);
    assert.equal(both.body.organization.id, org.id);
    assert.equal(both.body.role, 'admin');
    assert.deepEqual(both.body.memberships.map((m: { source: string; role: string }) => [m.role, m.source]), [['admin', 'group']]);
    // The group goes from the token: the membership goes at that sign-in.
    const fewer = await t.client(await signIn('gina', ['eng'])).get('/api/account');
    assert.equal(fewer.body.role, 'member');
    const none = await t.client(await signIn('gina', [])).get('/api/projects');
    assert.equal(none.status, 403);
    // Back in a group, then the mapping goes: removed at the PUT, before any new sign-in.
    await t.client(await signIn('gina', ['eng'])).get('/api/account');
    const members = async () => (await t.admin.get(`/admin/orgs/${org.id}/members`)).body.map((m: { email: string; source: string }) => `${m.email}:${m.source}`);
    assert.deepEqual(await members(), ['gina@example.test:group']);
    await t.admin.put(`/admin/orgs/${org.id}/groups`, { groups: [{ name: 'leads', role: 'admin' }] });
    assert.deepEqual(await members(), []);
    // A token without the claim holds no groups: the group-derived membership goes too.
    await t.admin.put(`/admin/orgs/${org.id}/groups`, { groups: [{ name: 'eng', role: 'member' }, { name: 'leads', role: 'admin' }] });
    assert.equal((await t.client(await signIn('gina', ['eng'])).get('/api/account')).body.role, 'member');
    const noClaim = await t.idp.token('gina', { email: 'gina@example.test' });
    assert.equal((await t.client(noClaim).get('/api/projects')).status, 403);
    // The default claim name is not read here (OIDC_GROUPS_CLAIM=roles).
    const wrongClaim = await t.idp.token('hal', { email: 'hal@example.test', claims: { groups: ['leads'] } });
    assert.equal((await t.client(wrongClaim).get('/api/projects')).status, 403);
    // An invited membership is not replaced by a group's.
    await t.admin.post(`/admin/orgs/${org.id}/members`, { email: 'ivy@example.test', role: 'viewer' });
    const ivy = await t.client(await signIn('ivy', ['leads'])).get('/api/account');
    assert.deepEqual([ivy.body.role, ivy.body.memberships[0].source], ['viewer', 'invite']);
  });

  it('a user in several organisations chooses one (persisted) or names one per request', async () => {
    const a = await createTenant(t, 'choose-a');
    const b = (await t.admin.post('/admin/orgs', { name: 'choose-b' })).body;
    const email = `owner.${a.org.id}.choosea@example.test`;
    await t.admin.post(`/admin/orgs/${b.id}/members`, { email, role: 'viewer' });
    const me = t.client(a.tokens.owner);
    const first = await me.get('/api/account');
    assert.equal(first.body.organization.id, a.org.id, 'the oldest membership by default');
    assert.equal(first.body.memberships.length, 2);
    const header = await me.get('/api/account', { headers: { 'x-tally-organization': String(b.id) } });
    assert.deepEqual([header.body.organization.id, header.body.role], [b.id, 'viewer']);
    const stranger = (await t.admin.post('/admin/orgs', { name: 'stranger' })).body;
    assert.equal((await me.get('/api/projects', { headers: { 'x-tally-organization': String(stranger.id) } })).status, 403);
    assert.equal((await me.get('/api/projects', { headers: { 'x-tally-organization': 'abc' } })).status, 400);
    assert.equal((await me.post('/api/account/current-organization', { organizationId: stranger.id })).status, 403);
    assert.equal((await me.post('/api/account/current-organization', { organizationId: 99_999_999 })).status, 404);
    const chosen = await me.post('/api/account/current-organization', { organizationId: b.id });
    assert.equal(chosen.status, 200, chosen.text);
    const after = await me.get('/api/account');
    assert.deepEqual([after.body.organization.id, after.body.role], [b.id, 'viewer']);
    assert.equal((await me.post('/api/org/members', { email: 'x@example.test', role: 'viewer' })).status, 403, 'acts as a viewer in b now');
  });

  it('two owners demoting each other at once: exactly one succeeds, the other gets 409 last owner', async function () {
    this.timeout(30_000);
    const x = await createTenant(t, 'race');
    const second = 'second.owner@example.test';
    await t.admin.post(`/admin/orgs/${x.org.id}/members`, { email: second, role: 'owner' });
    const secondToken = await t.idp.token('second-owner', { email: second });
    const one = t.client(x.tokens.owner);
    const two = t.client(secondToken);
    const ids = async () => {
      const list = (await one.get('/api/org/members')).body as Array<{ email: string; user_id: number }>;
      return { first: list.find((m) => m.email.startsWith('owner.'))!.user_id, second: list.find((m) => m.email === second)!.user_id };
    };
    const { first, second: secondId } = await (async () => { await two.get('/api/account'); return ids(); })();
    const [r1, r2] = await Promise.all([
      one.patch(`/api/org/members/${secondId}`, { role: 'admin' }),
      two.patch(`/api/org/members/${first}`, { role: 'admin' }),
    ]);
    const statuses = [r1.status, r2.status].sort();
    assert.ok(statuses[0] === 200 && (statuses[1] === 409 || statuses[1] === 403), `statuses ${statuses}: ${r1.text} ${r2.text}`);
    const owners = (await t.admin.get(`/admin/orgs/${x.org.id}/members`)).body.filter((m: { role: string; user_id: number | null }) => m.role === 'owner' && m.user_id !== null);
    assert.equal(owners.length, 1, 'one owner is left');
  });
});
