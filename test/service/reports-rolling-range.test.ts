import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { DAY, loadDataset } from '../support/reference/harness.js';
import type { RefEvent } from '../support/reference/index.js';
import { runReport } from '../../apps/server/src/reports/run.js';

/**
 * Retention and flows saved with a rolling range ("Last 30 days") keep it: the stored query holds
 * `dateRange`, not the days it was saved on, and every run (the report, a board card) resolves it
 * on the day it runs. The clock is fixed by running the report through `runReport` with its `now`
 * (what the report and board routes pass as Date.now()), and checked against the v0 endpoints
 * asked for the same days written out.
 */
const today = Math.floor(Date.now() / DAY) * DAY;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const H = 3_600_000;
let seq = 0;
const ev = (event: string, distinct_id: string, daysAgo: number): RefEvent => ({ event, distinct_id, time: today - daysAgo * DAY + 2 * H, insert_id: `roll${++seq}`, props: {} });

/** u1 was seen 40 days ago (outside the last 30), u2 10 days ago, u3 3 days ago; u2 and u3 came back. */
const EVENTS: RefEvent[] = [
  ev('view', 'u1', 40), ev('buy', 'u1', 39),
  ev('view', 'u2', 10), ev('buy', 'u2', 9),
  ev('view', 'u3', 3), ev('buy', 'u3', 2),
];

const retention = { bornEvent: 'view', returnEvent: 'buy', unit: 'day', buckets: 3 };
const flows = { event: 'view', direction: 'after', steps: 1, limit: 20 };
const last30 = { kind: 'preset', preset: '30d' } as const;
/** The days `30d` covers when run on `now`. */
const days30 = (now: number) => ({ from: day(Math.floor(now / DAY) * DAY - 29 * DAY), to: day(now) });
const cohortSizes = (rows: Array<{ cohort: string; size: number }>) => rows.filter((r) => r.size > 0).map((r) => [r.cohort.slice(0, 10), r.size]);

