import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { useEventStore } from '../support/event-store.js';
import type { StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { personKey } from '../../apps/server/src/ports/events/schema.js';
import { dialectFor } from '../../apps/server/src/query/dialects/index.js';
import { EventMatcher } from '../../apps/server/src/query/engine/filters.js';
import { runSegmentation } from '../../apps/server/src/query/kinds/segmentation/compile.js';
import { runSessions } from '../../apps/server/src/query/kinds/sessions/compile.js';

/**
 * `person_key`, the number analyses group persons by, is the same function of person_id in Node,
 * DuckDB and ClickHouse; a store from before the column gets it for its stored events, and the
 * answers do not change.
 */
forEachBackend('events: person_key', (backend) => {
  const T0 = Date.UTC(2024, 4, 6);
  const range = { fromMs: T0, toEndMs: T0 + 7 * 86_400_000 };
  const fixture = useEventStore(backend);

  // Ids of every kind of character: the key hashes their UTF-8 bytes in all three places.
  const ids = ['ann', 'Bob@example.com', 'über-😀', "o'hara", '12345', 'a'.repeat(300)];
  let n = 0;
  const event = (distinctId: string, dt: number): StoredEvent => ({
    project_id: 1, id: ++n, event: 'Viewed', distinct_id: distinctId, time: T0 + dt, insert_id: `i${n}`,
    prop_keys: [], prop_values: [], prop_types: '', received_at: T0,
  });
  const stored = async () => {
    const final = fixture.store.dialect === 'clickhouse' ? 'FINAL' : '';
    const rows = await fixture.store.query<{ person_id: string; k: string }>(`SELECT person_id, CAST(person_key AS ${fixture.store.dialect === 'clickhouse' ? 'String' : 'VARCHAR'}) AS k FROM events ${final} WHERE project_id = 1`);
    return rows.map((r) => [r.person_id, r.k]);
  };
  const answers = async () => {
    const d = dialectFor(fixture.store.dialect, fixture.store.materialized);
    const q = { d, projectId: 1, events: new EventMatcher(d, new Map()), overrides: false };
    return {
      unique: await runSegmentation(fixture.store, q, { event: 'Viewed', unit: 'day', type: 'unique' }, range),
      sessions: await runSessions(fixture.store, q, 'day', range),
    };
  };

  it('is the first 8 bytes of MD5 in Node and both engines, and a store from before it gets it', async () => {
    // Two sessions for ann (a 2-hour gap), one for everyone else.
    await fixture.store.writeEvents(1, [...ids.map((id, i) => event(id, i * 60_000)), event('ann', 2 * 3_600_000), event('ann', 2 * 3_600_000 + 60_000)]);
    const rows = await stored();
    assert.equal(rows.length, ids.length + 2);
    for (const [person, key] of rows) assert.equal(key, personKey(person).toString(), person);
    assert.equal(personKey('abc').toString(), '10376663631224000432'); // ClickHouse: SELECT halfMD5('abc')
    const before = await answers();
    assert.equal(before.unique.series[0].data[0].value, ids.length);
    assert.equal(before.sessions.series[0].sessions, ids.length + 1);

    // A store written before the column: drop it, migrate again.
    await fixture.store.command('ALTER TABLE events DROP COLUMN person_key');
    await fixture.store.migrate();
    if (fixture.store.dialect === 'clickhouse') {
      // Parts written before the column compute it when read, and the compaction stores it.
      assert.ok((await fixture.store.mergeQuietPartitions(3_600_000, 10)) >= 1);
      const parts = await fixture.store.query<{ n: number }>(`SELECT count() AS n FROM system.parts_columns
        WHERE database = currentDatabase() AND table = 'events' AND active AND column = 'person_key'`);
      assert.ok(Number(parts[0].n) >= 1);
    }
    assert.deepEqual((await stored()).sort(), rows.sort());
    assert.deepEqual(await answers(), before);
  });
});
