import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import { eventsCompactionLoop } from '../../apps/server/src/data/compaction.js';
import { buildAnalyses } from '../../apps/server/src/query/analyses.js';
import { flowsSql } from '../../apps/server/src/query/kinds/flows/compile.js';

/**
 * Reads that count every row deduplicate only the months that may hold copies of a dedup key
 * (ClickHouse: not merged yet), and the compaction worker merges quiet months so they are read
 * as stored. The answers count each event once in every state.
 */
forEachBackend('events: unmerged months and compaction', (backend) => {
  let t: TestService;
  let acme: Tenant;
  const JAN = Date.UTC(2024, 0, 10, 12);
  const FEB = Date.UTC(2024, 1, 10, 12);
  const janRange: [number, number] = [Date.UTC(2024, 0, 1), Date.UTC(2024, 1, 1)];
  const febRange: [number, number] = [Date.UTC(2024, 1, 1), Date.UTC(2024, 2, 1)];

  before(async () => {
    t = await startTestService(backend, { EVENTS_MERGE_INTERVAL_MS: '0', IDENTITY_FOLD_INTERVAL_MS: '0' });
    acme = await createTenant(t, 'Acme');
  });
  after(async () => t?.close());

  const clickhouse = () => t.svc.deps.events.dialect === 'clickhouse';
  /** Two people's visits in January and February; `$insert_id`s make a resend the same event. */
  const visits = [
    ev('Viewed', 'ann', { time: JAN, $insert_id: 'a1' }), ev('Bought', 'ann', { time: JAN + 60_000, $insert_id: 'a2' }),
    ev('Viewed', 'bob', { time: JAN + 5_000, $insert_id: 'b1' }), ev('Viewed', 'bob', { time: JAN + 65_000, $insert_id: 'b2' }),
    ev('Viewed', 'ann', { time: FEB, $insert_id: 'a3' }), ev('Bought', 'ann', { time: FEB + 60_000, $insert_id: 'a4' }),
  ];
  const send = async (events: unknown[]) => {
    assert.equal((await ingest(t, acme.project.token).post('/track', events)).status, 200);
    await drained(t);
  };
  /** Totals per event, flows after Viewed and a behaviour cohort, through the API. */
  const answers = async () => {
    const out: Record<string, unknown> = {};
    for (const event of ['Viewed', 'Bought']) {
      const r = await acme.owner.post('/api/query/segmentation', { projectId: acme.project.id, event, from: '2024-01-01', to: '2024-02-29', unit: 'month', type: 'total' });
      assert.equal(r.status, 200, r.text);
      out[event] = (r.body.series[0].data as Array<{ value: number }>).map((d) => d.value);
    }
    const f = await acme.owner.post('/api/query/flows', { projectId: acme.project.id, event: 'Viewed', direction: 'after', steps: 2, from: '2024-01-01', to: '2024-02-29' });
    assert.equal(f.status, 200, f.text);
    out.flows = f.body;
    const c = await acme.owner.post('/api/cohorts/preview', { projectId: acme.project.id, definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'Viewed', op: 'gte', count: 2, windowDays: 0 }] } });
    assert.equal(c.status, 200, c.text);
    out.viewedTwice = c.body.count;
    return out;
  };
  const expected = {
    Viewed: [3, 1],
    Bought: [1, 1],
    // ann: Viewed, Bought (January), Viewed (February); bob: Viewed, Viewed.
    flows: { paths: [{ path: ['Viewed', 'Bought', 'Viewed'], count: 1 }, { path: ['Viewed', 'Viewed'], count: 1 }], total: 2 },
    viewedTwice: 2,
  };
  /** After bob's late February visit. */
  const later = {
    ...expected, Viewed: [3, 2],
    flows: { paths: [{ path: ['Viewed', 'Bought', 'Viewed'], count: 1 }, { path: ['Viewed', 'Viewed', 'Viewed'], count: 1 }], total: 2 },
  };
  /** The flows SQL the API runs now (its context reads the unmerged ranges). */
  const flowsText = async () => flowsSql(await buildAnalyses(t.svc.deps.db, t.svc.deps.events).contexts.forProject(acme.project.id),
    { event: 'Viewed', direction: 'after', steps: 2, limit: 20 }, { fromMs: janRange[0], toEndMs: febRange[1] });

  it('counts each event once while copies are stored, after a merge, and with one month written again', async () => {
    await send(visits);
    await send(visits); // a client retry of the whole batch: the same dedup keys again
    // DuckDB dedups at write; ClickHouse keeps the copies until a merge.
    assert.deepEqual(await t.svc.deps.events.unmergedRanges(), clickhouse() ? [janRange, febRange] : []);
    assert.deepEqual(await answers(), expected);

    // Not quiet yet: nothing is merged.
    assert.equal(await t.svc.deps.events.mergeQuietPartitions(3_600_000, 12), 0);
    assert.equal(await t.svc.deps.events.mergeQuietPartitions(0, 12), clickhouse() ? 2 : 0);
    assert.deepEqual(await t.svc.deps.events.unmergedRanges(), []);
    assert.deepEqual(await answers(), expected);

    // February is written to again (a late event and a copy): only February is deduplicated.
    await send([visits[4], ev('Viewed', 'bob', { time: FEB + 90_000, $insert_id: 'b3' })]);
    assert.deepEqual(await t.svc.deps.events.unmergedRanges(), clickhouse() ? [febRange] : []);
    assert.deepEqual(await answers(), later);
  });

  // DuckDB never deduplicates at read: the SQL shape is ClickHouse's only.
  if (backend.name === 'production') it('reads merged months as stored: FINAL only over the unmerged ranges', async () => {
    const sql = await flowsText();
    assert.match(sql, new RegExp(`FROM events FINAL WHERE .*\\(time >= ${febRange[0]} AND time < ${febRange[1]}\\)`));
    assert.match(sql, new RegExp(`FROM events WHERE .* AND NOT \\(\\(time >= ${febRange[0]} AND time < ${febRange[1]}\\)\\)`));
  });

  it('the worker merges a quiet month', async () => {
    const worker = eventsCompactionLoop(t.svc.deps, { intervalMs: 50, quietMs: 0 });
    try {
      const deadline = Date.now() + 10_000;
      while ((await t.svc.deps.events.unmergedRanges()).length > 0) {
        assert.ok(Date.now() < deadline, 'the worker did not merge the written month');
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await worker.stop();
    }
    assert.equal((await flowsText()).includes('FINAL'), false);
    assert.deepEqual(await answers(), later);
  });
});
