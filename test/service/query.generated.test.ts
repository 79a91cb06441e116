import assert from 'node:assert/strict';
import fc from 'fast-check';
import { forEachBackend } from '../support/backends.js';
import { startTestService, type TestService } from '../support/service.js';
import { buildAnalyses } from '../../apps/server/src/query/analyses.js';
import { runSegmentation } from '../../apps/server/src/query/kinds/segmentation/compile.js';
import { runFunnel } from '../../apps/server/src/query/kinds/funnel/compile.js';
import { runRetention } from '../../apps/server/src/query/kinds/retention/compile.js';
import { flowsSql, pathsOf, runFlows } from '../../apps/server/src/query/kinds/flows/compile.js';
import { runSessions } from '../../apps/server/src/query/kinds/sessions/compile.js';
import * as ref from '../support/reference/index.js';
import { DAY, T0, datasetArb, eventNameArb, filterArb, freshProject, loadDataset } from '../support/reference/harness.js';

/**
 * Generated datasets (ties, duplicates, identity links with and without from_time, events on
 * bucket/window/session edges): the engine must give exactly the reference evaluator's answer.
 * Run on every configured backend, so DuckDB and ClickHouse agree with the reference and so with
 * each other.
 */
const RUNS = Number(process.env.QUERY_PROPERTY_RUNS ?? 25);

const rangeArb = fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 12 }))
  .map(([a, len]) => ({ fromMs: T0 + a * DAY, toEndMs: T0 + (a + len + 1) * DAY }));

forEachBackend('query: generated datasets agree with the reference', (backend) => {
  let t: TestService;
  before(async function () {
    this.timeout(60_000);
    // `p` is materialised (its own column), `q` read from the lists, `r` materialised and never set.
    t = await startTestService(backend, { MATERIALIZED_PROPERTIES: 'p,r' });
  });
  after(async function () {
    this.timeout(120_000);
    await t?.close();
  });
  const deps = () => t.svc.deps;
  const analyses = () => buildAnalyses(t.svc.deps.db, t.svc.deps.events);
  const check = <Q>(queryArb: fc.Arbitrary<Q>, run: (projectId: number, data: ref.RefData, q: Q) => Promise<[unknown, unknown]>) =>
    fc.assert(
      fc.asyncProperty(datasetArb, queryArb, async (data, q) => {
        const projectId = await freshProject(deps());
        await loadDataset(deps(), projectId, data);
        const [engine, expected] = await run(projectId, data, q);
        assert.deepStrictEqual(engine, expected);
      }),
      { numRuns: RUNS },
    );

  it('segmentation', async function () {
    this.timeout(120_000);
    const qArb = fc.record({
      event: eventNameArb(true), unit: fc.constantFrom('hour' as const, 'day' as const, 'week' as const, 'month' as const),
      type: fc.constantFrom('total' as const, 'unique' as const), breakdown: fc.option(fc.constantFrom('p', 'q'), { nil: undefined }),
      filters: fc.array(filterArb, { maxLength: 2 }), range: rangeArb,
    });
    await check(qArb, async (projectId, data, q) => {
      const qc = await analyses().contexts.forProject(projectId);
      return [await runSegmentation(deps().events, qc, q, q.range), ref.segmentation(data, q, q.range)];
    });
  });

  it('funnel', async function () {
    this.timeout(120_000);
    const qArb = fc.record({
      steps: fc.array(eventNameArb(true), { minLength: 2, maxLength: 4 }), windowDays: fc.integer({ min: 1, max: 4 }),
      breakdown: fc.option(fc.constantFrom('p', 'q'), { nil: undefined }), filters: fc.array(filterArb, { maxLength: 1 }), range: rangeArb,
    });
    await check(qArb, async (projectId, data, q) => {
      const qc = await analyses().contexts.forProject(projectId);
      return [await runFunnel(deps().events, qc, q, q.range), ref.funnel(data, q, q.range)];
    });
  });

  it('retention', async function () {
    this.timeout(120_000);
    const qArb = fc.record({
      bornEvent: eventNameArb(true), returnEvent: eventNameArb(true), unit: fc.constantFrom('day' as const, 'week' as const),
      buckets: fc.integer({ min: 1, max: 5 }), range: rangeArb,
    });
    await check(qArb, async (projectId, data, q) => {
      const qc = await analyses().contexts.forProject(projectId);
      return [await runRetention(deps().events, qc, q, q.range), ref.retention(data, q, q.range)];
    });
  });

  it('flows', async function () {
    this.timeout(120_000);
    const qArb = fc.record({
      event: fc.constantFrom('A', 'B', 'D'), direction: fc.constantFrom('after' as const, 'before' as const),
      steps: fc.integer({ min: 1, max: 3 }), limit: fc.integer({ min: 1, max: 5 }), range: rangeArb,
    });
    await check(qArb, async (projectId, data, q) => {
      const qc = await analyses().contexts.forProject(projectId);
      const engine = await runFlows(deps().events, qc, q, q.range);
      if (qc.d.flowNames) {
        // The names read in the query (the plan past FLOW_NAMES_MAX_BYTES) give the same paths.
        const inQuery = await deps().events.query<{ p: string; n: number }>(flowsSql(qc, q, q.range));
        assert.deepStrictEqual(pathsOf(inQuery), engine.paths);
      }
      return [engine, ref.flows(data, q, q.range)];
    });
  });

  it('sessions', async function () {
    this.timeout(120_000);
    const qArb = fc.record({ unit: fc.constantFrom('hour' as const, 'day' as const, 'week' as const), range: rangeArb });
    await check(qArb, async (projectId, data, q) => {
      const qc = await analyses().contexts.forProject(projectId);
      return [await runSessions(deps().events, qc, q.unit, q.range), ref.sessions(data, q, q.range)];
    });
  });

  it('cohort membership', async function () {
    this.timeout(120_000);
    const criterionArb: fc.Arbitrary<ref.RefCriterion> = fc.oneof(
      fc.record({ kind: fc.constant('property' as const), filter: filterArb }),
      fc.record({
        kind: fc.constant('behavior' as const), event: eventNameArb(true), op: fc.constantFrom('gte' as const, 'lte' as const, 'gt' as const, 'lt' as const, 'eq' as const),
        count: fc.integer({ min: 0, max: 3 }), windowDays: fc.integer({ min: 0, max: 10 }),
      }),
    );
    const qArb = fc.record({ op: fc.constantFrom('and' as const, 'or' as const), criteria: fc.array(criterionArb, { maxLength: 3 }) });
    const now = T0 + 12 * DAY + 5;
    await check(qArb, async (projectId, data, def) => [
      await analyses().membership.members(projectId, def, { now }),
      ref.cohortMembers(data, def, now),
    ]);
  });
});
