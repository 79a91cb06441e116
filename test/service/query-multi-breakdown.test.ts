import assert from 'node:assert/strict';
import fc from 'fast-check';
import { forEachBackend } from '../support/backends.js';
import { createTenant, type Tenant, type TestService } from '../support/service.js';
import { datasetService } from '../support/dataset-service.js';
import { buildAnalyses } from '../../apps/server/src/query/analyses.js';
import { runSegmentation } from '../../apps/server/src/query/kinds/segmentation/compile.js';
import type { TrendResult } from '../../apps/server/src/query/ir/results.js';
import * as ref from '../support/reference/index.js';
import { DAY, T0, datasetArb, eventNameArb, filterArb, loadDataset } from '../support/reference/harness.js';

/**
 * A breakdown on two or three properties: each combination of values is one segment named
 * "x / 1" (a missing property as `(none)` in its place). Generated datasets against the reference
 * evaluator for the v0 segmentation and the IR trend (with the drill-down of each segment equal
 * to its figure), and the API's answers and refusals, on every configured backend.
 */
const RUNS = Number(process.env.QUERY_PROPERTY_RUNS ?? 20);
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
// `p` is materialised (its own column), `q` read from the lists, `r` materialised and never set.
const propsArb = fc.constantFrom(['p', 'q'], ['q', 'p'], ['p', 'q', 'r'], ['r', 'q'], ['q', 'r', 'p']);

