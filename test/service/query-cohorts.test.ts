import assert from 'node:assert/strict';
import fc from 'fast-check';
import { forEachBackend } from '../support/backends.js';
import { createTenant, type Tenant, type TestService } from '../support/service.js';
import { datasetService } from '../support/dataset-service.js';
import type { IrFunnelResult, TrendResult } from '../../apps/server/src/query/ir/results.js';
import type { CohortDefinition } from '../../apps/server/src/cohorts/schema.js';
import { DefinitionStore } from '../../apps/server/src/definitions/store.js';
import * as ref from '../support/reference/index.js';
import { DAY, T0, datasetArb, eventNameArb, loadDataset } from '../support/reference/harness.js';

/**
 * Cohorts in analyses: a cohort filter (`{cohort, op: 'in' | 'not_in'}` among the global filters)
 * and a breakdown by cohorts (`{cohorts: [...], notInAny}`), on trends and funnels. Generated
 * datasets and cohort definitions against the reference evaluator (membership as
 * ref.cohortMembers computes it, the analysis over the members' events only), the drill-down of a
 * cohort's segment equal to its figure, and the API's refusals, on every configured backend.
 */
const RUNS = Number(process.env.QUERY_COHORT_RUNS ?? 15);
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

const criterionArb: fc.Arbitrary<ref.RefCriterion> = fc.oneof(
  fc.record({ kind: fc.constant('property' as const), filter: fc.oneof(
    fc.record({ key: fc.constantFrom('p', 'q'), op: fc.constantFrom('eq' as const, 'neq' as const), value: fc.constantFrom('x', 'y', '1') }),
    fc.record({ key: fc.constantFrom('p', 'q'), op: fc.constantFrom('set' as const, 'not_set' as const) }),
  ) }),
  // windowDays 0 (all time): membership does not move with the clock the run reads.
  fc.record({ kind: fc.constant('behavior' as const), event: fc.constantFrom('A', 'B', '$all_events'), op: fc.constantFrom('gte' as const, 'lt' as const, 'eq' as const), count: fc.integer({ min: 0, max: 3 }), windowDays: fc.constant(0) }),
);
const definitionArb = fc.record({ op: fc.constantFrom('and' as const, 'or' as const), criteria: fc.array(criterionArb, { minLength: 1, maxLength: 2 }) });

