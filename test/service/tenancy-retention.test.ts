import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { forEachBackend } from '../support/backends.js';
import { useEventStore } from '../support/event-store.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import type { EventStore, StoredEvent } from '../../apps/server/src/ports/events/port.js';
import { applyRetentionExclusively } from '../../apps/server/src/retention/loop.js';

const DAY = 86_400_000;

/**
 * Retention (`retentionDays`): the worker deletes a project's events older than that on both
 * engines (ClickHouse: a mutation, asynchronous, waited for), every RETENTION_INTERVAL_MS. Older
 * events leave the analyses, newer ones stay, other projects are untouched; with a materialised
 * property the remaining rows keep their column.
 */
forEachBackend('tenancy: retention', (backend) => {
  let t: TestService;
  let kept: Tenant;
  let other: Tenant;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { RETENTION_INTERVAL_MS: '300', MATERIALIZED_PROPERTIES: 'plan' });
    kept = await createTenant(t, 'ret');
    other = await createTenant(t, 'ret-other');
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('deletes the events past retentionDays, keeps newer ones and other projects', async function () {
    this.timeout(90_000);
    const now = Date.now();
    const old = now - 60 * DAY;
    const recent = now - 2 * DAY;
    for (const x of [kept, other]) {
      const res = await ingest(t, x.project.token).post('/track', [
        ev('view', 'a', { time: old, plan: 'pro' }), ev('view', 'b', { time: old + 1000, plan: 'free' }),
        ev('view', 'a', { time: recent, plan: 'pro' }),
      ]);
      assert.equal(res.status, 200, res.text);
    }
    await drained(t);
    const data = async (x: Tenant) => (await t.admin.get(`/api/data/events?projectId=${x.project.id}&from=${new Date(now - 90 * DAY).toISOString().slice(0, 10)}&limit=100`)).body;
    assert.equal((await data(kept)).events?.length ?? (await data(kept)).length, 3);
    const set = await t.client(kept.tokens.admin).patch(`/api/projects/${kept.project.id}`, { retentionDays: 30 });
    assert.equal(set.status, 200, set.text);
    const start = Date.now();
    let left: any[] = [];
    while (Date.now() - start < 60_000) {
      const body = await data(kept);
      left = body.events ?? body;
      if (left.length === 1) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    assert.deepEqual(left.map((e: { time: number }) => e.time), [recent]);
    const otherLeft = (await data(other)).events ?? (await data(other));
    assert.equal(otherLeft.length, 3, 'a project without retention keeps everything');
    // Analyses: the old month counts nothing, the recent one still counts, on the materialised column too.
    const seg = await t.admin.post('/api/query/segmentation', {
      projectId: kept.project.id, event: 'view', from: new Date(now - 90 * DAY).toISOString().slice(0, 10), to: new Date(now).toISOString().slice(0, 10),
      unit: 'month', type: 'total', breakdown: 'plan',
    });
    assert.equal(seg.status, 200, seg.text);
    const text = JSON.stringify(seg.body);
    assert.ok(!text.includes('"free"'), `the deleted plan=free event is gone: ${text.slice(0, 300)}`);
    assert.ok(text.includes('pro'), 'the recent plan=pro event is still there');
  });
});

