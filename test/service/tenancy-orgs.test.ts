import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type TestService } from '../support/service.js';

const OPERATOR_KEY = 'orgs-operator-key';
const ORG = 'Organization/acme';
const as = (resource: string) => ({ headers: { 'x-tally-resource': resource } });

/**
 * Organisations managed by resources (the operator's Organization and ApiToken kinds): creation,
 * listing by owner, adoption and release, membership lists owned by a resource (hand edits 409),
 * deletion (409 while projects remain), machine tokens a resource mints and revokes.
 */
forEachBackend('tenancy: managed organisations', (backend) => {
  let t: TestService;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { OPERATOR_KEY });
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });
  const op = () => t.client(OPERATOR_KEY);
  /** An organisation made by hand joins the boundary: an Organization adopts it and records its namespaces. */
  const adoptWith = async (orgId: number, resource: string, namespaces: string[]) => {
    assert.equal((await op().post(`/admin/orgs/${orgId}/adopt`, undefined, as(resource))).status, 200);
    assert.equal((await op().patch(`/admin/orgs/${orgId}`, { namespaces }, as(resource))).status, 200);
  };

  it('create managed, list by managedBy, patch only through its resource, adopt, release', async () => {
    const created = await op().post('/admin/orgs', { name: 'Acme', monthlyEventQuota: 1000 }, as(ORG));
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.managed_by, ORG);
    assert.equal(created.body.members_managed_by, null);
    const listed = await op().get(`/admin/orgs?managedBy=${encodeURIComponent(ORG)}`);
    assert.deepEqual(listed.body.map((o: { id: number }) => o.id), [created.body.id]);
    assert.deepEqual((await op().get('/admin/orgs?managedBy=Organization%2Fnone')).body, []);
    const id = created.body.id;
    const hand = await t.admin.patch(`/admin/orgs/${id}`, { name: 'Hand' });
    assert.equal(hand.status, 409);
    assert.deepEqual(hand.body, { error: 'managed by resource', resource: ORG });
    assert.equal((await op().patch(`/admin/orgs/${id}`, { monthlyEventQuota: 5 }, as('Organization/other'))).status, 409);
    const patched = await op().patch(`/admin/orgs/${id}`, { monthlyEventQuota: 5 }, as(ORG));
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.monthly_event_quota, 5);
    // Adoption: another resource is refused; after release anyone may adopt.
    assert.equal((await op().post(`/admin/orgs/${id}/adopt`, undefined, as('Organization/thief'))).status, 409);
    assert.equal((await op().post(`/admin/orgs/${id}/adopt`)).status, 400, 'adopt needs the header');
    assert.equal((await op().post(`/admin/orgs/999999/adopt`, undefined, as(ORG))).status, 404);
    const released = await op().post(`/admin/orgs/${id}/release`, undefined, as(ORG));
    assert.equal(released.status, 200, released.text);
    assert.equal(released.body.managed_by, null);
    const adopted = await op().post(`/admin/orgs/${id}/adopt`, undefined, as('Organization/acme-2'));
    assert.equal(adopted.status, 200);
    assert.equal((await t.admin.get(`/admin/orgs/${id}`)).body.managed_by, 'Organization/acme-2');
    assert.equal((await t.admin.post('/admin/orgs', { name: 'x' }, as('not a resource'))).status, 400);
  });

  it('a membership list owned by a resource: replaced in one call, hand edits 409, given back', async () => {
    const tenant = await createTenant(t, 'members');
    const id = tenant.org.id;
    await adoptWith(id, ORG, []);
    const ownerEmail = `owner.${id}.members@example.test`;
    const put = await op().put(`/admin/orgs/${id}/members`, { members: [{ email: ownerEmail, role: 'owner' }, { email: 'new@example.test', role: 'viewer' }] }, as(ORG));
    assert.equal(put.status, 200, put.text);
    const emails = put.body.map((m: { email: string; role: string; source: string }) => `${m.email}:${m.role}:${m.source}`).sort();
    assert.deepEqual(emails, [`new@example.test:viewer:invite`, `${ownerEmail}:owner:invite`]);
    assert.equal((await t.admin.get(`/admin/orgs/${id}`)).body.members_managed_by, ORG);
    // Hand edits: people and the superadmin without the header.
    const viaApi = await tenant.owner.post('/api/org/members', { email: 'hand@example.test', role: 'member' });
    assert.equal(viaApi.status, 409, viaApi.text);
    assert.deepEqual(viaApi.body, { error: 'managed by resource', resource: ORG });
    assert.equal((await t.admin.post(`/admin/orgs/${id}/members`, { email: 'hand@example.test', role: 'member' })).status, 409);
    assert.equal((await op().put(`/admin/orgs/${id}/members`, { members: [] }, as('Organization/other'))).status, 409);
    assert.equal((await op().put(`/admin/orgs/${id}/members`, { members: [] })).status, 400, 'a body without the header');
    const dup = await op().put(`/admin/orgs/${id}/members`, { members: [{ email: 'a@x.test', role: 'viewer' }, { email: 'A@x.test', role: 'admin' }] }, as(ORG));
    assert.equal(dup.status, 400);
    assert.match(dup.body.error, /members\.1\.email: listed twice/);
    assert.equal((await t.admin.get(`/admin/orgs/${id}/members`)).body.length, 2, 'a refused body changes nothing');
    const back = await op().delete(`/admin/orgs/${id}/members-management`, as(ORG));
    assert.equal(back.status, 200, back.text);
    assert.equal((await tenant.owner.post('/api/org/members', { email: 'hand@example.test', role: 'member' })).status, 201);
  });

  it('delete: 409 while it has projects, then memberships, groups and tokens go with it', async () => {
    const org = (await op().post('/admin/orgs', { name: 'Doomed', namespaces: ['doomed'] }, as('Organization/doomed'))).body;
    const project = (await op().post(`/admin/orgs/${org.id}/projects`, { name: 'p' }, as('Project/doomed/p'))).body;
    await op().post(`/admin/orgs/${org.id}/members`, { email: 'x@doomed.test', role: 'admin' }, as('Organization/doomed'));
    await op().put(`/admin/orgs/${org.id}/groups`, { groups: [{ name: 'doomers', role: 'member' }] }, as('Organization/doomed'));
    const token = (await op().post(`/admin/orgs/${org.id}/tokens`, { name: 'ci', role: 'member' }, as('ApiToken/doomed/ci'))).body.token;
    const refused = await op().delete(`/admin/orgs/${org.id}`, as('Organization/doomed'));
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error, 'organization has projects');
    assert.equal((await op().delete(`/api/projects/${project.id}`, as('Project/doomed/p'))).status, 200);
    assert.equal((await t.admin.delete(`/admin/orgs/${org.id}`)).status, 409, 'managed: only its resource deletes it');
    assert.equal((await op().delete(`/admin/orgs/${org.id}`, as('Organization/doomed'))).status, 200);
    assert.equal((await t.admin.get(`/admin/orgs/${org.id}`)).status, 404);
    assert.equal((await t.client(token).get('/api/projects')).status, 401, 'its machine tokens are gone');
  });

  it('machine tokens minted by a resource: listed by it, revoked only through it', async () => {
    const tenant = await createTenant(t, 'tokens');
    const id = tenant.org.id;
    await adoptWith(id, 'Organization/tokens', ['ci']);
    const owner = await op().post(`/admin/orgs/${id}/tokens`, { name: 'x', role: 'owner' }, as('ApiToken/ci/x'));
    assert.equal(owner.status, 400, 'a resource mints no owner token');
    const minted = await op().post(`/admin/orgs/${id}/tokens`, { name: 'ci', role: 'member' }, as('ApiToken/ci/deploy'));
    assert.equal(minted.status, 201, minted.text);
    assert.equal(minted.body.managed_by, 'ApiToken/ci/deploy');
    assert.match(minted.body.token, /^tly_/);
    assert.equal((await t.client(minted.body.token).get('/api/projects')).status, 200);
    const listed = await op().get(`/admin/orgs/${id}/tokens?managedBy=${encodeURIComponent('ApiToken/ci/deploy')}`);
    assert.deepEqual(listed.body.map((x: { id: number; token: null }) => [x.id, x.token]), [[minted.body.id, null]]);
    const byHand = await tenant.owner.delete(`/api/org/tokens/${minted.body.id}`);
    assert.equal(byHand.status, 409);
    assert.deepEqual(byHand.body, { error: 'managed by resource', resource: 'ApiToken/ci/deploy' });
    assert.equal((await op().delete(`/admin/orgs/${id}/tokens/${minted.body.id}`, as('ApiToken/ci/other'))).status, 409);
    assert.equal((await op().delete(`/admin/orgs/${id}/tokens/999999`, as('ApiToken/ci/deploy'))).status, 404);
    assert.equal((await op().delete(`/admin/orgs/${id}/tokens/${minted.body.id}`, as('ApiToken/ci/deploy'))).status, 200);
    assert.equal((await t.client(minted.body.token).get('/api/projects')).status, 401, 'revoked at once');
  });

  it('projects: adopt by a resource, 409 for another, create and patch carry retentionDays and rateLimit', async () => {
    const tenant = await createTenant(t, 'adopt');
    const pid = tenant.project.id;
    await adoptWith(tenant.org.id, 'Organization/adopt', ['team', 'other']);
    const adopted = await op().post(`/api/projects/${pid}/adopt`, undefined, as('Project/team/web'));
    assert.equal(adopted.status, 200, adopted.text);
    assert.equal(adopted.body.managed_by, 'Project/team/web');
    assert.equal((await op().post(`/api/projects/${pid}/adopt`, undefined, as('Project/other/web'))).status, 409);
    assert.equal((await op().post(`/api/projects/999999/adopt`, undefined, as('Project/team/web'))).status, 404);
    const created = await op().post(`/admin/orgs/${tenant.org.id}/projects`, { name: 'limited', retentionDays: 30, rateLimit: { requestsPer10Seconds: 50 } }, as('Project/team/l'));
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.retention_days, 30);
    assert.deepEqual(created.body.rate_limit, { requestsPer10Seconds: 50 });
    for (const bad of [{ retentionDays: 0 }, { retentionDays: 3651 }, { retentionDays: 1.5 }, { rateLimit: { requestsPer10Seconds: 0 } }, { rateLimit: {} }]) {
      const res = await op().patch(`/api/projects/${created.body.id}`, bad, as('Project/team/l'));
      assert.equal(res.status, 400, JSON.stringify(bad));
    }
    assert.equal((await t.admin.get(`/api/projects/${created.body.id}`)).body.retention_days, 30, 'refused bodies change nothing');
    // An installation without Kubernetes: an admin sets retention on an unmanaged project.
    const admin = t.client(tenant.tokens.admin);
    const own = (await admin.post('/api/projects', { name: 'plain' })).body;
    const set = await admin.patch(`/api/projects/${own.id}`, { retentionDays: 7, rateLimit: null });
    assert.equal(set.status, 200, set.text);
    assert.equal(set.body.retention_days, 7);
    assert.equal(set.body.name, 'plain');
    assert.equal((await t.client(tenant.tokens.member).patch(`/api/projects/${own.id}`, { retentionDays: 3 })).status, 403);
    const cleared = await admin.patch(`/api/projects/${own.id}`, { retentionDays: null });
    assert.equal(cleared.body.retention_days, null);
  });
});
