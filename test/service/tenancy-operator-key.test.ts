import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { OPERATOR_ROUTES } from '../../apps/server/src/auth/operator.js';

const OPERATOR_KEY = 'test-operator-key';

/**
 * OPERATOR_KEY: accepted on the operator's routes (auth/operator.ts) and `403 forbidden` on every
 * other route that takes a bearer credential, whatever its ids and bodies (so a leaked operator key
 * reads no tenant data). The list is checked against /openapi.json so it cannot name a route that
 * does not exist.
 */
forEachBackend('tenancy: the operator key', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { OPERATOR_KEY });
    tenant = await createTenant(t, 'opkey');
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  const operations = async () => {
    const doc = (await t.anon.get('/openapi.json')).body;
    const out: Array<{ method: string; path: string; bearer: boolean }> = [];
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        out.push({ method: method.toUpperCase(), path, bearer: (op.security ?? []).some((s: object) => 'bearer' in s) });
      }
    }
    return out;
  };

  /** A concrete URL for a declared path: every parameter is the tenant's project id (or a plain word). */
  const urlOf = (path: string) =>
    path.replace(/\{(\w+)\}/g, (_m, name: string) => (/id$/i.test(name) ? String(tenant.project.id) : 'x')) + `?projectId=${tenant.project.id}`;

  it('every route of the list exists and takes a bearer credential', async () => {
    const ops = await operations();
    const bearer = new Set(ops.filter((o) => o.bearer).map((o) => `${o.method} ${o.path}`));
    assert.deepEqual([...OPERATOR_ROUTES].filter((r) => !bearer.has(r)), []);
  });

  it('403 forbidden on every other bearer route (events, queries, reports, exports, privacy, account…)', async function () {
    this.timeout(120_000);
    const op = t.client(OPERATOR_KEY);
    const failures: string[] = [];
    const refused: string[] = [];
    for (const o of await operations()) {
      if (!o.bearer || OPERATOR_ROUTES.has(`${o.method} ${o.path}`)) continue;
      const res = await op.request(o.method, urlOf(o.path), o.method === 'GET' || o.method === 'DELETE' ? undefined : {});
      if (res.status !== 403 || res.body?.error !== 'forbidden') failures.push(`${o.method} ${o.path}: ${res.status} ${res.text.slice(0, 100)}`);
      else refused.push(o.path);
    }
    assert.deepEqual(failures, []);
    for (const p of ['/api/query/segmentation', '/api/data/events', '/api/reports', '/api/privacy/requests/{id}/download', '/api/account']) {
      assert.ok(refused.includes(p), `${p} refused`);
    }
  });

  it('/import with the operator key as its Basic user: 403, nothing accepted', async () => {
    const basic = Buffer.from(`${OPERATOR_KEY}:`).toString('base64');
    const res = await t.anon.post('/import', [{ event: 'e', properties: { token: tenant.project.token, distinct_id: 'd', time: Date.now() } }], {
      headers: { authorization: `Basic ${basic}` },
    });
    assert.equal(res.status, 403, res.text);
  });

  it('accepted on its routes: organisations, usage, projects and flags with X-Tally-Resource', async () => {
    const op = t.client(OPERATOR_KEY);
    assert.equal((await op.get('/admin/orgs')).status, 200);
    assert.equal((await op.get('/admin/usage')).status, 200);
    const created = await op.post('/admin/orgs', { name: 'Declared', namespaces: ['team-a'] }, { headers: { 'x-tally-resource': 'Organization/declared' } });
    assert.equal(created.status, 201, created.text);
    const project = await op.post(`/admin/orgs/${created.body.id}/projects`, { name: 'p' }, { headers: { 'x-tally-resource': 'Project/team-a/p' } });
    assert.equal(project.status, 201, project.text);
    assert.equal(project.body.managed_by, 'Project/team-a/p');
    const listed = await op.get(`/api/projects?managedBy=${encodeURIComponent('Project/team-a/p')}`);
    assert.deepEqual(listed.body.map((p: { id: number }) => p.id), [project.body.id]);
    // Without the header the operator key writes nothing: every change it makes names its resource.
    const hand = await op.patch(`/api/projects/${project.body.id}`, { name: 'renamed' });
    assert.deepEqual([hand.status, hand.body.error], [400, 'X-Tally-Resource required'], hand.text);
    const flag = await op.post('/api/flags', { projectId: project.body.id, key: 'f', name: 'f' }, { headers: { 'x-tally-resource': 'FeatureFlag/team-a/f' } });
    assert.equal(flag.status, 201, flag.text);
    // The superadmin key still works everywhere, the operator key is not the superadmin key.
    assert.equal((await t.admin.get(`/api/data/events?projectId=${tenant.project.id}`)).status, 200);
  });

  it('an unknown bearer value is still 401, not 403', async () => {
    assert.equal((await t.client('not-the-operator-key').get('/admin/orgs')).status, 401);
  });
});
