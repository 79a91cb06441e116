import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { freshProject, loadDataset, T0, DAY } from '../support/reference/harness.js';
import type { RefEvent } from '../support/reference/index.js';

const H = 3_600_000;
const MIN = 60_000;
let seq = 0;
const ev = (event: string, distinct_id: string, time: number, props: Record<string, string> = {}): RefEvent => ({ event, distinct_id, time, insert_id: `h${++seq}`, props });

forEachBackend('query endpoints (hand-written)', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let projectId: number;
  const post = (path: string, body: Record<string, unknown>, token = tenant.tokens.viewer) => t.client(token).post(path, { projectId, ...body });

  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend);
    tenant = await createTenant(t, 'q');
    projectId = tenant.project.id;
    const deps = t.svc.deps;
    await loadDataset(deps, projectId, {
      events: [
        // anon browses, then signs up as u1 (retroactive link): one identity.
        ev('view', 'anon1', T0 + 10 * H, { country: 'fr' }),
        ev('signup', 'u1', T0 + 10 * H + 5 * MIN),
        ev('buy', 'u1', T0 + 2 * DAY + 10 * H, { amount: '5' }),
        // u2: view, signup the next day, buy outside a 1-day window (exactly 2 days later + 1 ms).
        ev('view', 'u2', T0 + 12 * H, { country: 'de' }),
        ev('signup', 'u2', T0 + DAY + 12 * H),
        ev('buy', 'u2', T0 + 2 * DAY + 12 * H + 1),
        // u3: only a view, on Sunday 2024-01-07 23:59:59.999 (last ms of week 1).
        ev('view', 'u3', T0 + 7 * DAY - 1),
        // old: history before its non-retroactive link stays its own identity.
        ev('view', 'old', T0 + 3 * DAY),
        ev('view', 'old', T0 + 8 * DAY),
      ],
      links: [
        { distinct_id: 'anon1', canonical_id: 'u1', from_time: 0 },
        { distinct_id: 'old', canonical_id: 'u2', from_time: T0 + 5 * DAY },
      ],
    });
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('segmentation: unique canonical identities per Monday week, zero-filled, with breakdown', async () => {
    const r = await post('/api/query/segmentation', { event: 'view', from: '2024-01-01', to: '2024-01-21', unit: 'week', type: 'unique' });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.buckets, ['2024-01-01', '2024-01-08', '2024-01-15']);
    // week 1: u1 (via anon1), u2, u3, old (before its link); week 2: old's view after the link counts as u2.
    assert.deepEqual(r.body.series, [{ name: 'view', data: [{ bucket: '2024-01-01', value: 4 }, { bucket: '2024-01-08', value: 1 }, { bucket: '2024-01-15', value: 0 }], total: 4 }]);
    const b = await post('/api/query/segmentation', { event: 'view', from: '2024-01-01', to: '2024-01-02', unit: 'day', type: 'total', breakdown: 'country' });
    assert.deepEqual(b.body.series.map((s: any) => [s.name, s.data.map((d: any) => d.value)]), [['de', [1, 0]], ['fr', [1, 0]]]);
    const f = await post('/api/query/segmentation', { event: '$all_events', from: '2024-01-01', to: '2024-01-01', unit: 'hour', type: 'total', filters: [{ key: 'country', op: 'eq', value: 'fr' }] });
    assert.equal(f.body.buckets.length, 24);
    assert.equal(f.body.buckets[10], '2024-01-01T10:00:00Z');
    assert.equal(f.body.series[0].data[10].value, 1);
  });

  it('funnel: window edge, conversion rates, ids, times and segments', async () => {
    const r = await post('/api/query/funnel', { steps: ['view', 'signup', 'buy'], from: '2024-01-01', to: '2024-01-10', windowDays: 2, breakdown: 'country' });
    assert.equal(r.status, 200, r.text);
    const [s0, s1, s2] = r.body;
    assert.deepEqual([s0.count, s1.count, s2.count], [4, 2, 1]);
    assert.deepEqual(s0.convertedUserIds, ['old', 'u1', 'u2', 'u3']);
    assert.deepEqual(s1.droppedUserIds, ['old', 'u3']);
    assert.deepEqual(s2.convertedUserIds, ['u1']);
    assert.deepEqual(s2.droppedUserIds, ['u2']);
    assert.equal(s1.conversionFromPrevious, 0.5);
    assert.equal(s2.conversionFromStart, 0.25);
    assert.equal(s2.droppedCount, 1);
    assert.equal(s2.dropoffRate, 0.5);
    assert.equal(s0.meanSecondsToConvert, null);
    assert.equal(s1.meanSecondsToConvert, (300 + 86_400) / 2);
    assert.equal(s1.medianSecondsToConvert, (300 + 86_400) / 2);
    assert.equal(s2.meanSecondsToConvert, 2 * 86_400);
    assert.deepEqual(s2.segments.find((x: any) => x.name === 'fr'), { name: 'fr', count: 1, conversionFromStart: 1 });
    assert.deepEqual(s0.segments.find((x: any) => x.name === '(none)'), { name: '(none)', count: 2, conversionFromStart: 1 });
    // Exactly on the window edge (2 days) still converts; 1 ms later does not: u2's buy is 2 days + 1 ms after its view... with windowDays 3 it converts.
    const wide = await post('/api/query/funnel', { steps: ['view', 'signup', 'buy'], from: '2024-01-01', to: '2024-01-10', windowDays: 3 });
    assert.equal(wide.body[2].count, 2);
    assert.deepEqual(wide.body[2].segments, []);
  });

  it('retention: counts[0] is same-bucket return', async () => {
    const r = await post('/api/query/retention', { bornEvent: 'view', returnEvent: '$all_events', from: '2024-01-01', to: '2024-01-03', unit: 'day', buckets: 3 });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, [
      { cohort: '2024-01-01', size: 2, counts: [1, 1, 2] },
      { cohort: '2024-01-02', size: 0, counts: [0, 0, 0] },
      { cohort: '2024-01-03', size: 0, counts: [0, 0, 0] },
    ]);
  });

  it('flows: after and before an anchor', async () => {
    const after = await post('/api/query/flows', { event: 'signup', direction: 'after', steps: 1, from: '2024-01-01', to: '2024-01-10' });
    assert.equal(after.status, 200, after.text);
    assert.deepEqual(after.body, { paths: [{ path: ['signup', 'buy'], count: 2 }], total: 2 });
    const before = await post('/api/query/flows', { event: 'buy', direction: 'before', steps: 5, limit: 1, from: '2024-01-01', to: '2024-01-10' });
    assert.deepEqual(before.body.total, 2);
    assert.equal(before.body.paths.length, 1);
    assert.deepEqual(before.body.paths[0], { path: ['view', 'signup', 'buy'], count: 2 });
  });

  it('sessions: 30-minute gaps, average duration', async () => {
    const r = await post('/api/query/sessions', { from: '2024-01-01', to: '2024-01-02', unit: 'day' });
    assert.equal(r.status, 200, r.text);
    // day 1: u1 (view+signup, 300 s), u2 (view, 0 s); day 2: u2 signup (0 s).
    assert.deepEqual(r.body.series, [{ bucket: '2024-01-01', sessions: 2, avgDurationSec: 150 }, { bucket: '2024-01-02', sessions: 1, avgDurationSec: 0 }]);
  });

  it('validation: limits answer 400, bad ranges answer invalid date range', async () => {
    const bad = async (path: string, body: Record<string, unknown>) => {
      const r = await post(path, body);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)} -> ${r.status}`);
      return r.body;
    };
    const range = { from: '2024-01-01', to: '2024-01-02' };
    await bad('/api/query/funnel', { ...range, steps: ['a'] });
    await bad('/api/query/funnel', { ...range, steps: Array(11).fill('a') });
    await bad('/api/query/funnel', { ...range, steps: ['a', 'b'], windowDays: 0 });
    await bad('/api/query/funnel', { ...range, steps: ['a', 'b'], windowDays: 367 });
    await bad('/api/query/retention', { ...range, bornEvent: 'a', returnEvent: 'b', buckets: 17 });
    await bad('/api/query/retention', { ...range, bornEvent: 'a', returnEvent: 'b', buckets: 0 });
    await bad('/api/query/flows', { ...range, event: 'a', direction: 'after', steps: 6 });
    await bad('/api/query/flows', { ...range, event: 'a', direction: 'after', limit: 101 });
    await bad('/api/query/flows', { ...range, event: '$all_events', direction: 'after' });
    await bad('/api/query/segmentation', { ...range, event: 'a', unit: 'day', type: 'total', filters: Array(21).fill({ key: 'k', op: 'set' }) });
    await bad('/api/query/segmentation', { ...range, event: 'a', unit: 'day', type: 'total', filters: [{ key: 'k', op: 'eq' }] });
    for (const [from, to] of [['2024-01-05', '2024-01-01'], ['2024-02-30', '2024-03-01'], ['yesterday', '2024-01-01'], ['2000-01-01', '2024-01-01']]) {
      assert.deepEqual(await bad('/api/query/segmentation', { from, to, event: 'a', unit: 'day', type: 'total' }), { error: 'invalid date range' });
    }
    await bad('/api/query/sessions', { from: '2024-01-01' });
    assert.deepEqual(await bad('/api/query/sessions', { from: 20240101, to: '2024-01-01' }), { error: 'invalid date range' });
  });

  it('auth: viewer queries; other organisations project is forbidden; no credential is 401', async () => {
    const other = await createTenant(t, 'q-other');
    const r = await t.client(other.tokens.owner).post('/api/query/sessions', { projectId, from: '2024-01-01', to: '2024-01-01' });
    assert.equal(r.status, 403);
    const anon = await t.anon.post('/api/query/sessions', { projectId, from: '2024-01-01', to: '2024-01-01' });
    assert.equal(anon.status, 401);
    const own = await t.client(other.tokens.viewer).post('/api/query/sessions', { from: '2024-01-01', to: '2024-01-01' });
    assert.equal(own.status, 200);
    assert.equal(own.body.series[0].sessions, 0);
  });

  it('duplicates count once (ClickHouse before merges, DuckDB at write)', async () => {
    const pid = await freshProject(t.svc.deps);
    const e = ev('view', 'd1', T0 + H);
    await loadDataset(t.svc.deps, pid, { events: [e, { ...e }, { ...e }], links: [] });
    const r = await t.admin.post('/api/query/segmentation', { projectId: pid, event: 'view', from: '2024-01-01', to: '2024-01-01', unit: 'day', type: 'total' });
    assert.equal(r.body.series[0].data[0].value, 1);
  });
});
