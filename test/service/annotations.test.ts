import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { sharedService, type Tenant, type TestService } from '../support/service.js';
import { reportsWorld } from '../support/reports.js';

forEachBackend('annotations', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  let pid: number;
  reportsWorld(backend, 'ann', (w) => ({ t, tenant, other, pid } = w), sharedService);

  it('CRUD, listed by day with an optional range, created_by the caller', async () => {
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    const a = await member.post('/api/annotations', { projectId: pid, date: '2024-01-05', description: 'pricing change' });
    assert.equal(a.status, 201, a.text);
    assert.equal(a.body.created_by, (await member.get('/api/account')).body.user.id);
    const b = await t.admin.post(`/api/annotations?projectId=${pid}`, { date: '2024-01-02', description: 'outage' });
    assert.equal(b.status, 201, b.text);
    assert.equal(b.body.created_by, null);
    assert.equal(b.body.project_id, pid);
    const all = await viewer.get(`/api/annotations?projectId=${pid}`);
    assert.deepEqual(all.body.map((x: any) => x.description), ['outage', 'pricing change']);
    const some = await viewer.get(`/api/annotations?projectId=${pid}&from=2024-01-03&to=2024-01-05`);
    assert.deepEqual(some.body.map((x: any) => x.date), ['2024-01-05']);
    const upd = await member.put(`/api/annotations/${a.body.id}`, { date: '2024-01-06' });
    assert.equal(upd.status, 200, upd.text);
    assert.equal(upd.body.date, '2024-01-06');
    assert.equal(upd.body.description, 'pricing change');
    assert.equal((await viewer.get(`/api/annotations/${a.body.id}`)).body.date, '2024-01-06');
    assert.deepEqual((await member.delete(`/api/annotations/${b.body.id}`)).body, { ok: true });
    assert.equal((await viewer.get(`/api/annotations/${b.body.id}`)).status, 404);
    await member.delete(`/api/annotations/${a.body.id}`);
  });

  it('bad input names its path; nothing is written', async () => {
    const member = t.client(tenant.tokens.member);
    for (const [body, re] of [
      [{ date: '2024-02-30', description: 'x' }, /^date: /],
      [{ date: '2024/01/01', description: 'x' }, /^date: /],
      [{ date: '2024-01-01', description: '' }, /^description: /],
      [{ date: '2024-01-01' }, /^description: /],
      [{ date: '2024-01-01', description: 'x', colour: 'red' }, /colour/],
    ] as const) {
      const r = await member.post('/api/annotations', { projectId: pid, ...body });
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error, re);
    }
    assert.equal((await member.get(`/api/annotations?projectId=${pid}&from=2024-13-01`)).status, 400);
    assert.deepEqual((await member.get(`/api/annotations?projectId=${pid}`)).body, []);
  });

  it('segmentation and IR trend results list the annotations inside their range, and only those', async () => {
    const member = t.client(tenant.tokens.member);
    const made = [];
    for (const [date, description] of [['2023-12-31', 'before'], ['2024-01-01', 'first day'], ['2024-01-07', 'last day'], ['2024-01-08', 'after']]) {
      made.push((await member.post('/api/annotations', { projectId: pid, date, description })).body.id);
    }
    await t.client(other.tokens.member).post('/api/annotations', { projectId: other.project.id, date: '2024-01-03', description: 'another org' });
    const r = await t.client(tenant.tokens.viewer).post('/api/query/segmentation', { projectId: pid, event: 'view', from: '2024-01-01', to: '2024-01-07', unit: 'week', type: 'total' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.annotations.map((a: any) => [a.date, a.description]), [['2024-01-01', 'first day'], ['2024-01-07', 'last day']]);
    assert.deepEqual(r.body.annotations.map((a: any) => a.id), [made[1], made[2]]);
    assert.equal(r.body.series[0].data[0].value, 3, 'the counts are unchanged');
    const ir = await t.client(tenant.tokens.viewer).post('/api/query', {
      projectId: pid,
      query: { v: 2, dateRange: { kind: 'absolute', from: '2024-01-07', to: '2024-01-08' }, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } },
    });
    assert.equal(ir.status, 200, ir.text);
    assert.deepEqual(ir.body.annotations.map((a: any) => a.description), ['last day', 'after'], 'IR trends list them too');
    for (const id of made) await member.delete(`/api/annotations/${id}`);
    const none = await t.client(tenant.tokens.viewer).post('/api/query/segmentation', { projectId: pid, event: 'view', from: '2024-01-01', to: '2024-01-07', unit: 'week', type: 'total' });
    assert.deepEqual(none.body.annotations, []);
  });

  it("tenancy: another organisation's annotation is 404", async () => {
    const a = (await t.client(tenant.tokens.member).post('/api/annotations', { projectId: pid, date: '2024-01-01', description: 'mine' })).body;
    const foreign = t.client(other.tokens.owner);
    assert.equal((await foreign.get(`/api/annotations/${a.id}`)).status, 404);
    assert.equal((await foreign.put(`/api/annotations/${a.id}`, { description: 'theirs' })).status, 404);
    assert.equal((await foreign.delete(`/api/annotations/${a.id}`)).status, 404);
    assert.equal((await foreign.get(`/api/annotations?projectId=${pid}`)).status, 403);
    assert.equal((await t.client(tenant.tokens.viewer).get(`/api/annotations/${a.id}`)).body.description, 'mine');
  });
});
