import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { useEventStore } from '../support/event-store.js';
import type { EventStore, StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { eventPropLists } from '../../apps/server/src/ingestion/records.js';
import { dialectFor } from '../../apps/server/src/query/dialects/index.js';
import { EventMatcher } from '../../apps/server/src/query/engine/filters.js';
import type { QueryContext } from '../../apps/server/src/query/engine/context.js';
import { runSegmentation, segmentationSql, type SegmentationSpec } from '../../apps/server/src/query/kinds/segmentation/compile.js';

/**
 * A key in MATERIALIZED_PROPERTIES, dropped from it for a run, then configured again: the events
 * written while it was not configured have its value too once it is back (DuckDB fills the column
 * again at start; ClickHouse computes it at insert whatever the configuration), so a filter on it
 * counts what the property lists count.
 */
forEachBackend('events: a materialised property dropped and configured again', (backend) => {
  const T0 = Date.UTC(2024, 4, 6);
  const range = { fromMs: T0, toEndMs: T0 + 7 * 86_400_000 };
  const KEY = 'plan';
  const fixture = useEventStore(backend, { open: false });

  let n = 0;
  const paid = (plan: string): StoredEvent => ({
    project_id: 1, id: ++n, event: 'Paid', distinct_id: `d${n}`, time: T0 + n * 60_000, insert_id: `i${n}`,
    ...eventPropLists({ [KEY]: plan }), received_at: T0,
  });
  const context = (store: EventStore): QueryContext => {
    const d = dialectFor(store.dialect, store.materialized);
    return { d, projectId: 1, events: new EventMatcher(d, new Map()), overrides: false };
  };
  const proQuery: SegmentationSpec = { event: 'Paid', unit: 'week', type: 'total', filters: [{ key: KEY, op: 'eq', value: 'pro' }] };
  /** Paid events on the pro plan, as the store's analysis counts them. */
  const proCount = async (store: EventStore) => {
    const answer = await runSegmentation(store, context(store), proQuery, range);
    return answer.series[0].data.reduce((a, d) => a + d.value, 0);
  };
  /** Opens a store with `materialized`, writes `events` (if any), runs `work`, closes it. */
  const run = async <T>(materialized: string[], events: StoredEvent[], work: (store: EventStore) => Promise<T> = async () => undefined as T): Promise<T> => {
    const store = fixture.open(materialized);
    try {
      await store.migrate();
      if (events.length > 0) await store.writeEvents(1, events);
      return await work(store);
    } finally {
      await store.close();
    }
  };

  it('counts the events written while the key was not configured', async function () {
    this.timeout(60_000);
    await run([KEY], [paid('pro'), paid('free'), paid('pro')]);
    await run([], [paid('pro'), paid('pro'), paid('free'), paid('pro')]);

    const fromLists = await run([], [], proCount);
    assert.equal(fromLists, 5);
    const { sql, count } = await run([KEY], [], async (store) => ({ sql: segmentationSql(context(store), proQuery, range), count: await proCount(store) }));
    assert.ok(!/'plan'/.test(sql), `the filter reads the column, not the lists: ${sql}`);
    assert.equal(count, fromLists);

    // Opened again with the key and written to: the column is current, nothing is refilled wrongly.
    const again = await run([KEY], [paid('pro')], proCount);
    assert.equal(again, fromLists + 1);
    assert.equal(await run([], [], proCount), again);
  });
});