forEachBackend('retention and flows reports with a rolling range', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let pid: number;

  before(async function () {
    this.timeout(60_000);
    t = await sharedService(backend);
    tenant = await createTenant(t, 'roll');
    pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, { events: EVENTS, links: [] });
  });

  it('the v0 endpoints take dateRange instead of from/to and answer as for the days it covers', async () => {
    const viewer = t.client(tenant.tokens.viewer);
    for (const [path, body] of [['/api/query/retention', retention], ['/api/query/flows', flows]] as const) {
      const rolling = await viewer.post(path, { ...body, projectId: pid, dateRange: last30 });
      const fixed = await viewer.post(path, { ...body, projectId: pid, ...days30(Date.now()) });
      assert.equal(rolling.status, 200, rolling.text);
      assert.deepEqual(rolling.body, fixed.body, path);
    }
    const ret = (await viewer.post('/api/query/retention', { ...retention, projectId: pid, dateRange: last30 })).body;
    assert.deepEqual(cohortSizes(ret), [[day(today - 10 * DAY), 1], [day(today - 3 * DAY), 1]], 'u1 (40 days ago) is outside the last 30 days');
    const fl = (await viewer.post('/api/query/flows', { ...flows, projectId: pid, dateRange: { kind: 'preset', preset: '7d' } })).body;
    assert.equal(fl.total, 1, `only u3 viewed in the last 7 days: ${JSON.stringify(fl)}`);
  });

  it('refuses dateRange beside from/to, and on the analyses that do not take it: 400 naming the problem, nothing saved', async () => {
    const member = t.client(tenant.tokens.member);
    const both = await member.post('/api/query/retention', { ...retention, projectId: pid, dateRange: last30, from: '2024-01-01', to: '2024-01-02' });
    assert.equal(both.status, 400, both.text);
    assert.match(both.text, /dateRange or from and to, not both/);
    const badPreset = await member.post('/api/query/flows', { ...flows, projectId: pid, dateRange: { kind: 'preset', preset: '2w' } });
    assert.equal(badPreset.status, 400, badPreset.text);
    const seg = await member.post('/api/query/segmentation', { event: 'view', unit: 'day', type: 'total', projectId: pid, dateRange: last30 });
    assert.equal(seg.status, 400, seg.text);
    const before = (await member.get(`/api/reports?projectId=${pid}`)).body.length;
    const saved = await member.post('/api/reports', { projectId: pid, name: 'both', type: 'retention', query: { ...retention, dateRange: last30, from: '2024-01-01', to: '2024-01-02' } });
    assert.equal(saved.status, 400, saved.text);
    assert.match(saved.body.error, /^query: give dateRange or from and to, not both/);
    const none = await member.post('/api/reports', { projectId: pid, name: 'none', type: 'flows', query: flows });
    assert.equal(none.status, 400, none.text);
    assert.match(none.body.error, /invalid date range/);
    assert.equal((await member.get(`/api/reports?projectId=${pid}`)).body.length, before);
  });

  it('a saved retention or flows report keeps the rolling range and runs over the days of the day it runs on', async function () {
    this.timeout(60_000);
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    for (const [type, body] of [['retention', retention], ['flows', flows]] as const) {
      const created = await member.post('/api/reports', { projectId: pid, name: `rolling ${type}`, type, query: { ...body, dateRange: last30 } });
      assert.equal(created.status, 201, created.text);
      assert.deepEqual(created.body.query, { ...body, dateRange: last30 }, 'stored as sent: the range, not the days');
      const got = (await viewer.get(`/api/reports/${created.body.id}`)).body;
      assert.deepEqual(got.queryV1.dateRange, last30, 'the IR view of the report keeps the preset');
      assert.equal(got.queryV1.analysis.kind, type);

      // Run today through the route: the days of today.
      const run = await viewer.post(`/api/reports/${created.body.id}/run`);
      assert.equal(run.status, 200, run.text);
      const path = `/api/query/${type}`;
      assert.deepEqual(run.body.result, (await viewer.post(path, { ...body, projectId: pid, ...days30(Date.now()) })).body);

      // The same report run 20 days from now (the clock the routes hand runReport): the range rolled.
      const later = today + 20 * DAY + 12 * H;
      const report = (await t.svc.services.reports.get(created.body.id))!;
      const scope = await t.svc.services.executor.scopeOf(pid);
      const rolled = await runReport({ executor: t.svc.services.executor, config: t.svc.deps.config }, scope, report, {}, later);
      const expected = (await viewer.post(path, { ...body, projectId: pid, ...days30(later) })).body;
      assert.deepEqual(rolled.result, expected, `${type} over ${JSON.stringify(days30(later))}`);
      if (type === 'retention') {
        assert.deepEqual(cohortSizes(rolled.result as any), [[day(today - 3 * DAY), 1]], 'u2 (10 days ago) has left the last 30 days 20 days from now');
        assert.deepEqual(cohortSizes(run.body.result), [[day(today - 10 * DAY), 1], [day(today - 3 * DAY), 1]]);
      } else {
        assert.deepEqual([(run.body.result as any).total, (rolled.result as any).total], [2, 1]);
      }
    }
  });

  it("a board card of a rolling report rolls forward with the board's own range unset, and takes the board's range when set", async function () {
    this.timeout(60_000);
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    const r = (await member.post('/api/reports', { projectId: pid, name: 'card retention', type: 'retention', query: { ...retention, dateRange: { kind: 'preset', preset: '7d' } } })).body;
    const b = (await member.post('/api/boards', { projectId: pid, name: 'Rolling', cards: [{ reportId: r.id }] })).body;
    const run = await viewer.post(`/api/boards/${b.id}/run`);
    assert.equal(run.status, 200, run.text);
    const card = run.body.cards[0];
    assert.equal(card.status, 'ok', JSON.stringify(card));
    assert.deepEqual(cohortSizes(card.result), [[day(today - 3 * DAY), 1]], 'the last 7 days of today');
    // The board's range replaces the report's rolling one.
    const wide = { kind: 'absolute', from: day(today - 45 * DAY), to: day(today) };
    const over = await viewer.post(`/api/boards/${b.id}/run`, { date_range: wide });
    assert.equal(over.status, 200, over.text);
    assert.deepEqual(over.body.cards[0].result, (await viewer.post('/api/query/retention', { ...retention, projectId: pid, from: wide.from, to: wide.to })).body);
    assert.equal(cohortSizes(over.body.cards[0].result).length, 3);
    await member.delete(`/api/boards/${b.id}`);
    await member.delete(`/api/reports/${r.id}`);
  });
});
