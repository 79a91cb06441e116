import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';

/** Machine-access tokens (service accounts): `GET|POST /api/org/tokens`, `DELETE /api/org/tokens/{id}`. */
forEachBackend('machine-access tokens', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let globex: Tenant;

  before(async () => {
    t = await startTestService(backend, { OPERATOR_KEY: 'tokens-operator-key' });
    acme = await createTenant(t, 'TokAcme');
    globex = await createTenant(t, 'TokGlobex');
  });
  after(async () => t?.close());

  const mint = async (tenant: Tenant, role: string, name = `${role} bot`) => {
    const r = await t.client(tenant.tokens.owner).post('/api/org/tokens', { name, role });
    assert.equal(r.status, 201, r.text);
    return r.body as { id: number; name: string; role: string; token: string; created_at: number; last_used_at: number | null };
  };
  const liveTokens = async () => {
    const [{ n }] = await t.svc.deps.db('machine_tokens').whereNull('revoked_at').count({ n: '*' });
    return Number(n);
  };

  describe('auth matrix of the token routes', () => {
    it('admin and owner mint, list and revoke; member and viewer get 403; no credential 401; the superadmin 400; the operator key 403', async () => {
      for (const role of ['admin', 'owner'] as const) {
        const c = t.client(acme.tokens[role]);
        const created = await c.post('/api/org/tokens', { name: `ci ${role}`, role: 'member' });
        assert.equal(created.status, 201, created.text);
        assert.match(created.body.token, /^tly_[A-Za-z0-9_-]{43}$/);
        assert.deepEqual(Object.keys(created.body).sort(), ['created_at', 'id', 'last_used_at', 'managed_by', 'name', 'role', 'token']);
        assert.equal(created.body.last_used_at, null);
        const list = await c.get('/api/org/tokens');
        assert.equal(list.status, 200);
        const listed = list.body.find((x: any) => x.id === created.body.id);
        assert.deepEqual(listed, { ...created.body, token: null }, 'the value is shown once');
        assert.equal((await c.delete(`/api/org/tokens/${created.body.id}`)).status, 200);
        assert.equal((await c.delete(`/api/org/tokens/${created.body.id}`)).status, 404, 'already revoked');
      }
      const before = await liveTokens();
      for (const role of ['member', 'viewer'] as const) {
        const c = t.client(acme.tokens[role]);
        assert.equal((await c.get('/api/org/tokens')).status, 403);
        assert.equal((await c.post('/api/org/tokens', { name: 'x', role: 'viewer' })).status, 403);
        assert.equal((await c.delete('/api/org/tokens/1')).status, 403);
      }
      for (const c of [t.anon, t.client('tly_not-a-token'), t.client('garbage')]) {
        assert.equal((await c.get('/api/org/tokens')).status, 401);
        assert.equal((await c.post('/api/org/tokens', { name: 'x', role: 'viewer' })).status, 401);
      }
      const sa = await t.admin.post('/api/org/tokens', { name: 'x', role: 'viewer' });
      assert.deepEqual([sa.status, sa.body.error], [400, 'no organization context']);
      // The operator key mints through /admin/orgs/{id}/tokens only: the organisation's routes refuse it.
      const op = t.client('tokens-operator-key');
      assert.deepEqual([(await op.get('/api/org/tokens')).status, (await op.post('/api/org/tokens', { name: 'x', role: 'viewer' })).status, (await op.delete('/api/org/tokens/1')).status], [403, 403, 403]);
      assert.equal(await liveTokens(), before, 'nothing minted by a refused request');
    });

    it('only an owner mints an owner token; bad bodies are 400 and write nothing', async () => {
      const before = await liveTokens();
      assert.equal((await t.client(acme.tokens.admin).post('/api/org/tokens', { name: 'x', role: 'owner' })).status, 403);
      for (const body of [{ name: '', role: 'viewer' }, { name: 'x', role: 'root' }, { name: 'x' }, { name: 'x', role: 'viewer', extra: 1 }]) {
        const r = await t.client(acme.tokens.owner).post('/api/org/tokens', body);
        assert.equal(r.status, 400, JSON.stringify(body));
      }
      assert.equal(await liveTokens(), before);
      const owner = await mint(acme, 'owner');
      assert.equal(owner.role, 'owner');
    });

    it('another organisation’s token is 404 to revoke and absent from the list', async () => {
      const foreign = await mint(globex, 'viewer');
      const r = await t.client(acme.tokens.owner).delete(`/api/org/tokens/${foreign.id}`);
      assert.equal(r.status, 404);
      const list = (await t.client(acme.tokens.owner).get('/api/org/tokens')).body as any[];
      assert.ok(!list.some((x) => x.id === foreign.id));
      assert.equal((await t.client(foreign.token).get('/api/projects')).status, 200, 'still live');
    });
  });

  describe('a token acts with its role inside its organisation', () => {
    it('viewer reads, member writes flags, admin creates projects, owner does owner things', async () => {
      const viewer = t.client((await mint(acme, 'viewer')).token);
      const member = t.client((await mint(acme, 'member')).token);
      const admin = t.client((await mint(acme, 'admin')).token);
      const owner = t.client((await mint(acme, 'owner')).token);
      const projects = await viewer.get('/api/projects');
      assert.equal(projects.status, 200);
      assert.deepEqual(projects.body.map((p: any) => p.org_id).filter((id: number) => id !== acme.org.id), [], 'only its organisation');
      assert.equal((await viewer.post('/api/projects', { name: 'nope' })).status, 403);
      assert.equal((await member.post('/api/projects', { name: 'nope' })).status, 403);
      const made = await admin.post('/api/projects', { name: 'by a token' });
      assert.equal(made.status, 201, made.text);
      assert.equal((await admin.get(`/api/projects/${made.body.id}`)).status, 200);
      assert.equal((await admin.post(`/api/projects/${acme.project.id}/flag-secret`)).status, 403, 'flag secrets are owner-only');
      assert.equal((await owner.post(`/api/projects/${made.body.id}/flag-secret`)).status, 200);
      const account = await admin.get('/api/account');
      assert.deepEqual([account.status, account.body.user, account.body.role, account.body.organization.id], [200, null, 'admin', acme.org.id]);
      assert.equal((await owner.post('/api/account/organization', { name: 'x' })).status, 400, 'a token cannot onboard');
    });

    it('never reaches another organisation nor /admin/*', async () => {
      const admin = t.client((await mint(acme, 'admin')).token);
      assert.equal((await admin.get(`/api/projects/${globex.project.id}`)).status, 404);
      assert.equal((await admin.get(`/api/flags?projectId=${globex.project.id}`)).status, 403);
      assert.equal((await admin.get('/admin/orgs')).status, 401);
    });

    it('a revoked token is refused at once (401 on every /api/* route)', async () => {
      const created = await mint(acme, 'admin');
      const c = t.client(created.token);
      assert.equal((await c.get('/api/projects')).status, 200);
      assert.equal((await t.client(acme.tokens.admin).delete(`/api/org/tokens/${created.id}`)).status, 200);
      assert.equal((await c.get('/api/projects')).status, 401);
      assert.equal((await c.get('/api/account')).status, 401);
      assert.equal((await c.post('/api/org/tokens', { name: 'x', role: 'viewer' })).status, 401);
    });

    it('records last use, and flag audit rows name the token in actor_mcp_token_id', async () => {
      const created = await mint(acme, 'member', 'deploy bot');
      const c = t.client(created.token);
      const flag = await c.post(`/api/flags?projectId=${acme.project.id}`, { key: `tok-${created.id}`, name: 'From CI' });
      assert.equal(flag.status, 201, flag.text);
      const events = (await c.get(`/api/flags/${flag.body.id}/events`)).body as any[];
      assert.equal(events.length, 1);
      assert.deepEqual([events[0].action, events[0].actor_user_id, events[0].actor_mcp_token_id], ['created', null, created.id]);
      const listed = ((await t.client(acme.tokens.owner).get('/api/org/tokens')).body as any[]).find((x) => x.id === created.id);
      assert.equal(typeof listed.last_used_at, 'number');
      assert.ok(listed.last_used_at >= created.created_at);
    });

    it('an owner token may send destructive /engage verbs for its organisation’s projects only', async () => {
      const owner = (await mint(acme, 'owner')).token;
      const admin = (await mint(acme, 'admin')).token;
      const op = (token: string) => [{ $token: token, $distinct_id: 'u-engage', $unset: ['plan'] }];
      const ok = await t.client(owner).post('/engage', op(acme.project.token));
      assert.deepEqual(ok.body, { status: 1, applied: 1 });
      const notOwner = await t.client(admin).post('/engage', op(acme.project.token));
      assert.equal(notOwner.body.status, 0);
      const foreign = await t.client(owner).post('/engage', op(globex.project.token));
      assert.deepEqual(foreign.body.refused, [{ index: 0, op: '$unset' }]);
    });
  });
});
