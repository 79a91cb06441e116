import assert from 'node:assert/strict';
import fc from 'fast-check';
import { useClusterService } from '../support/clickhouse-cluster.js';
import { buildAnalyses } from '../../apps/server/src/query/analyses.js';
import { runSegmentation } from '../../apps/server/src/query/kinds/segmentation/compile.js';
import { runFunnel } from '../../apps/server/src/query/kinds/funnel/compile.js';
import { runRetention } from '../../apps/server/src/query/kinds/retention/compile.js';
import { runFlows } from '../../apps/server/src/query/kinds/flows/compile.js';
import { runSessions } from '../../apps/server/src/query/kinds/sessions/compile.js';
import * as ref from '../support/reference/index.js';
import { DAY, T0, IDS, datasetArb, eventNameArb, filterArb, freshProject, loadDataset } from '../support/reference/harness.js';

/**
 * ClickHouse cluster mode (CLICKHOUSE_CLUSTER) on a two-shard cluster started here (ZooKeeper +
 * two clickhouse-server processes on loopback). The generated datasets of
 * query.generated.test.ts (identity links across distinct_ids, duplicates, window edges) must give
 * exactly the reference evaluator's answer, as the single server does there: so the sharded
 * store answers as one server. Each dataset's rows really sit on both shards. As there, `p` and
 * `r` are materialised properties, and half the datasets are read after the compaction merged
 * their months on every shard, half before (the unmerged months are read FINAL, the merged ones as stored).
 */
const RUNS = Number(process.env.CLUSTER_PROPERTY_RUNS ?? 25);

const rangeArb = fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 12 }))
  .map(([a, len]) => ({ fromMs: T0 + a * DAY, toEndMs: T0 + (a + len + 1) * DAY }));

