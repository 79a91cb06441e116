import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { loadDataset, T0 } from '../support/reference/harness.js';

const H = 3_600_000;
const DAY = 86_400_000;

forEachBackend('definitions: derived events and calculated metrics', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let pid: number;
  before(async function () {
    this.timeout(60_000);
    t = await sharedService(backend);
    tenant = await createTenant(t, 'd');
    pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, {
      events: [
        { event: 'page', distinct_id: 'u1', time: T0 + H, insert_id: '1', props: { path: '/pricing' } },
        { event: 'page', distinct_id: 'u1', time: T0 + 2 * H, insert_id: '2', props: { path: '/docs' } },
        { event: 'page', distinct_id: 'u2', time: T0 + 3 * H, insert_id: '3', props: { path: '/pricing/team' } },
        { event: 'click', distinct_id: 'u2', time: T0 + 4 * H, insert_id: '4', props: { target: 'buy' } },
        { event: 'page', distinct_id: 'u3', time: T0 + DAY, insert_id: '5', props: {} },
      ],
      links: [],
    });
  });

  it('derived events: CRUD, roles, usable wherever an event name is', async () => {
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    const body = { projectId: pid, name: 'Pricing interest', sources: [{ event: 'page', filters: [{ key: 'path', op: 'contains', value: '/pricing' }] }, { event: 'click', filters: [{ key: 'target', op: 'eq', value: 'buy' }] }] };
    assert.equal((await viewer.post('/api/definitions/events', body)).status, 403);
    const c = await member.post('/api/definitions/events', body);
    assert.equal(c.status, 201, c.text);
    assert.equal((await member.post('/api/definitions/events', body)).status, 409);
    assert.equal((await member.post('/api/definitions/events', { ...body, name: '$all_events' })).status, 400);
    const seg = await viewer.post('/api/query/segmentation', { projectId: pid, event: 'Pricing interest', from: '2024-01-01', to: '2024-01-02', unit: 'day', type: 'total' });
    assert.deepEqual(seg.body.series[0].data.map((d: any) => d.value), [3, 0]);
    const fun = await viewer.post('/api/query/funnel', { projectId: pid, steps: ['page', 'Pricing interest'], from: '2024-01-01', to: '2024-01-02' });
    assert.deepEqual(fun.body.map((s: any) => s.count), [3, 1]); // u1's pricing page is its step-0 event itself: later steps must be strictly later
    const cohort = await viewer.post('/api/cohorts/preview', { projectId: pid, definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'Pricing interest', op: 'gte', count: 2, windowDays: 0 }] } });
    assert.deepEqual(cohort.body, { count: 1, sample: ['u2'] });
    const list = await viewer.get(`/api/definitions/events?projectId=${pid}`);
    assert.deepEqual(list.body.map((d: any) => d.name), ['Pricing interest']);
    const upd = await member.put(`/api/definitions/events/${c.body.id}`, { sources: [{ event: 'click' }] });
    assert.equal(upd.status, 200, upd.text);
    assert.deepEqual(upd.body.sources, [{ event: 'click' }]);
    const foreign = t.client((await createTenant(t, 'd-other')).tokens.owner);
    assert.equal((await foreign.get(`/api/definitions/events/${c.body.id}`)).status, 404);
    assert.deepEqual((await member.delete(`/api/definitions/events/${c.body.id}`)).body, { ok: true });
    assert.equal((await viewer.get(`/api/definitions/events/${c.body.id}`)).status, 404);
  });

  it('calculated metrics: formula over lettered metrics, run over buckets, division by zero is 0', async () => {
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    const bad = await member.post('/api/definitions/metrics', { projectId: pid, name: 'x', formula: 'A / C', metrics: [{ id: 'A', event: 'page', type: 'total' }] });
    assert.equal(bad.status, 400);
    assert.equal((await member.post('/api/definitions/metrics', { projectId: pid, name: 'x', formula: 'A +', metrics: [{ id: 'A', event: 'page', type: 'total' }] })).status, 400);
    const m = await member.post('/api/definitions/metrics', {
      projectId: pid, name: 'pages per visitor minus clicks', formula: '(A - B) / C',
      metrics: [{ id: 'A', event: 'page', type: 'total' }, { id: 'B', event: 'click', type: 'total' }, { id: 'C', event: 'click', type: 'unique', filters: [{ key: 'target', op: 'eq', value: 'buy' }] }],
    });
    assert.equal(m.status, 201, m.text);
    assert.equal(m.body.formula, '(A - B) / C');
    const r = await viewer.post('/api/query/metric', { projectId: pid, definitionId: m.body.id, from: '2024-01-01', to: '2024-01-02', unit: 'day' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, { buckets: ['2024-01-01', '2024-01-02'], series: [{ name: 'pages per visitor minus clicks', data: [{ bucket: '2024-01-01', value: 2 }, { bucket: '2024-01-02', value: 0 }] }] });
    assert.equal((await viewer.post('/api/query/metric', { projectId: pid, definitionId: 999_999, from: '2024-01-01', to: '2024-01-02', unit: 'day' })).status, 404);
    const upd = await member.put(`/api/definitions/metrics/${m.body.id}`, { formula: 'A * 2' });
    assert.equal(upd.status, 200, upd.text);
    const r2 = await viewer.post('/api/query/metric', { projectId: pid, definitionId: m.body.id, from: '2024-01-01', to: '2024-01-31', unit: 'month' });
    assert.deepEqual(r2.body.series[0].data, [{ bucket: '2024-01-01', value: 8 }]);
  });
});
