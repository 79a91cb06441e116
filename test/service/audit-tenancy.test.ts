import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';

const OPERATOR_KEY = 'audit-operator-key';
const ORG = 'Organization/lifecycle';
const as = (resource: string) => ({ headers: { 'x-tally-resource': resource } });

interface Entry {
  id: number; at: number; actor: { kind: string; id: number | null; resource?: string };
  organizationId: number | null; projectId?: number; action: string; target: { kind: string; id: number | null }; before: any; after: any;
}

/**
 * The audit rows of the tenancy domains, read back through GET /api/audit-log and
 * /admin/audit-log: a whole tenant lifecycle made by an Organization's resources with the operator
 * key, people's and tokens' changes, no secret value anywhere, refused requests write nothing;
 * the routes' authorisation matrix, their filters and cursor paging.
 */
forEachBackend('audit log: tenancy domains', (backend) => {
  let t: TestService;
  let people: Tenant;
  const op = () => t.client(OPERATOR_KEY);
  const secrets: string[] = [];

  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { OPERATOR_KEY });
    people = await createTenant(t, 'People');
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  /** Every row of a filter, oldest first, through cursor paging of `limit` rows. */
  const allRows = async (path: string, limit = 200): Promise<Entry[]> => {
    const rows: Entry[] = [];
    let cursor: string | null = null;
    do {
      const sep = path.includes('?') ? '&' : '?';
      const r: { status: number; body: { entries: Entry[]; nextCursor: string | null }; text: string } =
        await t.admin.get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(r.status, 200, r.text);
      rows.push(...r.body.entries);
      cursor = r.body.nextCursor;
    } while (cursor);
    return rows.reverse();
  };

  it('a tenant lifecycle through its Organization reads back in order with the right actors, and no secret in any row', async () => {
    const created = await op().post('/admin/orgs', { name: 'Lifecycle', namespaces: ['team-a'] }, as(ORG));
    assert.equal(created.status, 201, created.text);
    const orgId = created.body.id;
    assert.equal((await op().patch(`/admin/orgs/${orgId}`, { namespaces: ['team-a', 'team-c'] }, as(ORG))).status, 200);
    assert.equal((await op().put(`/admin/orgs/${orgId}/members`, { members: [{ email: 'lead@example.test', role: 'owner' }] }, as(ORG))).status, 200);
    assert.equal((await op().put(`/admin/orgs/${orgId}/groups`, { groups: [{ name: 'devs', role: 'member' }] }, as(ORG))).status, 200);
    const P = 'Project/team-a/web';
    const project = await op().post(`/admin/orgs/${orgId}/projects`, { name: 'web' }, as(P));
    assert.equal(project.status, 201, project.text);
    secrets.push(project.body.token);
    const pid = project.body.id;
    assert.equal((await op().patch(`/api/projects/${pid}`, { name: 'web 2' }, as(P))).status, 200);
    assert.equal((await op().patch(`/api/projects/${pid}`, { retentionDays: 30 }, as(P))).status, 200);
    const T = 'ApiToken/team-a/ci';
    const token = await op().post(`/admin/orgs/${orgId}/tokens`, { name: 'ci', role: 'admin' }, as(T));
    secrets.push(token.body.token);
    assert.equal((await op().delete(`/admin/orgs/${orgId}/tokens/${token.body.id}`, as(T))).status, 200);
    const S = 'FlagSecret/team-a/web';
    const first = randomUUID();
    secrets.push(first);
    assert.equal((await op().put(`/api/projects/${pid}/flag-secret`, { secret: first }, as(S))).status, 200);
    const second = randomUUID();
    secrets.push(second);
    assert.equal((await op().put(`/api/projects/${pid}/flag-secret`, { secret: second }, as(S))).status, 200);
    assert.equal((await op().delete(`/api/projects/${pid}/flag-secret`, as(S))).status, 200);
    assert.equal((await op().post(`/api/projects/${pid}/release`, undefined, as(P))).status, 200);
    assert.equal((await op().post(`/admin/orgs/${orgId}/release`, undefined, as(ORG))).status, 200);

    const rows = await allRows(`/admin/audit-log?organizationId=${orgId}`, 3);
    assert.deepEqual(rows.map((r) => [r.action, r.actor.kind, r.actor.resource]), [
      ['organization.created', 'operator', ORG],
      ['organization.updated', 'operator', ORG],
      ['membership.invited', 'operator', ORG],
      ['organization.updated', 'operator', ORG],
      ['group_mapping.replaced', 'operator', ORG],
      ['project.created', 'operator', P],
      ['project.updated', 'operator', P],
      ['project.updated', 'operator', P],
      ['token.created', 'operator', T],
      ['token.revoked', 'operator', T],
      ['flag_secret.set', 'operator', S],
      ['flag_secret.set', 'operator', S],
      ['flag_secret.revoked', 'operator', S],
      ['project.released', 'operator', P],
      ['organization.released', 'operator', ORG],
    ]);
    assert.ok(rows.every((r) => r.organizationId === orgId && r.actor.id === null));
    assert.deepEqual([rows[1].before.namespaces, rows[1].after.namespaces], [['team-a'], ['team-a', 'team-c']]);
    assert.deepEqual([rows[2].before, rows[2].after.email, rows[2].after.role], [null, 'lead@example.test', 'owner']);
    assert.deepEqual([rows[4].before, rows[4].after], [{ groups: [] }, { groups: [{ name: 'devs', role: 'member' }] }]);
    const projectRows = rows.filter((r) => r.target.kind === 'project' || r.target.kind === 'flag_secret');
    assert.ok(projectRows.every((r) => r.projectId === pid && r.target.id === pid));
    assert.deepEqual([rows[6].before.name, rows[6].after.name], ['web', 'web 2']);
    assert.deepEqual([rows[7].before.retention_days, rows[7].after.retention_days], [null, 30]);
    assert.deepEqual([rows[10].before, rows[10].after], [{ present: false, managed_by: null }, { present: true, managed_by: S }]);
    assert.deepEqual([rows[12].after], [{ present: false, managed_by: null }]);
    assert.deepEqual([rows[13].before.managed_by, rows[13].after.managed_by], [P, null]);
    assert.equal(rows[8].target.id, token.body.id);
    const page = JSON.stringify(rows);
    for (const secret of secrets) assert.ok(!page.includes(secret), 'no secret value in the audit log');
  });

  it("people's and tokens' changes name them; the organisation's admins read their own rows only", async () => {
    const admin = t.client(people.tokens.admin);
    const invited = await admin.post('/api/org/members', { email: 'new@example.test', role: 'viewer' });
    assert.equal(invited.status, 201, invited.text);
    const minted = await people.owner.post('/api/org/tokens', { name: 'bot', role: 'admin' });
    const bot = t.client(minted.body.token);
    const p = await bot.post('/api/projects', { name: 'by a token' });
    assert.equal(p.status, 201, p.text);
    const rotated = await people.owner.post(`/api/projects/${people.project.id}/flag-secret`);
    const me = (await people.owner.get('/api/account')).body.user.id;
    const adminId = (await admin.get('/api/account')).body.user.id;
    const page = await people.owner.get('/api/audit-log?limit=200');
    assert.equal(page.status, 200, page.text);
    const rows = (page.body.entries as Entry[]).reverse();
    const actionsBy = rows.map((r) => [r.action, r.actor.kind, r.actor.id]);
    assert.deepEqual(actionsBy.slice(-4), [
      ['membership.invited', 'user', adminId],
      ['token.created', 'user', me],
      ['project.created', 'token', minted.body.id],
      ['flag_secret.rotated', 'user', me],
    ]);
    assert.ok(rows.every((r) => r.organizationId === people.org.id), 'only its own organisation');
    const json = JSON.stringify(page.body);
    for (const secret of [minted.body.token, rotated.body.secret, p.body.token]) assert.ok(!json.includes(secret));
    // Filters: projectId, action, actorKind, targetKind, from/to.
    const byToken = (await people.owner.get('/api/audit-log?actorKind=token')).body.entries as Entry[];
    assert.deepEqual(byToken.map((r) => r.action), ['project.created']);
    const byProject = (await people.owner.get(`/api/audit-log?projectId=${people.project.id}&targetKind=flag_secret`)).body.entries as Entry[];
    assert.deepEqual(byProject.map((r) => r.action), ['flag_secret.rotated']);
    // The four invitations of the tenant's set-up by the superadmin, then the admin's.
    const invitations = (await people.owner.get('/api/audit-log?action=membership.invited')).body.entries as Entry[];
    assert.deepEqual(invitations.map((r) => r.actor.kind), ['user', 'superadmin', 'superadmin', 'superadmin', 'superadmin']);
    const at = rows[rows.length - 1].at;
    assert.deepEqual((await people.owner.get(`/api/audit-log?from=${at}&to=${at + 1}`)).body.entries.map((r: Entry) => r.at), [at]);
  });

  it('a refused request writes no row', async () => {
    const count = async () => (await allRows('/admin/audit-log')).length;
    const before = await count();
    const member = t.client(people.tokens.member);
    assert.equal((await member.post('/api/org/members', { email: 'x@example.test', role: 'viewer' })).status, 403);
    assert.equal((await people.owner.patch(`/api/projects/${people.project.id}`, { retentionDays: 0 })).status, 400);
    assert.equal((await t.admin.post('/admin/orgs', { name: '' })).status, 400);
    assert.equal((await t.admin.delete(`/admin/orgs/${people.org.id}`)).status, 409, 'it still has projects');
    assert.equal((await member.delete(`/api/projects/${people.project.id}/flag-secret`)).status, 403);
    assert.equal((await op().post(`/admin/orgs/${people.org.id}/tokens`, { name: 'x', role: 'viewer' }, as('ApiToken/team-a/x'))).status, 403);
    assert.equal(await count(), before);
  });

  it('authorisation: /api/audit-log for owners and admins; /admin/audit-log for the superadmin', async () => {
    const status = async (c: ReturnType<TestService['client']>, path: string) => (await c.get(path)).status;
    const matrix: Array<[string, ReturnType<TestService['client']>, number, number]> = [
      ['owner', people.owner, 200, 401],
      ['admin', t.client(people.tokens.admin), 200, 401],
      ['member', t.client(people.tokens.member), 403, 401],
      ['viewer', t.client(people.tokens.viewer), 403, 401],
      ['operator key', op(), 403, 403],
      ['superadmin', t.admin, 400, 200],
      ['no credential', t.anon, 401, 401],
    ];
    const got = [];
    for (const [who, c] of matrix) got.push([who, c, await status(c, '/api/audit-log'), await status(c, '/admin/audit-log')]);
    assert.deepEqual(got.map(([w, , a, b]) => [w, a, b]), matrix.map(([w, , a, b]) => [w, a, b]));
    assert.equal((await t.admin.get('/api/audit-log')).body.error, 'no organization context');
  });

  it('a bad filter answers 400 naming it', async () => {
    const cases: Array<[string, RegExp]> = [
      ['actorKind=robot', /actorKind/], ['from=5&to=1', /from/], ['cursor=abc', /cursor/], ['limit=1000', /limit/],
      ['targetKind=planet', /targetKind/], ['action=DROP', /action/], ['unknown=1', /unknown/],
    ];
    for (const [q, named] of cases) {
      for (const [c, path] of [[people.owner, '/api/audit-log'], [t.admin, '/admin/audit-log']] as const) {
        const r = await c.get(`${path}?${q}`);
        assert.equal(r.status, 400, `${path}?${q}: ${r.text}`);
        assert.match(JSON.stringify(r.body), named, q);
      }
    }
  });

  it('cursor paging returns every row exactly once, newest first', async () => {
    const whole = (await t.admin.get('/admin/audit-log?limit=200')).body.entries as Entry[];
    assert.ok(whole.length > 10 && whole.length < 200);
    for (const limit of [1, 4, 7]) {
      const paged = (await allRows('/admin/audit-log', limit)).reverse();
      assert.deepEqual(paged.map((r) => r.id), whole.map((r) => r.id), `limit ${limit}`);
    }
    assert.deepEqual(whole.map((r) => r.id), [...whole.map((r) => r.id)].sort((a, b) => b - a));
  });
});