describe('ClickHouse cluster mode (2 shards)', function () {
  const c = useClusterService({ MATERIALIZED_PROPERTIES: 'p,r' });
  const deps = () => c.t.svc.deps;
  const analyses = () => buildAnalyses(c.t.svc.deps.db, c.t.svc.deps.events);
  const localCount = async (shard: number, table: string, projectId: number) =>
    Number(await c.cluster.query(shard, `SELECT count() FROM ${c.database}.${table}_local WHERE project_id = ${projectId}`));

  it('stores each table as a local table per shard plus a Distributed table, and spreads the rows over both shards', async function () {
    this.timeout(60_000);
    for (const shard of [0, 1]) {
      const tables = (await c.cluster.query(shard, `SELECT name, engine FROM system.tables WHERE database = '${c.database}' ORDER BY name`)).split('\n');
      assert.deepEqual(tables, [
        'event_ids\tDistributed', 'event_ids_feed\tMaterializedView', 'event_ids_local\tReplacingMergeTree',
        'events\tDistributed', 'events_local\tReplacingMergeTree',
        'identity_links\tDistributed', 'identity_links_local\tReplacingMergeTree',
        'profiles\tDistributed', 'profiles_local\tReplacingMergeTree',
      ]);
    }
    const projectId = await freshProject(deps());
    const events = IDS.flatMap((id, i) => [0, 1, 2].map((k) => ({ event: 'A', distinct_id: id, time: T0 + i * 1000 + k, insert_id: `${id}-${k}`, props: {} })));
    await loadDataset(deps(), projectId, { events, links: IDS.slice(3).map((id, i) => ({ distinct_id: id, canonical_id: IDS[i], from_time: 0 })) });
    const perShard = [await localCount(0, 'events', projectId), await localCount(1, 'events', projectId)];
    assert.ok(perShard[0] > 0 && perShard[1] > 0, `events on both shards: ${perShard}`);
    assert.equal(perShard[0] + perShard[1], events.length);
    // A privacy delete of one identity cluster (u1 and its linked a1) runs on every shard's local tables.
    await deps().events.deleteIdentities(projectId, ['u1', 'a1']);
    const left = (await localCount(0, 'events', projectId)) + (await localCount(1, 'events', projectId));
    assert.equal(left, events.length - 6);
    await deps().events.deleteProject(projectId);
    for (const shard of [0, 1]) {
      await waitEmpty(() => localCount(shard, 'events', projectId));
      await waitEmpty(() => localCount(shard, 'identity_links', projectId));
    }
  });

  it('materialises properties on every shard, merges the months ON CLUSTER and reads FINAL only over the unmerged ones', async function () {
    this.timeout(60_000);
    const column = deps().events.materialized.get('p')!;
    for (const shard of [0, 1]) {
      const kinds = await c.cluster.query(shard, `SELECT table, default_kind FROM system.columns WHERE database = '${c.database}' AND name = '${column}' ORDER BY table`);
      assert.equal(kinds, 'events\tDEFAULT\nevents_local\tDEFAULT');
    }
    const projectId = await freshProject(deps());
    const events = IDS.map((id, i) => ({ event: 'A', distinct_id: id, time: T0 + i * 1000, insert_id: `m-${id}`, props: { p: `v${i % 2}` } }));
    await loadDataset(deps(), projectId, { events, links: [] });
    const stored = async (shard: number) => Number(await c.cluster.query(shard,
      `SELECT countIf(${column} = concat('v', toString(toUInt64(time - ${T0}) / 1000 % 2))) FROM ${c.database}.events_local WHERE project_id = ${projectId}`));
    // Computed by the Distributed table at insert and stored as sent on each shard.
    assert.equal((await stored(0)) + (await stored(1)), events.length);
    const month: [number, number] = [T0, Date.UTC(2024, 1, 1)]; // T0 is 2024-01-01 (the servers run in UTC)
    assert.deepEqual(await deps().events.unmergedRanges(), [month], 'the month straight from inserts is read FINAL');
    assert.equal(await deps().events.mergeQuietPartitions(0, 1000), 1);
    for (const shard of [0, 1]) {
      const parts = await c.cluster.query(shard, `SELECT count(), min(level) FROM system.parts WHERE database = '${c.database}' AND table = 'events_local' AND active`);
      assert.equal(parts.split('\t')[0], '1', `shard ${shard + 1}: one part`);
    }
    assert.deepEqual(await deps().events.unmergedRanges(), [], 'merged on every shard: read as stored');
    // A new month written with a copy of its event: it is read FINAL, the merged month as stored,
    // in one UNION ALL over the shards; the copy counted once, with and without a breakdown (a
    // constant column in that split once failed on 18.16's Distributed tables).
    const february = { event: 'A', distinct_id: IDS[2], time: Date.UTC(2024, 1, 3), insert_id: 'm-feb', props: { p: 'v0' } };
    await loadDataset(deps(), projectId, { events: [february, { ...february }], links: [] }, 'links only'); // no compaction after it
    assert.deepEqual(await deps().events.unmergedRanges(), [[Date.UTC(2024, 1, 1), Date.UTC(2024, 2, 1)]]);
    const all = { events: [...events, february, { ...february }], links: [] };
    const qc = await analyses().contexts.forProject(projectId);
    const range = { fromMs: T0, toEndMs: Date.UTC(2024, 1, 10) };
    for (const breakdown of ['p', undefined]) {
      const q = { event: 'A', unit: 'day' as const, type: 'total' as const, breakdown, filters: [] };
      assert.deepStrictEqual(await runSegmentation(deps().events, qc, q, range), ref.segmentation(all, q, range));
    }
    await deps().events.mergeQuietPartitions(0, 1000);
    assert.deepEqual(await deps().events.unmergedRanges(), []);
    await deps().events.deleteProject(projectId);
  });

  const check = <Q>(queryArb: fc.Arbitrary<Q>, run: (projectId: number, data: ref.RefData, q: Q) => Promise<[unknown, unknown]>) =>
    fc.assert(
      fc.asyncProperty(datasetArb, queryArb, fc.boolean(), async (data, q, merged) => {
        const projectId = await freshProject(deps());
        await loadDataset(deps(), projectId, data);
        if (merged) await deps().events.mergeQuietPartitions(0, 1000);
        const [engine, expected] = await run(projectId, data, q);
        assert.deepStrictEqual(engine, expected);
      }),
      { numRuns: RUNS },
    );

  it('segmentation agrees with the reference', async function () {
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

  it('funnels agree with the reference', async function () {
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

  it('retention agrees with the reference', async function () {
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

  it('flows agree with the reference', async function () {
    this.timeout(120_000);
    const qArb = fc.record({
      event: fc.constantFrom('A', 'B', 'D'), direction: fc.constantFrom('after' as const, 'before' as const),
      steps: fc.integer({ min: 1, max: 3 }), limit: fc.integer({ min: 1, max: 5 }), range: rangeArb,
    });
    await check(qArb, async (projectId, data, q) => {
      const qc = await analyses().contexts.forProject(projectId);
      return [await runFlows(deps().events, qc, q, q.range), ref.flows(data, q, q.range)];
    });
  });

  it('sessions agree with the reference', async function () {
    this.timeout(120_000);
    const qArb = fc.record({ unit: fc.constantFrom('hour' as const, 'day' as const, 'week' as const), range: rangeArb });
    await check(qArb, async (projectId, data, q) => {
      const qc = await analyses().contexts.forProject(projectId);
      return [await runSessions(deps().events, qc, q.unit, q.range), ref.sessions(data, q, q.range)];
    });
  });

  it('cohort membership agrees with the reference', async function () {
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

async function waitEmpty(count: () => Promise<number>) {
  const deadline = Date.now() + 30_000;
  while ((await count()) !== 0) {
    if (Date.now() > deadline) throw new Error('rows left on a shard after the delete');
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('ClickHouse cluster mode, replicated (1 shard, 2 replicas)', function () {
  const c = useClusterService({ CLICKHOUSE_REPLICATED: '1' }, { replicated: true });

  it('creates ReplicatedReplacingMergeTree local tables; both replicas hold every row and apply deletes', async function () {
    this.timeout(60_000);
    for (const replica of [0, 1]) {
      const engines = await c.cluster.query(replica, `SELECT engine FROM system.tables WHERE database = '${c.database}' AND name LIKE '%_local' ORDER BY name`);
      assert.deepEqual(engines.split('\n'), ['ReplicatedReplacingMergeTree', 'ReplicatedReplacingMergeTree', 'ReplicatedReplacingMergeTree', 'ReplicatedReplacingMergeTree']);
    }
    const deps = c.t.svc.deps;
    const projectId = await freshProject(deps);
    const events = IDS.map((id, i) => ({ event: 'A', distinct_id: id, time: T0 + i, insert_id: `r-${id}`, props: {} }));
    await loadDataset(deps, projectId, { events, links: [] });
    const count = async (replica: number) => Number(await c.cluster.query(replica, `SELECT count() FROM ${c.database}.events_local WHERE project_id = ${projectId}`));
    await waitUntil(async () => (await count(0)) === events.length && (await count(1)) === events.length, 'both replicas hold every row');
    await deps.events.deleteIdentities(projectId, [IDS[0]]);
    await waitUntil(async () => (await count(0)) === events.length - 1 && (await count(1)) === events.length - 1, 'the delete on both replicas');
    const qc = await buildAnalyses(deps.db, deps.events).contexts.forProject(projectId);
    const range = { fromMs: T0, toEndMs: T0 + DAY };
    assert.deepStrictEqual(
      await runSegmentation(deps.events, qc, { event: 'A', unit: 'day', type: 'unique', filters: [] }, range),
      ref.segmentation({ events: events.slice(1), links: [] }, { event: 'A', unit: 'day', type: 'unique', filters: [] }, range),
    );
  });
});

async function waitUntil(probe: () => Promise<boolean>, what: string) {
  const deadline = Date.now() + 30_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
