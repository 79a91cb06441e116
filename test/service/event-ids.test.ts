import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { useEventStore } from '../support/event-store.js';
import type { StoredEvent } from '../../apps/server/src/ports/events/index.js';

/**
 * `event_ids`, the key the worker looks an alias up by to decide whether it has history: every
 * way events are written puts their ids in it, a privacy delete takes them out, and a store that
 * predates the table gets it filled from its events when it migrates.
 */
forEachBackend('events: event_ids (which ids have history)', (backend) => {
  const T0 = Date.UTC(2024, 4, 6);
  const fixture = useEventStore(backend);
  let n = 0;
  const event = (projectId: number, distinctId: string): StoredEvent => ({
    project_id: projectId, id: ++n, event: 'Viewed', distinct_id: distinctId, time: T0 + n, insert_id: `i${n}`,
    prop_keys: [], prop_values: [], prop_types: '', received_at: T0,
  });
  const has = async (projectId: number, ids: string[]) => [...(await fixture.store.idsWithEvents(projectId, ids))].sort();

  it('holds the ids of events written through writeEvents and insertEvents, per project; a delete takes them out', async () => {
    const { store } = fixture;
    await store.writeEvents(1, [event(1, 'ann'), event(1, 'ann'), event(1, "o'hara"), event(1, 'über-😀')]);
    await store.insertEvents([event(1, 'bob'), event(2, 'cy')]);
    assert.deepEqual(await has(1, ['ann', 'bob', 'cy', "o'hara", 'über-😀', 'nobody', '']), ['ann', 'bob', "o'hara", 'über-😀']);
    assert.deepEqual(await has(2, ['ann', 'cy']), ['cy']);
    await store.deleteIdentities(1, ['ann']);
    assert.deepEqual(await has(1, ['ann', 'bob']), ['bob']);
    await store.deleteProject(2);
    // ClickHouse deletes are mutations that finish in the background.
    for (let i = 0; i < 100 && (await has(2, ['cy'])).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await has(2, ['cy']), []);
  });

  it('is filled from the stored events when a store first gets it, and only then', async () => {
    const { store } = fixture;
    await store.writeEvents(3, [event(3, 'dee'), event(3, 'eve')]);
    // A store from before the table: events, and an empty event_ids.
    await store.command(store.dialect === 'clickhouse' ? 'TRUNCATE TABLE event_ids' : 'DELETE FROM event_ids');
    assert.deepEqual(await has(3, ['dee', 'eve']), []);
    await store.migrate();
    assert.deepEqual(await has(3, ['dee', 'eve', 'fay']), ['dee', 'eve']);
    // Filled once: a later start does not scan the events again (an id only in the events stays out).
    await store.command(store.dialect === 'clickhouse'
      ? "ALTER TABLE event_ids DELETE WHERE project_id = 3 AND distinct_id = 'eve'"
      : "DELETE FROM event_ids WHERE project_id = 3 AND distinct_id = 'eve'");
    for (let i = 0; i < 100 && (await has(3, ['eve'])).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
    await store.migrate();
    assert.deepEqual(await has(3, ['dee', 'eve']), ['dee']);
  });
});
