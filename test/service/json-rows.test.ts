import assert from 'node:assert/strict';
import { JsonRowsEncoder } from '../../apps/server/src/ports/events/json-rows.js';
import { forEachBackend } from '../support/backends.js';
import { useEventStore } from '../support/event-store.js';
import type { StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { eventProperties } from '../../apps/server/src/ports/events/index.js';

/** The ClickHouse insert bodies: JSONEachRow written into reused buffers. */
describe('events: JSONEachRow bodies in reused buffers', () => {
  const expected = (rows: object[]) => Buffer.from(rows.map((r) => JSON.stringify(r) + '\n').join(''));

  it('writes each row as JSON.stringify does, in UTF-8, one per line', () => {
    const rows = [
      { a: 1, s: 'plain' },
      { s: 'über 😀 \u2028 "quoted" \\ \n tab\t', lone: '\ud800x', n: null, list: ['x', 'ÿ'] },
      {},
    ];
    const { body } = new JsonRowsEncoder().encode(rows);
    assert.deepEqual(body, expected(rows));
  });

  it('grows past its first buffer, and reuses a buffer only once it is handed back', () => {
    const encoder = new JsonRowsEncoder();
    const big = Array.from({ length: 3 }, (_, i) => ({ i, text: 'é'.repeat(700_000) })); // about 4 MB of UTF-8
    const first = encoder.encode(big);
    assert.deepEqual(first.body, expected(big));
    // Not handed back: the next body gets another buffer, and the first stays as it was.
    const second = encoder.encode([{ other: true }]);
    assert.notEqual(second.body.buffer, first.body.buffer);
    assert.deepEqual(first.body, expected(big));
    first.done();
    const third = encoder.encode([{ again: 1 }]);
    assert.equal(third.body.buffer, first.body.buffer);
    assert.deepEqual(third.body, expected([{ again: 1 }]));
  });
});

forEachBackend('events: inserted rows read back as written', (backend) => {
  const fixture = useEventStore(backend);
  it('keeps multi-byte text and rows larger than a first body buffer intact', async () => {
    const { store } = fixture;
    const T0 = Date.UTC(2024, 4, 6);
    const big = 'ß'.repeat(600_000);
    const rows: StoredEvent[] = [
      { project_id: 7, id: 1, event: 'Viewed 😀', distinct_id: 'über', time: T0, insert_id: 'a', prop_keys: ['t'], prop_values: ['ü\u2028"'], prop_types: 's', received_at: T0 },
      { project_id: 7, id: 2, event: 'Big', distinct_id: 'über', time: T0 + 1, insert_id: 'b', prop_keys: ['big'], prop_values: [big], prop_types: 's', received_at: T0 },
    ];
    await store.insertEvents(rows);
    await store.insertEvents([{ ...rows[0], id: 3, insert_id: 'c', time: T0 + 2 }]); // a second body through the same buffer
    const back = await store.eventsOfIdentities(7, ['über'], null, 10);
    assert.deepEqual(back.map((r) => [r.event, r.insert_id, r.prop_values[0].length]), [['Viewed 😀', 'a', 3], ['Big', 'b', big.length], ['Viewed 😀', 'c', 3]]);
    assert.equal(back[1].prop_values[0], big);
    assert.deepEqual({ ...eventProperties(back[0]) }, { t: 'ü\u2028"' });
  });
});
