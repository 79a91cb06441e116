import assert from 'node:assert/strict';
import { SignJWT, UnsecuredJWT } from 'jose';
import { Validator } from '@seriousme/openapi-schema-validator';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { resolveProject } from '../../apps/server/src/auth/project-scope.js';
import { drained, ev, ingest } from '../support/ingestion.js';

forEachBackend('foundation', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let globex: Tenant;

  before(async () => {
    t = await startTestService(backend);
    acme = await createTenant(t, 'Acme');
    globex = await createTenant(t, 'Globex');
  });
  after(async () => t?.close());

  describe('health', () => {
    it('reports every store and the version', async () => {
      for (const path of ['/health', '/health/ready']) {
        const r = await t.anon.get(path);
        assert.equal(r.status, 200);
        assert.deepEqual(r.body.checks, { metadata: 'ok', events: 'ok', buffer: 'ok' });
        assert.equal(r.body.status, 'ok');
        assert.match(r.body.version, /^\d+\.\d+\.\d+/);
      }
      assert.equal((await t.anon.get('/health/live')).status, 200);
    });
  });

  describe('admin', () => {
    it('needs the superadmin key, and refuses ID tokens even of owners', async () => {
      assert.deepEqual((await t.anon.get('/admin/orgs')).body, { error: 'unauthorized' });
      assert.equal((await t.anon.get('/admin/orgs')).status, 401);
      assert.equal((await t.client(acme.tokens.owner).get('/admin/orgs')).status, 401);
      assert.equal((await t.client('wrong-key').get('/admin/usage')).status, 401);
    });

    it('creates, reads and updates organisations', async () => {
      const created = await t.admin.post('/admin/orgs', { name: 'Initech', monthlyEventQuota: 1000 });
      assert.equal(created.status, 201);
      assert.equal(created.body.name, 'Initech');
      assert.equal(created.body.monthly_event_quota, 1000);
      assert.equal(typeof created.body.created_at, 'number');
      const id = created.body.id;
      assert.equal((await t.admin.get(`/admin/orgs/${id}`)).body.name, 'Initech');
      const patched = await t.admin.patch(`/admin/orgs/${id}`, { name: 'Initrode', monthlyEventQuota: null });
      assert.equal(patched.status, 200);
      assert.deepEqual([patched.body.name, patched.body.monthly_event_quota], ['Initrode', null]);
      const list = (await t.admin.get('/admin/orgs')).body;
      assert.ok(list.some((o: any) => o.id === id && o.name === 'Initrode'));
      assert.equal((await t.admin.get('/admin/orgs/999999')).status, 404);
      assert.equal((await t.admin.post('/admin/orgs/999999/projects', { name: 'x' })).status, 404);
    });

    it('lists usage per organisation for a month', async () => {
      const r = await t.admin.get('/admin/usage?month=2026-01');
      assert.equal(r.status, 200);
      const row = r.body.find((u: any) => u.org_id === acme.org.id);
      assert.deepEqual({ ...row }, { org_id: acme.org.id, name: 'Acme', month: '2026-01', events: 0, monthly_event_quota: null });
      assert.equal((await t.admin.get('/admin/usage?month=2026-13')).status, 400);
    });
  });

  describe('ID tokens', () => {
    it('binds an invited email on first use and answers /api/account', async () => {
      const r = await acme.owner.get('/api/account');
      assert.equal(r.status, 200);
      assert.equal(r.body.role, 'owner');
      assert.equal(r.body.organization.id, acme.org.id);
      assert.equal(r.body.memberships.length, 1);
    });

    it('refuses tokens of another issuer, expired, with a wrong audience, unsigned, or signed by an unknown key', async () => {
      const bad = [
        await t.idp.token('owner-x', { issuer: 'http://evil.example/' }),
        await t.idp.token('owner-x', { expiresIn: Math.floor(Date.now() / 1000) - 60 }),
        await t.idp.token('owner-x', { audience: 'someone-else' }),
        new UnsecuredJWT({ email: 'x@example.test' }).setIssuer(t.idp.issuer).setAudience(t.idp.audience).setSubject('x').setExpirationTime('1h').encode(),
        await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer(t.idp.issuer).setAudience(t.idp.audience).setSubject('x').setExpirationTime('1h').sign(new TextEncoder().encode('a-shared-secret-of-enough-length!!')),
        'not.a.jwt',
      ];
      for (const token of bad) {
        const r = await t.client(token).get('/api/projects');
        assert.equal(r.status, 401, token);
        assert.deepEqual(r.body, { error: 'unauthorized' });
      }
    });

    it('refetches the key set when a token names a new kid', async () => {
      await t.idp.rotate();
      const before = t.idp.jwksFetches;
      const token = await t.idp.token(`admin-${acme.org.id}-Acme`, { email: `admin.${acme.org.id}.Acme@example.test` });
      assert.equal((await t.client(token).get('/api/projects')).status, 200);
      assert.ok(t.idp.jwksFetches > before, 'the JWKS was fetched again');
      const cached = t.idp.jwksFetches;
      assert.equal((await t.client(token).get('/api/projects')).status, 200);
      assert.equal(t.idp.jwksFetches, cached, 'a known kid is served from the cache');
    });

    it('answers 403 no organization for a user without a membership, except on account routes', async () => {
      const token = await t.idp.token('lonely', { email: 'lonely@example.test' });
      const r = await t.client(token).get('/api/projects');
      assert.equal(r.status, 403);
      assert.equal(r.body.error, 'no organization');
      const account = await t.client(token).get('/api/account');
      assert.equal(account.status, 200);
      assert.equal(account.body.organization, null);
    });

    it('does not bind an invitation to a token whose email is not verified', async () => {
      await t.admin.post(`/admin/orgs/${acme.org.id}/members`, { email: 'unverified@example.test', role: 'owner' });
      const token = await t.idp.token('unverified-sub', { email: 'unverified@example.test', emailVerified: false });
      assert.equal((await t.client(token).get('/api/projects')).body.error, 'no organization');
    });
  });

  describe('onboarding', () => {
    it('creates an organisation with the caller as owner and a first project', async () => {
      const token = await t.idp.token('founder', { email: 'founder@example.test' });
      const r = await t.client(token).post('/api/account/organization', { name: 'Founders' });
      assert.equal(r.status, 201);
      assert.equal(r.body.organization.name, 'Founders');
      const projects = (await t.client(token).get('/api/projects')).body;
      assert.deepEqual(projects.map((p: any) => p.id), [r.body.project.id]);
      assert.equal((await t.client(token).get('/api/account')).body.role, 'owner');
      assert.equal((await t.client(token).post('/api/account/organization', { name: 'Again' })).status, 409);
    });
  });

  describe('projects', () => {
    it('lists the organisation projects as ProjectListItem', async () => {
      const r = await acme.owner.get('/api/projects');
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, [
        { id: acme.project.id, name: acme.project.name, token: acme.project.token, created_at: r.body[0].created_at, org_id: acme.org.id, event_count: 0, has_flag_secret: false, managed_by: null, retention_days: null, rate_limit: null },
      ]);
      assert.match(r.body[0].token, /^[0-9a-f-]{36}$/);
    });

    it('creates, renames and deletes with the admin role; members and viewers may only read', async () => {
      for (const role of ['member', 'viewer'] as const) {
        const c = t.client(acme.tokens[role]);
        assert.equal((await c.post('/api/projects', { name: 'nope' })).status, 403);
        assert.equal((await c.get(`/api/projects/${acme.project.id}`)).status, 200);
        assert.equal((await c.patch(`/api/projects/${acme.project.id}`, { name: 'x' })).body.error, 'forbidden');
      }
      const admin = t.client(acme.tokens.admin);
      const created = await admin.post('/api/projects', { name: 'Mobile' });
      assert.equal(created.status, 201);
      assert.equal((await admin.patch(`/api/projects/${created.body.id}`, { name: 'iOS' })).body.name, 'iOS');
      assert.equal((await admin.get(`/api/projects/${created.body.id}`)).body.name, 'iOS');
      assert.deepEqual((await admin.delete(`/api/projects/${created.body.id}`)).body, { ok: true });
      assert.equal((await admin.get(`/api/projects/${created.body.id}`)).status, 404);
    });

    it('answers 404 for another organisation project ids, never 403, and changes nothing', async () => {
      const other = t.client(globex.tokens.owner);
      for (const r of [
        await other.get(`/api/projects/${acme.project.id}`),
        await other.patch(`/api/projects/${acme.project.id}`, { name: 'stolen' }),
        await other.delete(`/api/projects/${acme.project.id}`),
      ]) {
        assert.equal(r.status, 404);
        assert.equal(r.body.error, 'not found');
      }
      assert.equal((await acme.owner.get(`/api/projects/${acme.project.id}`)).body.name, acme.project.name);
    });

    it('counts each stored event once in event_count, duplicates included', async () => {
      const events = [ev('Signup', 'u1', { time: 1_700_000_000_000, $insert_id: 'a' }), ev('Signup', 'u1', { time: 1_700_000_000_000, $insert_id: 'a' }), ev('Login', 'u2')];
      assert.equal((await ingest(t, globex.project.token).post('/track', events)).status, 200);
      assert.equal((await ingest(t, globex.project.token).post('/track', events[0])).status, 200);
      await drained(t);
      const listed = (await globex.owner.get('/api/projects')).body.find((p: any) => p.id === globex.project.id);
      assert.equal(listed.event_count, 2);
    });

    it('counts a project\'s events again only after a write changed its data', async () => {
      // The store's own count (the class's method under the service's version-tracking wrapper), counted.
      const proto = Object.getPrototypeOf(t.svc.deps.events);
      const original = proto.countEvents;
      let counted = 0;
      proto.countEvents = function (this: unknown, ids: number[]) {
        counted++;
        return original.call(this, ids);
      };
      try {
        const count = async () => (await globex.owner.get('/api/projects')).body.find((p: any) => p.id === globex.project.id).event_count;
        const before = await count();
        const calls = counted;
        assert.equal(await count(), before);
        assert.equal(counted, calls, 'the second list reads the count kept');
        assert.equal((await ingest(t, globex.project.token).post('/track', ev('Login', 'u3', { $insert_id: 'kept-count' }))).status, 200);
        await drained(t);
        assert.equal(await count(), before + 1, 'a write is counted');
        assert.equal(counted, calls + 1);
      } finally {
        proto.countEvents = original;
      }
    });

    it('shows the superadmin every project', async () => {
      const ids = (await t.admin.get('/api/projects')).body.map((p: any) => p.id);
      assert.ok(ids.includes(acme.project.id) && ids.includes(globex.project.id));
    });
  });

  describe('projectId resolution', () => {
    const projects = () => t.svc.deps.projects;
    const user = (tn: Tenant) => ({ kind: 'user' as const, userId: 1, email: null, orgId: tn.org.id, role: 'owner' as const });

    it('defaults to the oldest project of the organisation, or of the installation for the superadmin', async () => {
      assert.equal((await resolveProject(projects(), user(globex), undefined)).id, globex.project.id);
      const oldest = (await t.admin.get('/api/projects')).body[0].id;
      assert.equal((await resolveProject(projects(), { kind: 'superadmin' }, undefined)).id, oldest);
    });

    it('accepts strings and integers, and refuses a foreign project with 403', async () => {
      assert.equal((await resolveProject(projects(), user(acme), String(acme.project.id))).id, acme.project.id);
      await assert.rejects(resolveProject(projects(), user(acme), globex.project.id), (e: any) => e.status === 403 && e.error === 'forbidden');
      await assert.rejects(resolveProject(projects(), user(acme), 'abc'), (e: any) => e.status === 400);
      await assert.rejects(resolveProject(projects(), { kind: 'superadmin' }, 987654), (e: any) => e.status === 404);
    });
  });

  describe('members', () => {
    it('lets admins invite and change roles, and keeps the owner role to owners and the last owner in place', async () => {
      const admin = t.client(acme.tokens.admin);
      const invited = await admin.post('/api/org/members', { email: 'new.hire@example.test', role: 'member' });
      assert.equal(invited.status, 201);
      assert.equal(invited.body.user_id, null);
      assert.equal((await admin.post('/api/org/members', { email: 'boss@example.test', role: 'owner' })).status, 403);
      assert.equal((await t.client(acme.tokens.member).post('/api/org/members', { email: 'x@example.test', role: 'viewer' })).status, 403);
      const hire = await t.idp.token('new-hire', { email: 'new.hire@example.test' });
      const account = (await t.client(hire).get('/api/account')).body;
      assert.equal(account.role, 'member');
      const userId = account.user.id;
      assert.equal((await admin.patch(`/api/org/members/${userId}`, { role: 'viewer' })).body.role, 'viewer');
      assert.equal((await t.client(hire).post('/api/projects', { name: 'x' })).status, 403);
      assert.deepEqual((await admin.delete(`/api/org/members/${userId}`)).body, { ok: true });
      assert.equal((await t.client(hire).get('/api/projects')).body.error, 'no organization');
      const ownerId = (await acme.owner.get('/api/account')).body.user.id;
      assert.equal((await acme.owner.patch(`/api/org/members/${ownerId}`, { role: 'admin' })).body.error, 'last owner');
      assert.equal((await globex.owner.delete(`/api/org/members/${ownerId}`)).status, 404);
    });

    it('invitations of one email sent at once make one membership (a race answered 500 on PostgreSQL)', async () => {
      for (let round = 0; round < 5; round++) {
        const email = `twice${round}@example.test`;
        const sent = await Promise.all(Array.from({ length: 30 }, (_, i) =>
          i % 2 ? t.admin.post(`/admin/orgs/${acme.org.id}/members`, { email: email.toUpperCase(), role: 'viewer' })
          : t.client(acme.tokens.owner).post('/api/org/members', { email, role: 'viewer' })));
        assert.deepEqual(sent.map((r) => r.status), sent.map(() => 201), sent.map((r) => r.text).join('\n'));
        assert.equal(new Set(sent.map((r) => r.body.id)).size, 1);
        const rows = ((await acme.owner.get('/api/org/members')).body as any[]).filter((m) => m.email === email);
        assert.deepEqual(rows.map((m) => [m.id, m.role]), [[sent[0].body.id, 'viewer']]);
      }
    });
  });

  describe('bad input', () => {
    it('a URL past 16 KB answers 431 with a JSON envelope (Node answered with an empty body)', async () => {
      for (const path of [`/api/projects/${'x'.repeat(20_000)}`, `/track?data=${'x'.repeat(20_000)}`]) {
        const r = await t.client(acme.tokens.owner).get(path);
        assert.equal(r.status, 431);
        assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
        assert.equal(r.body.error, 'request headers too large');
      }
      assert.equal((await t.anon.get('/health')).status, 200);
    });

    it('answers malformed JSON, wrong types and unknown fields with 400 and changes nothing', async () => {
      const before = (await t.admin.get('/admin/orgs')).body.length;
      const cases = [
        await t.admin.post('/admin/orgs', undefined, { raw: '{"name": ', headers: { 'content-type': 'application/json' } }),
        await t.admin.post('/admin/orgs', { name: 42 }),
        await t.admin.post('/admin/orgs', { name: '' }),
        await t.admin.post('/admin/orgs', { name: 'x', monthlyEventQuota: -1 }),
        await t.admin.post('/admin/orgs', { name: 'x', extra: true }),
        await t.admin.post('/admin/orgs', [1, 2]),
        await t.admin.post(`/admin/orgs/${acme.org.id}/members`, { email: 'not-an-email', role: 'owner' }),
        await t.admin.post(`/admin/orgs/${acme.org.id}/members`, { email: 'a@b.test', role: 'king' }),
        await t.admin.get('/admin/orgs/abc'),
      ];
      for (const r of cases) {
        assert.equal(r.status, 400, r.text);
        assert.equal(typeof r.body.error, 'string');
        assert.equal(r.body.status, undefined);
      }
      assert.equal(cases[0].body.error, 'invalid json');
      assert.equal((await t.admin.get('/admin/orgs')).body.length, before);
    });

    it('refuses bodies over 1 MB with 413 before reading them whole', async () => {
      const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 10) });
      const r = await t.admin.post('/admin/orgs', undefined, { raw: big, headers: { 'content-type': 'application/json' } });
      assert.equal(r.status, 413);
      assert.equal(r.body.error, 'payload too large');
    });

    it('answers unknown routes with 404 and a stable code, wrong methods with 405', async () => {
      const r = await t.anon.get('/no/such/route');
      assert.equal(r.status, 404);
      assert.equal(r.body.code, 'route_not_found');
      const m = await t.admin.request('PUT', '/admin/orgs');
      assert.equal(m.status, 405);
      assert.equal(m.body.code, 'method_not_allowed');
    });

    it('answers missing and wrong credentials with 401 on every route group', async () => {
      for (const [method, path] of [['GET', '/api/projects'], ['GET', '/api/account'], ['POST', '/api/projects'], ['GET', '/api/org/members'], ['GET', '/admin/orgs'], ['POST', `/admin/orgs/${acme.org.id}/projects`]]) {
        for (const c of [t.anon, t.client('garbage')]) {
          const r = await c.request(method, path, method === 'GET' ? undefined : { name: 'x' });
          assert.equal(r.status, 401, `${method} ${path}`);
          assert.deepEqual(r.body, { error: 'unauthorized' });
        }
      }
    });
  });

  describe('OpenAPI', () => {
    it('serves a valid OpenAPI 3.1 document generated from the route schemas', async () => {
      const r = await t.anon.get('/openapi.json');
      assert.equal(r.status, 200);
      assert.equal(r.body.openapi, '3.1.0');
      const result = await new Validator().validate(r.body);
      assert.equal(result.valid, true, JSON.stringify(result.errors));
      assert.ok(r.body.paths['/api/projects'].get);
      assert.ok(r.body.paths['/admin/orgs/{id}/members'].post);
    });
  });
});