forEachBackend('query: cohort filters and breakdowns by cohort', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  const { deps, projectWith, scope, doc } = datasetService(backend, {}, (s) => { t = s; });
  before(async () => {
    tenant = await createTenant(t, 'cohorts in analyses');
  });
  const cohort = async (projectId: number, name: string, definition: ref.RefCriterion[] | { op: 'and' | 'or'; criteria: ref.RefCriterion[] }) =>
    (await new DefinitionStore<CohortDefinition>(deps().db, 'cohorts').create({ projectId, createdBy: null, name, description: null, definition: (Array.isArray(definition) ? { op: 'and', criteria: definition } : definition) as CohortDefinition })).id;

  it('a trend filtered by a cohort and broken down by cohorts agrees with the reference; each segment drills down to its figure', async function () {
    this.timeout(600_000);
    const qArb = fc.record({
      event: eventNameArb(true), op: fc.constantFrom('count' as const, 'unique' as const), unit: fc.constantFrom('day' as const, 'week' as const),
      defs: fc.array(definitionArb, { minLength: 2, maxLength: 3 }), filterOp: fc.option(fc.constantFrom('in' as const, 'not_in' as const), { nil: undefined }),
      notInAny: fc.boolean(),
      range: fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 12 })).map(([a, len]) => ({ from: day(T0 + a * DAY), to: day(T0 + (a + len) * DAY) })),
    });
    await fc.assert(fc.asyncProperty(datasetArb, qArb, async (data, q) => {
      const projectId = await projectWith(data);
      const ids = [];
      for (const [i, def] of q.defs.entries()) ids.push(await cohort(projectId, `c${i}`, def));
      const members = q.defs.map((def) => ref.cohortMembers(data, def, Date.now()));
      // The filter names the last cohort; the breakdown the others.
      const [filterId, filterMembers] = [ids[ids.length - 1], members[members.length - 1]];
      const segIds = ids.slice(0, -1);
      const query = doc({
        v: 2, dateRange: { kind: 'absolute', ...q.range }, filters: q.filterOp ? [{ cohort: filterId, op: q.filterOp }] : [],
        metrics: [{ id: 'A', kind: 'event', event: q.event, aggregation: { op: q.op } }],
        breakdown: { cohorts: segIds, notInAny: q.notInAny }, analysis: { kind: 'trend', unit: q.unit },
      });
      const ir = await t.svc.services.executor.ir(scope(projectId), query) as TrendResult;
      const r = { fromMs: Date.parse(`${q.range.from}T00:00:00Z`), toEndMs: Date.parse(`${q.range.to}T00:00:00Z`) + DAY };
      const base = q.filterOp ? [{ members: filterMembers, op: q.filterOp }] : [];
      const segs = [
        ...segIds.map((_, i) => ({ name: `c${i}`, conds: [...base, { members: members[i], op: 'in' as const }] })),
        ...(q.notInAny ? [{ name: 'Not in any cohort', conds: [...base, ...segIds.map((_, i) => ({ members: members[i], op: 'not_in' as const }))] }] : []),
      ];
      const expected = segs.map((s) => {
        const res = ref.segmentation(ref.cohortScoped(data, s.conds), { event: q.event, unit: q.unit, type: q.op === 'count' ? 'total' : 'unique' }, r);
        return [s.name, res.series[0]?.data.map((d) => d.value) ?? res.buckets.map(() => 0)];
      });
      assert.deepEqual(ir.series.map((s) => [s.segment, s.data]), expected);
      if (q.op !== 'unique') return;
      for (const s of ir.series) {
        const page = await t.svc.services.executor.drilldown(scope(projectId), query, { kind: 'trend', metricId: 'A', bucket: 'total', range: 'primary', segment: s.segment }, { limit: 500, offset: 0 });
        assert.equal(page.total, s.total);
      }
    }), { numRuns: RUNS });
  });

  it('a funnel broken down by cohorts: each segment is the funnel of its members (the reference), the steps everyone\'s', async function () {
    this.timeout(600_000);
    const qArb = fc.record({
      steps: fc.array(eventNameArb(false), { minLength: 2, maxLength: 3 }), windowDays: fc.integer({ min: 1, max: 5 }),
      defs: fc.array(definitionArb, { minLength: 1, maxLength: 2 }), notInAny: fc.boolean(),
      range: fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 12 })).map(([a, len]) => ({ from: day(T0 + a * DAY), to: day(T0 + (a + len) * DAY) })),
    });
    await fc.assert(fc.asyncProperty(datasetArb, qArb, async (data, q) => {
      const projectId = await projectWith(data);
      const ids = [];
      for (const [i, def] of q.defs.entries()) ids.push(await cohort(projectId, `c${i}`, def));
      const members = q.defs.map((def) => ref.cohortMembers(data, def, Date.now()));
      const query = doc({
        v: 2, dateRange: { kind: 'absolute', ...q.range },
        metrics: q.steps.map((event, i) => ({ id: 'ABC'[i], kind: 'event', event, aggregation: { op: 'unique' } })),
        breakdown: { cohorts: ids, notInAny: q.notInAny },
        analysis: { kind: 'funnel', steps: q.steps.map((_, i) => 'ABC'[i]), window: { value: q.windowDays, unit: 'day' } },
      });
      const ir = await t.svc.services.executor.ir(scope(projectId), query) as IrFunnelResult;
      const r = { fromMs: Date.parse(`${q.range.from}T00:00:00Z`), toEndMs: Date.parse(`${q.range.to}T00:00:00Z`) + DAY };
      const spec = { steps: q.steps, windowDays: q.windowDays };
      const everyone = ref.funnel(data, spec, r);
      const segs = [
        ...ids.map((_, i) => ({ name: `c${i}`, conds: [{ members: members[i], op: 'in' as const }] })),
        ...(q.notInAny ? [{ name: 'Not in any cohort', conds: ids.map((_, i) => ({ members: members[i], op: 'not_in' as const })) }] : []),
      ].map((s) => ({ name: s.name, steps: ref.funnel(ref.cohortScoped(data, s.conds), spec, r) }));
      assert.deepEqual(ir.steps.map((s) => s.count), everyone.map((s) => s.count));
      assert.deepEqual(
        ir.steps.map((s) => s.segments.map((g) => [g.segment, g.count, g.conversionFromStart])),
        q.steps.map((_, k) => segs.map((s) => [s.name, s.steps[k].count, s.steps[k].conversionFromStart])),
      );
    }), { numRuns: RUNS });
  });

  describe('through the API', () => {
    let projectId: number;
    let buyers: number;
    let pro: number;
    let foreign: number;
    before(async function () {
      this.timeout(60_000);
      projectId = tenant.project.id;
      const ev = (event: string, distinct_id: string, hour: number, n: number): ref.RefEvent => ({ event, distinct_id, time: T0 + hour * 3_600_000, insert_id: `k${n}`, props: {} });
      await loadDataset(deps(), projectId, {
        events: [ev('view', 'a', 1, 1), ev('view', 'a', 2, 2), ev('buy', 'a', 3, 3), ev('view', 'b', 4, 4), ev('buy', 'b', 5, 5), ev('view', 'c', 6, 6), ev('view', 'd', 30, 7)],
        links: [],
        profiles: [{ distinct_id: 'a', props: { plan: 'pro' } }, { distinct_id: 'c', props: { plan: 'pro' } }],
      });
      buyers = await cohort(projectId, 'Buyers', [{ kind: 'behavior', event: 'buy', op: 'gte', count: 1, windowDays: 0 }]);
      pro = await cohort(projectId, 'Pro', [{ kind: 'property', filter: { key: 'plan', op: 'eq', value: 'pro' } }]);
      const other = await createTenant(t, 'cohorts elsewhere');
      foreign = await cohort(other.project.id, 'Elsewhere', [{ kind: 'property', filter: { key: 'plan', op: 'set' } }]);
    });
    const post = (path: string, body: Record<string, unknown>) => t.client(tenant.tokens.viewer).post(path, { projectId, ...body });
    const trend = (extra: Record<string, unknown>) => ({
      v: 2, dateRange: { kind: 'absolute', from: day(T0), to: day(T0 + DAY) },
      metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' }, ...extra,
    });

    it('a trend broken down by cohorts: one series per cohort, named by it, a person in both counted in both', async () => {
      const r = await post('/api/query', { query: trend({ breakdown: { cohorts: [buyers, pro], notInAny: true } }) });
      assert.equal(r.status, 200, r.text);
      // a: buyer and pro (2 views day 1); b: buyer (1); c: pro (1); d: neither (1 view day 2).
      assert.deepEqual(r.body.series.map((s: any) => [s.segment, s.data]), [['Buyers', [3, 0]], ['Pro', [3, 0]], ['Not in any cohort', [0, 1]]]);
    });

    it('a cohort filter keeps (in) or drops (not_in) its members\' events, with the property filters', async () => {
      const inR = await post('/api/query', { query: trend({ filters: [{ cohort: pro, op: 'in' }] }) });
      assert.equal(inR.status, 200, inR.text);
      assert.deepEqual(inR.body.series[0].data, [3, 0]);
      const out = await post('/api/query', { query: trend({ filters: [{ cohort: pro, op: 'not_in' }, { cohort: buyers, op: 'not_in' }] }) });
      assert.deepEqual(out.body.series[0].data, [0, 1]);
      const f = await post('/api/query', {
        query: { v: 2, dateRange: { kind: 'absolute', from: day(T0), to: day(T0 + DAY) }, filters: [{ cohort: pro, op: 'in' }],
          metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } }, { id: 'B', kind: 'event', event: 'buy', aggregation: { op: 'unique' } }],
          breakdown: { cohorts: [buyers] }, analysis: { kind: 'funnel', steps: ['A', 'B'] } },
      });
      assert.equal(f.status, 200, f.text);
      assert.deepEqual(f.body.steps.map((s: any) => [s.count, s.segments]), [[2, [{ segment: 'Buyers', count: 1, conversionFromStart: 1 }]], [1, [{ segment: 'Buyers', count: 1, conversionFromStart: 1 }]]]);
    });

    it('with a comparison: each cohort\'s previous period too; a funnel\'s cohort segment drills down to its people', async () => {
      const cmp = await post('/api/query', { query: trend({ breakdown: { cohorts: [buyers, pro] }, analysis: { kind: 'trend', unit: 'day', compare: { kind: 'offset', days: 1 } } }) });
      assert.equal(cmp.status, 200, cmp.text);
      // The comparison range is the day before each day: day 1 (d's view) falls in its second day, the primary's first.
      assert.deepEqual(cmp.body.series.map((s: any) => [s.segment, s.range, s.data]), [
        ['Buyers', 'primary', [3, 0]], ['Pro', 'primary', [3, 0]], ['Buyers', 'comparison', [0, 3]], ['Pro', 'comparison', [0, 3]],
      ]);
      const funnel = {
        v: 2, dateRange: { kind: 'absolute', from: day(T0), to: day(T0 + DAY) },
        metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } }, { id: 'B', kind: 'event', event: 'buy', aggregation: { op: 'unique' } }],
        breakdown: { cohorts: [pro], notInAny: true }, analysis: { kind: 'funnel', steps: ['A', 'B'] },
      };
      const f = await post('/api/query', { query: funnel });
      assert.deepEqual(f.body.steps.map((s: any) => s.segments.map((g: any) => [g.segment, g.count])), [[['Pro', 2], ['Not in any cohort', 2]], [['Pro', 1], ['Not in any cohort', 1]]]);
      const people = async (selection: Record<string, unknown>) => {
        const r = await post('/api/query/drilldown', { query: funnel, selection });
        assert.equal(r.status, 200, r.text);
        return r.body.users.map((u: any) => u.distinctId);
      };
      assert.deepEqual(await people({ kind: 'funnel', step: 1, mode: 'reached', segment: 'Pro' }), ['a']);
      assert.deepEqual(await people({ kind: 'funnel', step: 1, mode: 'dropped', segment: 'Pro' }), ['c']);
      assert.deepEqual(await people({ kind: 'funnel', step: 0, mode: 'reached', segment: 'Not in any cohort' }), ['b', 'd']);
      const unknown = await post('/api/query/drilldown', { query: funnel, selection: { kind: 'funnel', step: 0, mode: 'reached', segment: 'Nobody' } });
      assert.equal(unknown.status, 400, unknown.text);
      assert.equal(unknown.body.errors[0].path, 'selection.segment');
    });

    it('a saved report by cohort is served from the results cache until the cohort is edited', async () => {
      const member = t.client(tenant.tokens.member);
      const c = await member.post('/api/cohorts', { projectId, name: 'Plan', definition: { op: 'and', criteria: [{ kind: 'property', filter: { key: 'plan', op: 'eq', value: 'pro' } }] } });
      assert.equal(c.status, 201, c.text);
      const saved = await member.post(`/api/reports?projectId=${projectId}`, { name: 'by plan cohort', type: 'segmentation', query: trend({ breakdown: { cohorts: [c.body.id] } }) });
      assert.equal(saved.status, 201, saved.text);
      const run = () => member.post(`/api/reports/${saved.body.id}/run`, {});
      const first = await run();
      assert.equal(first.status, 200, first.text);
      assert.deepEqual(first.body.result.series.map((s: any) => [s.segment, s.data]), [['Plan', [3, 0]]]);
      const again = await run();
      assert.equal(typeof again.body.cached_at, 'number', `served from the cache: ${again.text.slice(0, 200)}`);
      const edited = await member.put(`/api/cohorts/${c.body.id}`, { definition: { op: 'and', criteria: [{ kind: 'property', filter: { key: 'plan', op: 'not_set' } }] } });
      assert.equal(edited.status, 200, edited.text);
      const after = await run();
      assert.equal(after.body.cached_at, undefined, 'the edit invalidates the cached answer');
      // b (1 view on day 1) and d (1 on day 2) have no plan.
      assert.deepEqual(after.body.result.series.map((s: any) => [s.segment, s.data]), [['Plan', [1, 1]]]);
    });

    it('refuses an unknown cohort, another project\'s, too many and a cohort breakdown with properties, naming the field; a report of one is not stored', async () => {
      const bad = async (extra: Record<string, unknown>, path: string) => {
        const r = await post('/api/query', { query: trend(extra) });
        assert.equal(r.status, 400, r.text);
        assert.ok(r.body.errors.some((e: any) => e.path.startsWith(path)), `${path}: ${r.text}`);
        return r;
      };
      await bad({ filters: [{ cohort: 999_999, op: 'in' }] }, 'filters.0.cohort');
      await bad({ breakdown: { cohorts: [buyers, foreign] } }, 'breakdown.cohorts.1');
      await bad({ filters: [{ cohort: foreign, op: 'not_in' }] }, 'filters.0.cohort');
      await bad({ breakdown: { cohorts: Array.from({ length: 11 }, (_, i) => i + 1) } }, 'breakdown');
      await bad({ breakdown: { cohorts: [buyers], thenBy: ['plan'] } }, 'breakdown.thenBy');
      await bad({ breakdown: { cohorts: [buyers], property: 'plan' } }, 'breakdown.property');
      await bad({ filters: [{ cohort: buyers, op: 'eq' }] }, 'filters.0.op');
      const member = t.client(tenant.tokens.member);
      const before = (await member.get(`/api/reports?projectId=${projectId}`)).body;
      for (const [extra, path] of [
        [{ filters: [{ cohort: 999_999, op: 'in' }] }, 'query.filters.0.cohort'],
        [{ breakdown: { cohorts: [buyers, foreign] } }, 'query.breakdown.cohorts.1'],
        [{ breakdown: { cohorts: Array.from({ length: 11 }, (_, i) => i + 1) } }, 'query.breakdown'],
      ] as const) {
        const saved = await member.post(`/api/reports?projectId=${projectId}`, { name: 'x', type: 'segmentation', query: trend(extra) });
        assert.equal(saved.status, 400, saved.text);
        assert.ok(saved.body.errors.some((e: any) => e.path.startsWith(path)), `${path}: ${saved.text}`);
      }
      assert.deepEqual((await member.get(`/api/reports?projectId=${projectId}`)).body, before, 'nothing stored');
      const ok = await member.post(`/api/reports?projectId=${projectId}`, { name: 'by cohort', type: 'segmentation', query: trend({ breakdown: { cohorts: [buyers, pro] } }) });
      assert.equal(ok.status, 201, ok.text);
      const run = await member.post(`/api/reports/${ok.body.id}/run`, {});
      assert.equal(run.status, 200, run.text);
      assert.deepEqual(run.body.result.series.map((s: any) => s.segment), ['Buyers', 'Pro']);
    });
  });
});
