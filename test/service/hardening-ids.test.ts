import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';

/**
 * Ids past what a row can hold (PostgreSQL `integer` ids end at 2^31-1) exist nowhere: every route
 * taking an id, in its path, as `projectId` or as a reference inside a body, answers as for an
 * absent row, the same on both backends (PostgreSQL answered 500 "value out of range" on the
 * older domains: cohorts, definitions, flags, projects, organisations, members, tokens).
 */
forEachBackend('hardening: ids past 2^31-1', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let pid: number;
  const HUGE = ['2147483648', '9007199254740991'];
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Ids');
    pid = acme.project.id;
  });

  it('every route with an integer id in its path answers 404 not found', async () => {
    const doc = (await t.anon.get('/openapi.json')).body;
    const seen: string[] = [];
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const ints = (op.parameters ?? []).filter((p: any) => p.in === 'path' && p.schema?.type === 'integer').map((p: any) => p.name);
        if (ints.length === 0) continue;
        seen.push(`${method} ${path}`);
        for (const huge of HUGE) {
          const url = path.replace(/\{(\w+)\}/g, (_, name) => (ints.includes(name) ? huge : 'x')) + `?projectId=${pid}`;
          const send = (client: TestService['anon']) => client.request(method.toUpperCase(), url, ['post', 'put', 'patch'].includes(method) ? {} : undefined);
          let r = await send(path.startsWith('/admin') ? t.admin : acme.owner);
          if (r.status === 401) r = await send(t.admin); // routes of the superadmin key only
          assert.equal(r.status, 404, `${method} ${url}: ${r.text}`);
          assert.equal(r.body.error, 'not found', `${method} ${url}: ${r.text}`);
        }
      }
    }
    for (const must of ['get /api/cohorts/{id}', 'delete /api/org/tokens/{id}', 'patch /api/org/members/{userId}', 'get /admin/orgs/{id}', 'put /api/flags/{id}', 'get /api/definitions/metrics/{id}']) {
      assert.ok(seen.includes(must), `${must} is among the routes checked (${seen.length})`);
    }
  });

  it('projectId past 2^31-1 is an absent project: 404 for the superadmin, 403 for a member, on queries and bodies', async () => {
    for (const path of ['/api/cohorts', '/api/flags', '/api/reports', '/api/definitions/events', '/api/lexicon/events']) {
      const admin = await t.admin.get(`${path}?projectId=${HUGE[0]}`);
      assert.equal(admin.status, 404, `${path}: ${admin.text}`);
      const owner = await acme.owner.get(`${path}?projectId=${HUGE[0]}`);
      assert.equal(owner.status, 403, `${path}: ${owner.text}`);
    }
    const seg = await acme.owner.post('/api/query/segmentation', { projectId: Number(HUGE[1]), event: 'e', from: '2024-01-01', to: '2024-01-02', unit: 'day', type: 'total' });
    assert.equal(seg.status, 403, seg.text);
    const cohort = await acme.owner.post('/api/cohorts', { projectId: Number(HUGE[0]), name: 'c', definition: { op: 'and', criteria: [{ kind: 'property', filter: { key: 'plan', op: 'eq', value: 'pro' } }] } });
    assert.equal(cohort.status, 403, cohort.text);
  });

  it('references inside bodies past 2^31-1 are unknown rows (400 or 404 naming them), nothing stored', async () => {
    const flag = await acme.owner.post('/api/flags', { projectId: pid, key: 'huge-cohort', name: 'F', rules: [{ rolloutPct: 100, cohortId: Number(HUGE[0]) }] });
    assert.equal(flag.status, 400, flag.text);
    assert.match(flag.body.error, /rules\.0\.cohortId/);
    assert.equal((await acme.owner.get(`/api/flags?projectId=${pid}`)).body.length, 0);
    const metric = await acme.owner.post('/api/query/metric', { projectId: pid, definitionId: Number(HUGE[0]), from: '2024-01-01', to: '2024-01-02', unit: 'day' });
    assert.equal(metric.status, 404, metric.text);
    const ir = await acme.owner.post('/api/query', {
      projectId: pid,
      query: { v: 2, dateRange: { kind: 'absolute', from: '2024-01-01', to: '2024-01-02' }, metrics: [{ id: 'A', kind: 'calculated', definitionId: Number(HUGE[1]) }], analysis: { kind: 'trend', unit: 'day' } },
    });
    assert.equal(ir.status, 400, ir.text);
    assert.equal(ir.body.errors[0].path, 'metrics.0.definitionId');
  });
});