/** Every worker replica runs the retention loop; where they share PostgreSQL one pass runs at a time. */
forEachBackend('tenancy: retention, one pass at a time', (backend) => {
  let t: TestService;
  before(async function () {
    this.timeout(60_000);
    // The service's own loop off: the passes below are the only ones.
    t = await startTestService(backend, { RETENTION_INTERVAL_MS: '0' });
    const x = await createTenant(t, 'ret-lock');
    const set = await t.client(x.tokens.admin).patch(`/api/projects/${x.project.id}`, { retentionDays: 30 });
    assert.equal(set.status, 200, set.text);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('one pass at a time across processes sharing PostgreSQL: a second pass while one runs skips', async function () {
    this.timeout(60_000);
    const deps = t.svc.deps;
    const withRetention = (await deps.projects.withRetention()).length;
    assert.ok(withRetention >= 1, 'a project with retentionDays');
    // Counted around the store's own delete; the first pass waits inside it until released.
    const events = deps.events as Partial<EventStore>;
    const { deleteEventsBefore } = deps.events;
    let deletes = 0;
    let entered!: () => void;
    const inside = new Promise<void>((r) => { entered = r; });
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    events.deleteEventsBefore = async (projectId, beforeMs) => {
      deletes++;
      entered();
      await gate;
      return deleteEventsBefore(projectId, beforeMs);
    };
    try {
      if (deps.db.client.config.client === 'pg') {
        // Two transactions hold two pooled connections: two sessions, as two worker processes would.
        const first = applyRetentionExclusively(deps);
        await inside;
        // A second pass that did not skip would wait at the gate too: it answers within 5 s or fails.
        const second = await Promise.race([applyRetentionExclusively(deps), new Promise((r) => setTimeout(r, 5000, 'waiting inside a delete'))]);
        assert.equal(second, null, 'the second pass skipped');
        release();
        assert.equal(typeof await first, 'number');
        assert.equal(deletes, withRetention, 'only the first pass deleted');
        // The lock went with the first pass's transaction: the next pass runs.
        assert.equal(typeof await applyRetentionExclusively(deps), 'number');
        assert.equal(deletes, 2 * withRetention);
      } else {
        release();
        assert.equal(typeof await applyRetentionExclusively(deps), 'number', 'SQLite: one process, the pass runs');
        assert.equal(deletes, withRetention);
      }
    } finally {
      release();
      delete events.deleteEventsBefore;
    }
  });
});

const row = (projectId: number, distinctId: string, time: number, n: number): StoredEvent => ({
  project_id: projectId, id: n, event: 'view', distinct_id: distinctId, time, insert_id: `i${n}`,
  prop_keys: ['plan'], prop_values: ['pro'], prop_types: 's', received_at: time,
});

/** The port: derived rows follow (event_ids), the cut-off is exact, other projects stay. */
forEachBackend('tenancy: retention in the event store', (backend) => {
  const fixture = useEventStore(backend);
  it('deleteEventsBefore: events before the cut-off go, ids left without events leave event_ids', async function () {
    this.timeout(60_000);
    const store = fixture.store;
    const cut = Date.UTC(2024, 5, 1);
    await store.writeEvents(1, [row(1, 'old-only', cut - DAY, 1), row(1, 'both', cut - 40 * DAY, 2), row(1, 'both', cut, 3), row(1, 'new', cut + DAY, 4)]);
    await store.writeEvents(2, [row(2, 'old-only', cut - DAY, 5)]);
    assert.deepEqual([...await store.idsWithEvents(1, ['old-only', 'both', 'new'])].sort(), ['both', 'new', 'old-only']);
    assert.equal(await store.deleteEventsBefore(1, cut), true);
    assert.equal(await store.deleteEventsBefore(1, cut), false, 'nothing expired any more: no write');
    const left = await store.query<{ distinct_id: string; time: number }>('SELECT distinct_id, time FROM events WHERE project_id = 1 ORDER BY time');
    assert.deepEqual(left.map((r) => [r.distinct_id, Number(r.time)]), [['both', cut], ['new', cut + DAY]], 'the event at the cut-off stays');
    assert.deepEqual([...await store.idsWithEvents(1, ['old-only', 'both', 'new'])].sort(), ['both', 'new']);
    assert.deepEqual([...await store.idsWithEvents(2, ['old-only'])], ['old-only'], 'another project keeps its ids');
    assert.deepEqual([...(await store.countEvents([1, 2])).entries()].sort(), [[1, 2], [2, 1]]);
  });
});

/** DuckDB's file does not keep growing under insert/delete cycles (the retention delete checkpoints with vacuuming). */
forEachBackend('tenancy: retention keeps the embedded file bounded', (backend) => {
  if (backend.name !== 'embedded') return;
  const fixture = useEventStore(backend);
  it('five cycles of 40,000 events inserted then expired: the file stays within 1.5x of the first cycle', async function () {
    this.timeout(180_000);
    const store = fixture.store;
    const file = (store as unknown as { file?: string; path?: string }).file ?? (store as unknown as { path?: string }).path;
    const sizes: number[] = [];
    for (let cycle = 0; cycle < 5; cycle++) {
      const base = Date.UTC(2020, 0, 1) + cycle * DAY;
      const rows: StoredEvent[] = Array.from({ length: 40_000 }, (_, i) => ({
        project_id: 7, id: cycle * 100_000 + i, event: 'view', distinct_id: `u${i % 500}`, time: base + i, insert_id: `c${cycle}-${i}`,
        prop_keys: ['plan', 'path'], prop_values: ['pro', `/page/${i % 97}/${'x'.repeat(40)}`], prop_types: 'ss', received_at: base + i,
      }));
      await store.writeEvents(7, rows);
      await store.command('CHECKPOINT');
      await store.deleteEventsBefore(7, base + 40_000);
      const n = await store.query<{ n: number }>('SELECT count(*) AS n FROM events WHERE project_id = 7');
      assert.equal(Number(n[0].n), 0);
      sizes.push(fs.statSync(file ?? path.join('.', 'missing')).size);
    }
    if (process.env.RETENTION_SIZES) console.log(`    file sizes after each cycle: ${sizes.join(', ')} bytes`);
    assert.ok(sizes[4] <= sizes[0] * 1.5, `file sizes per cycle: ${sizes.join(', ')}`);
  });
});