forEachBackend('query: breakdown by several properties', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  const { deps, projectWith, scope, doc } = datasetService(backend, { MATERIALIZED_PROPERTIES: 'p,r' }, (s) => { t = s; });
  before(async () => {
    tenant = await createTenant(t, 'multi breakdown');
  });

  it('v0 segmentation agrees with the reference on generated datasets', async function () {
    this.timeout(300_000);
    const qArb = fc.record({
      event: eventNameArb(true), unit: fc.constantFrom('hour' as const, 'day' as const, 'week' as const),
      type: fc.constantFrom('total' as const, 'unique' as const), breakdown: propsArb,
      filters: fc.array(filterArb, { maxLength: 2 }),
      range: fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 12 })).map(([a, len]) => ({ fromMs: T0 + a * DAY, toEndMs: T0 + (a + len + 1) * DAY })),
    });
    await fc.assert(fc.asyncProperty(datasetArb, qArb, async (data, q) => {
      const projectId = await projectWith(data);
      const qc = await buildAnalyses(deps().db, deps().events).contexts.forProject(projectId);
      const engine = await runSegmentation(deps().events, qc, q, q.range);
      assert.deepStrictEqual(engine, ref.segmentation(data, q, q.range));
    }), { numRuns: RUNS });
  });

  it('IR trend with thenBy agrees with the reference; each segment drills down to its figure', async function () {
    this.timeout(300_000);
    const qArb = fc.record({
      event: eventNameArb(true), op: fc.constantFrom('count' as const, 'unique' as const), unit: fc.constantFrom('day' as const, 'week' as const),
      breakdown: propsArb, filters: fc.array(filterArb, { maxLength: 1 }),
      range: fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 12 })).map(([a, len]) => ({ from: day(T0 + a * DAY), to: day(T0 + (a + len) * DAY) })),
      bucket: fc.nat(),
    });
    await fc.assert(fc.asyncProperty(datasetArb, qArb, async (data, q) => {
      const projectId = await projectWith(data);
      const query = doc({
        v: 2, dateRange: { kind: 'absolute', ...q.range }, filters: q.filters, metrics: [{ id: 'A', kind: 'event', event: q.event, aggregation: { op: q.op } }],
        breakdown: { property: q.breakdown[0], thenBy: q.breakdown.slice(1), limit: 100 }, analysis: { kind: 'trend', unit: q.unit },
      });
      const ir = await t.svc.services.executor.ir(scope(projectId), query) as TrendResult;
      const r = { fromMs: Date.parse(`${q.range.from}T00:00:00Z`), toEndMs: Date.parse(`${q.range.to}T00:00:00Z`) + DAY };
      const expected = ref.segmentation(data, { event: q.event, unit: q.unit, type: q.op === 'count' ? 'total' : 'unique', breakdown: q.breakdown, filters: q.filters }, r);
      assert.deepEqual(ir.buckets, expected.buckets);
      assert.deepEqual(ir.series.map((s) => [s.segment, s.data]), expected.series.map((s) => [s.name, s.data.map((d) => d.value)]));
      assert.ok(ir.series.every((s) => typeof s.segment === 'string' && s.segment.split(' / ').length === q.breakdown.length), 'every event has a segment');
      if (q.op !== 'unique') return;
      for (const s of ir.series) {
        const b = q.bucket % ir.buckets.length;
        const page = await t.svc.services.executor.drilldown(scope(projectId), query, { kind: 'trend', metricId: 'A', bucket: b, range: 'primary', segment: s.segment }, { limit: 500, offset: 0 });
        assert.equal(page.total, s.data[b]);
        const all = await t.svc.services.executor.drilldown(scope(projectId), query, { kind: 'trend', metricId: 'A', bucket: 'total', range: 'primary', segment: s.segment }, { limit: 500, offset: 0 });
        assert.equal(all.total, s.total);
      }
    }), { numRuns: RUNS });
  });

  describe('through the API', () => {
    let projectId: number;
    before(async function () {
      this.timeout(60_000);
      projectId = tenant.project.id;
      const ev = (distinct_id: string, hour: number, props: Record<string, string>, n: number): ref.RefEvent =>
        ({ event: 'view', distinct_id, time: T0 + hour * 3_600_000, insert_id: `m${n}`, props });
      await loadDataset(deps(), projectId, {
        events: [
          ev('a', 1, { country: 'fr', browser: 'chrome' }, 1),
          ev('a', 2, { country: 'fr', browser: 'chrome' }, 2),
          ev('b', 3, { country: 'fr', browser: 'firefox' }, 3),
          ev('c', 4, { country: 'de', browser: 'chrome' }, 4),
          ev('d', 5, { country: 'de' }, 5),
        ],
        links: [],
      });
    });
    const post = (path: string, body: Record<string, unknown>) => t.client(tenant.tokens.viewer).post(path, { projectId, ...body });

    it('v0 segmentation takes a list of properties and names each combination', async () => {
      const r = await post('/api/query/segmentation', { event: 'view', from: day(T0), to: day(T0), unit: 'day', type: 'total', breakdown: ['country', 'browser'] });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.series.map((s: any) => [s.name, s.data[0].value]), [['fr / chrome', 2], ['de / (none)', 1], ['de / chrome', 1], ['fr / firefox', 1]]);
      const one = await post('/api/query/segmentation', { event: 'view', from: day(T0), to: day(T0), unit: 'day', type: 'unique', breakdown: ['country'] });
      assert.deepEqual(one.body.series.map((s: any) => [s.name, s.data[0].value]), [['de', 2], ['fr', 2]]);
    });

    it('IR trend: thenBy, segment totals, and a comparison range per combination', async () => {
      const r = await post('/api/query', {
        query: {
          v: 2, dateRange: { kind: 'absolute', from: day(T0), to: day(T0 + DAY) }, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } }],
          breakdown: { property: 'browser', thenBy: ['country'] }, analysis: { kind: 'trend', unit: 'day', compare: { kind: 'previous_period' } },
        },
      });
      assert.equal(r.status, 200, r.text);
      const primary = r.body.series.filter((s: any) => s.range === 'primary');
      assert.deepEqual(primary.map((s: any) => [s.segment, s.total]), [['(none) / de', 1], ['chrome / de', 1], ['chrome / fr', 1], ['firefox / fr', 1]]);
      assert.deepEqual(r.body.series.filter((s: any) => s.range === 'comparison').map((s: any) => s.total), [0, 0, 0, 0]);
    });

    it('refuses a fourth property, an empty list and thenBy on a funnel with 400 naming the field', async () => {
      const four = await post('/api/query/segmentation', { event: 'view', from: day(T0), to: day(T0), unit: 'day', type: 'total', breakdown: ['a', 'b', 'c', 'd'] });
      assert.equal(four.status, 400);
      assert.match(four.text, /breakdown/);
      const empty = await post('/api/query/segmentation', { event: 'view', from: day(T0), to: day(T0), unit: 'day', type: 'total', breakdown: [] });
      assert.equal(empty.status, 400);
      const ir = (breakdown: unknown, analysis: unknown) => post('/api/query', {
        query: { v: 2, dateRange: { kind: 'absolute', from: day(T0), to: day(T0) }, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }, { id: 'B', kind: 'event', event: 'view', aggregation: { op: 'count' } }], breakdown, analysis },
      });
      const three = await ir({ property: 'a', thenBy: ['b', 'c', 'd'] }, { kind: 'trend', unit: 'day' });
      assert.equal(three.status, 400);
      assert.match(three.text, /thenBy/);
      const funnel = await ir({ property: 'country', thenBy: ['browser'] }, { kind: 'funnel', steps: ['A', 'B'], window: { value: 1, unit: 'day' } });
      assert.equal(funnel.status, 400);
      assert.match(funnel.text, /breakdown\.thenBy/);
    });
  });
});
