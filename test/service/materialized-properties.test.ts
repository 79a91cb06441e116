import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { useEventStore } from '../support/event-store.js';
import type { EventStore, StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { eventPropLists } from '../../apps/server/src/ingestion/records.js';
import { dialectFor } from '../../apps/server/src/query/dialects/index.js';
import { EventMatcher } from '../../apps/server/src/query/engine/filters.js';
import type { QueryContext } from '../../apps/server/src/query/engine/context.js';
import { runSegmentation, segmentationSql } from '../../apps/server/src/query/kinds/segmentation/compile.js';

/**
 * A property named in MATERIALIZED_PROPERTIES gets a column of its own in an existing store
 * (DuckDB fills it for the stored events; ClickHouse computes it for parts written before, and
 * stores it at the next merge), events written afterwards fill it, and analyses read it instead
 * of the property lists with the same answers.
 */
forEachBackend('events: materialised properties', (backend) => {
  const T0 = Date.UTC(2024, 4, 6);
  const range = { fromMs: T0, toEndMs: T0 + 7 * 86_400_000 };
  const fixture = useEventStore(backend, { open: false });
  const open = (materialized: string[]) => fixture.open(materialized);

  let n = 0;
  const event = (distinctId: string, props: Record<string, string>, dt = 0): StoredEvent => ({
    project_id: 1, id: ++n, event: 'Paid', distinct_id: distinctId, time: T0 + dt + n * 1000, insert_id: `i${n}`,
    ...eventPropLists(props), received_at: T0,
  });
  const context = (store: EventStore): QueryContext => {
    const d = dialectFor(store.dialect, store.materialized);
    return { d, projectId: 1, events: new EventMatcher(d, new Map()), overrides: false };
  };
  /** Totals by plan, unique payers on a pro plan, and payers whose plan contains "o", per day. */
  const answers = async (store: EventStore) => {
    const q = context(store);
    return {
      byPlan: await runSegmentation(store, q, { event: 'Paid', unit: 'day', type: 'total', breakdown: 'plan' }, range),
      pro: await runSegmentation(store, q, { event: 'Paid', unit: 'day', type: 'unique', filters: [{ key: 'plan', op: 'eq', value: 'pro' }] }, range),
      noPlan: await runSegmentation(store, q, { event: 'Paid', unit: 'week', type: 'total', filters: [{ key: 'plan', op: 'not_set' }] }, range),
      withO: await runSegmentation(store, q, { event: 'Paid', unit: 'week', type: 'unique', filters: [{ key: 'plan', op: 'contains', value: 'o' }] }, range),
    };
  };

  it('adds the column to a store that has events, fills it for new ones, and answers the same from it', async () => {
    const plain = open([]);
    await plain.migrate();
    await plain.writeEvents(1, [event('ann', { plan: 'pro', seats: '3' }), event('bob', { plan: 'free' }), event('cyd', { seats: '1' }), event('ann', { plan: 'pro' }, 86_400_000)]);
    const before = await answers(plain);
    assert.deepEqual(before.byPlan.series.map((s) => [s.name, s.data.reduce((a, d) => a + d.value, 0)]).sort(), [['(none)', 1], ['free', 1], ['pro', 2]].sort());
    await plain.close();

    const store = open(['plan', 'never set']);
    await store.migrate();
    await store.migrate(); // idempotent
    assert.deepEqual(await answers(store), before);
    // The analysis reads the column, not the lists.
    const column = store.materialized.get('plan')!;
    const sql = segmentationSql(context(store), { event: 'Paid', unit: 'day', type: 'total', breakdown: 'plan', filters: [{ key: 'plan', op: 'eq', value: 'pro' }] }, range);
    assert.ok(sql.includes(column), sql);
    assert.ok(!/'plan'/.test(sql), sql);

    // Events written now fill the column at write time.
    await store.writeEvents(1, [event('dan', { plan: 'pro' }), event('eve', { other: 'x' })]);
    const after = await answers(store);
    assert.equal(after.pro.series[0].data.reduce((a, d) => a + d.value, 0), 3); // ann twice (two days), dan
    assert.equal(after.noPlan.series[0].data.reduce((a, d) => a + d.value, 0), 2); // cyd, eve
    // ClickHouse: the compaction rewrites the month whose parts lack the column, even when it is
    // not quiet, then the column is stored, not computed; same answers.
    await store.mergeQuietPartitions(3_600_000, 12);
    if (store.dialect === 'clickhouse') {
      const lacking = await store.query<{ n: number }>(`SELECT count() AS n FROM system.parts_columns WHERE database = currentDatabase() AND table = 'events' AND active AND column = '${column}'`);
      const parts = await store.query<{ n: number }>(`SELECT count() AS n FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active`);
      assert.equal(Number(lacking[0].n), Number(parts[0].n));
    }
    assert.deepEqual(await answers(store), after);
    const stored = await store.query<{ v: string | null }>(`SELECT ${column} AS v FROM events ORDER BY id`);
    assert.deepEqual(stored.map((r) => r.v), ['pro', 'free', null, 'pro', 'pro', null]);
    await store.close();
  });
});
