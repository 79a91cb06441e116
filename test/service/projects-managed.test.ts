import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import type { Client } from '../support/http.js';

/**
 * Projects owned by a Kubernetes resource (docs/decisions.md, "Kubernetes contract"): the operator writes with the
 * superadmin key and `X-Tally-Resource: <Kind>/<namespace>/<name>`; the header counts only with
 * that key. Every row of the protocol the operator relies on.
 */
forEachBackend('projects managed by a resource', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let globex: Tenant;
  const R = 'Project/team-a/web';
  const OTHER = 'Project/team-b/web';
  const as = (resource?: string): { headers: Record<string, string> } => ({ headers: resource ? { 'x-tally-resource': resource } : {} });

  before(async () => {
    t = await startTestService(backend);
    acme = await createTenant(t, 'ManagedAcme');
    globex = await createTenant(t, 'ManagedGlobex');
    // Resources act only inside the boundary between teams: Acme's Organization lists their namespaces.
    const org = as('Organization/managed-acme');
    assert.equal((await t.admin.post(`/admin/orgs/${acme.org.id}/adopt`, undefined, org)).status, 200);
    assert.equal((await t.admin.patch(`/admin/orgs/${acme.org.id}`, { namespaces: ['team-a', 'team-b', 'filter'] }, org)).status, 200);
  });
  after(async () => t?.close());

  const projectCount = async () => Number((await t.svc.deps.db('projects').count({ n: '*' }))[0].n);
  const managedProject = async (resource = R, name = 'managed web') => {
    const r = await t.admin.post(`/admin/orgs/${acme.org.id}/projects`, { name }, as(resource));
    assert.equal(r.status, 201, r.text);
    return r.body as { id: number; name: string; token: string; managed_by: string | null };
  };

  it('creating with the header stores managed_by (admin route and /api/projects); bodies show it, null when unmanaged', async () => {
    const p = await managedProject(R, 'created by the operator');
    assert.equal(p.managed_by, R);
    assert.equal((await t.admin.get(`/api/projects/${p.id}`)).body.managed_by, R);
    const viaApi = await t.admin.post('/api/projects', { name: 'api-created' }, as('Project/ns/api'));
    assert.deepEqual([viaApi.status, viaApi.body.managed_by], [201, 'Project/ns/api']);
    const plain = await t.admin.post(`/admin/orgs/${acme.org.id}/projects`, { name: 'plain' });
    assert.equal(plain.body.managed_by, null);
    const list = (await t.client(acme.tokens.viewer).get('/api/projects')).body as any[];
    assert.equal(list.find((x) => x.id === p.id).managed_by, R);
    assert.equal(list.find((x) => x.id === plain.body.id).managed_by, null);
    assert.equal((await acme.owner.get(`/api/projects/${acme.project.id}`)).body.managed_by, null);
  });

  it('the header counts only with the superadmin key: an owner’s header is ignored', async () => {
    const r = await acme.owner.post('/api/projects', { name: 'owner with header' }, as(R));
    assert.deepEqual([r.status, r.body.managed_by], [201, null]);
  });

  it('a malformed header with the superadmin key is 400 and creates nothing', async () => {
    const before = await projectCount();
    for (const bad of ['not-a-resource', 'Project/UPPER/x', 'Project/ns/' + 'x'.repeat(400)]) {
      const r = await t.admin.post(`/admin/orgs/${acme.org.id}/projects`, { name: 'x' }, as(bad));
      assert.equal(r.status, 400, bad);
      assert.match(r.body.error, /X-Tally-Resource/);
    }
    assert.equal(await projectCount(), before);
  });

  it('GET /api/projects?managedBy= filters by owner (and still by organisation for users)', async () => {
    const mine = await managedProject('Project/filter/one');
    await managedProject('Project/filter/two');
    const found = await t.admin.get(`/api/projects?managedBy=${encodeURIComponent('Project/filter/one')}`);
    assert.deepEqual(found.body.map((p: any) => p.id), [mine.id]);
    assert.deepEqual((await t.admin.get('/api/projects?managedBy=Project%2Fnone%2Fhere')).body, []);
    assert.deepEqual((await acme.owner.get('/api/projects?managedBy=Project%2Ffilter%2Fone')).body.map((p: any) => p.id), [mine.id]);
    assert.deepEqual((await globex.owner.get('/api/projects?managedBy=Project%2Ffilter%2Fone')).body, [], 'another organisation sees none');
    assert.equal((await t.admin.get(`/api/projects?managedBy=${'x'.repeat(401)}`)).status, 400);
  });

  describe('PATCH and DELETE of a managed project', () => {
    const refusals: Array<[string, () => Client, string | undefined]> = [
      ['owner', () => acme.owner, undefined],
      ['owner sending the header', () => acme.owner, R],
      ['admin', () => t.client(acme.tokens.admin), undefined],
      ['superadmin without the header', () => t.admin, undefined],
      ['superadmin with another resource', () => t.admin, OTHER],
    ];
    for (const [who, client, header] of refusals) {
      it(`${who}: 409 managed by resource, nothing changed`, async () => {
        const p = await managedProject(R, 'keep me');
        const patch = await client().patch(`/api/projects/${p.id}`, { name: 'renamed' }, as(header));
        assert.deepEqual([patch.status, patch.body], [409, { error: 'managed by resource', resource: R }]);
        const del = await client().delete(`/api/projects/${p.id}`, as(header));
        assert.deepEqual([del.status, del.body], [409, { error: 'managed by resource', resource: R }]);
        const after = (await t.admin.get(`/api/projects/${p.id}`)).body;
        assert.deepEqual([after.name, after.managed_by], ['keep me', R]);
      });
    }

    it('member and viewer: 403 (the role comes first); another organisation: 404; no credential: 401', async () => {
      const p = await managedProject();
      for (const role of ['member', 'viewer'] as const) {
        assert.equal((await t.client(acme.tokens[role]).patch(`/api/projects/${p.id}`, { name: 'x' })).status, 403);
        assert.equal((await t.client(acme.tokens[role]).delete(`/api/projects/${p.id}`)).status, 403);
      }
      assert.equal((await globex.owner.patch(`/api/projects/${p.id}`, { name: 'x' })).status, 404);
      assert.equal((await globex.owner.delete(`/api/projects/${p.id}`)).status, 404);
      assert.equal((await t.anon.patch(`/api/projects/${p.id}`, { name: 'x' })).status, 401);
      assert.equal((await t.admin.get(`/api/projects/${p.id}`)).body.name, 'managed web');
    });

    it('superadmin with the matching header: renames and deletes', async () => {
      const p = await managedProject();
      const patch = await t.admin.patch(`/api/projects/${p.id}`, { name: 'renamed by operator' }, as(R));
      assert.deepEqual([patch.status, patch.body.name, patch.body.managed_by], [200, 'renamed by operator', R]);
      const del = await t.admin.delete(`/api/projects/${p.id}`, as(R));
      assert.deepEqual([del.status, del.body], [200, { ok: true }]);
      assert.equal((await t.admin.get(`/api/projects/${p.id}`)).status, 404);
    });

    it('an unmanaged project stays writable by its admins and by the superadmin with or without a header', async () => {
      const p = (await t.client(acme.tokens.admin).post('/api/projects', { name: 'free' })).body;
      assert.equal((await t.client(acme.tokens.admin).patch(`/api/projects/${p.id}`, { name: 'free 2' })).status, 200);
      const withHeader = await t.admin.patch(`/api/projects/${p.id}`, { name: 'free 3' }, as(R));
      assert.deepEqual([withHeader.status, withHeader.body.managed_by], [200, null], 'a write does not take ownership');
      assert.equal((await t.admin.delete(`/api/projects/${p.id}`)).status, 200);
    });
  });

  describe('POST /api/projects/{id}/release', () => {
    it('superadmin with the matching header: managed_by becomes null, the project stays and is writable by its admins', async () => {
      const p = await managedProject();
      const r = await t.admin.post(`/api/projects/${p.id}/release`, undefined, as(R));
      assert.deepEqual([r.status, r.body.id, r.body.managed_by, r.body.token], [200, p.id, null, p.token]);
      assert.equal((await t.admin.get(`/api/projects/${p.id}`)).body.managed_by, null);
      assert.deepEqual((await t.admin.get(`/api/projects?managedBy=${encodeURIComponent(R)}`)).body.filter((x: any) => x.id === p.id), []);
      assert.equal((await t.client(acme.tokens.admin).patch(`/api/projects/${p.id}`, { name: 'mine now' })).status, 200);
      const again = await t.admin.post(`/api/projects/${p.id}/release`, undefined, as(R));
      assert.deepEqual([again.status, again.body.managed_by], [200, null], 'idempotent (an operator retrying after a crash)');
    });

    it('refused: another resource or no header (409), any non-superadmin credential (401), unknown project (404)', async () => {
      const p = await managedProject();
      for (const header of [OTHER, undefined]) {
        const r = await t.admin.post(`/api/projects/${p.id}/release`, undefined, as(header));
        assert.deepEqual([r.status, r.body], [409, { error: 'managed by resource', resource: R }]);
      }
      for (const c of [acme.owner, t.client(acme.tokens.admin), t.anon]) {
        assert.equal((await c.post(`/api/projects/${p.id}/release`, undefined, as(R))).status, 401);
      }
      assert.equal((await t.admin.post('/api/projects/99999999/release', undefined, as(R))).status, 404);
      assert.equal((await t.admin.get(`/api/projects/${p.id}`)).body.managed_by, R);
    });
  });
});
