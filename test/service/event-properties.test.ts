import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { useEventStore } from '../support/event-store.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { drained, ingest } from '../support/ingestion.js';
import { eventProperties, type StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { eventPropLists } from '../../apps/server/src/ingestion/records.js';

/**
 * An event's properties are stored once, as key/value lists plus each value's kind (prop_types),
 * not also as a JSON copy: what an event reads back is still exactly what was sent, on both
 * engines, for rows written since and for rows written before with their JSON copy.
 */
const T0 = Date.UTC(2024, 4, 6);

// Text that looks like other JSON values, values of every JSON kind, keys JSON or JavaScript treat specially.
const SENT: Record<string, unknown> = {
  text: 'x', numberText: '12', boolText: 'true', nullText: 'null', objectText: '{"a":1}', emptyText: '',
  int: 12, float: -0.25, big: 1e21, yes: true, no: false, nothing: null,
  nested: { a: [1, 'two', { three: 3, four: null }], 'b.c': 'd' }, list: [], emptyObject: {},
  unicode: 'ü😀\u2028"\\', 'a.b': 1, '': 'empty key', constructor: 'c',
};
// Sent as JSON text so the key reaches the API as an own property, as any client's JSON would.
const SENT_JSON = JSON.stringify({ event: 'Typed', properties: { distinct_id: 'ann', time: T0, $insert_id: 'typed-1', ...SENT } })
  .replace('"text":', '"__proto__":"proto","text":');

function assertSentProperties(props: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(SENT)) assert.deepEqual(props[k], v, k);
  assert.equal(Object.getOwnPropertyDescriptor(props, '__proto__')?.value, 'proto');
}

forEachBackend('events: properties stored once', (backend) => {
  describe('through the API', () => {
    let t: TestService;
    let acme: Tenant;
    before(async () => {
      t = await sharedService(backend);
      acme = await createTenant(t, 'Acme');
      const r = await ingest(t, acme.project.token).raw('/track', SENT_JSON);
      assert.equal(r.status, 200, r.text);
      await drained(t);
    });

    it('reads back every value as sent, and the row holds no JSON copy', async () => {
      const list = await acme.owner.get(`/api/data/events?projectId=${acme.project.id}`);
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.total, 1);
      assertSentProperties(list.body.events[0].properties);

      const final = t.svc.deps.events.dialect === 'clickhouse' ? 'FINAL' : '';
      const rows = await t.svc.deps.events.query<{ properties: string; prop_types: string; n: number }>(
        `SELECT properties, prop_types, length(prop_keys) AS n FROM events ${final} WHERE project_id = ${acme.project.id}`,
      );
      assert.equal(rows.length, 1);
      assert.equal(rows[0].properties, '');
      assert.equal(rows[0].prop_types.length, Number(rows[0].n));
      assert.match(rows[0].prop_types, /^[sj]+$/);

      // The privacy download reads the same rows through the port.
      const [stored] = await t.svc.deps.events.eventsOfIdentities(acme.project.id, ['ann'], null, 10);
      assertSentProperties(eventProperties(stored));
    });
  });

  describe('the store', () => {
    const fixture = useEventStore(backend);
    const row = (id: number, props: Record<string, unknown>): StoredEvent => ({
      project_id: 1, id, event: 'Typed', distinct_id: 'bo', time: T0 + id, insert_id: `i${id}`, ...eventPropLists(props), received_at: T0,
    });

    it('reads a row written before prop_types from its JSON copy, and one from a store migrated since from its lists', async () => {
      const { store } = fixture;
      // A store from before the column: its rows carry the JSON copy; DuckDB's JSON column had no default.
      await store.command('ALTER TABLE events DROP COLUMN prop_types');
      if (store.dialect === 'duckdb') await store.command('ALTER TABLE events ALTER COLUMN properties DROP DEFAULT');
      const old = { plan: 'pro', seats: 3, code: '007' };
      await store.insertRows('events', [{
        project_id: 1, id: 1, event: 'Typed', distinct_id: 'bo', time: T0 + 1, insert_id: 'i1', properties: JSON.stringify(old),
        prop_keys: Object.keys(old), prop_values: ['pro', '3', '007'], received_at: T0, person_id: 'bo', ...(store.dialect === 'duckdb' ? { person_key: '1' } : {}),
      }]);
      await store.migrate();
      await store.writeEvents(1, [row(2, { plan: 'team', seats: 5, code: '008', flags: ['a'] })]);
      const back = await store.eventsOfIdentities(1, ['bo'], null, 10);
      assert.deepEqual(back.map((r) => ({ ...eventProperties(r) })), [old, { plan: 'team', seats: 5, code: '008', flags: ['a'] }]);
      assert.deepEqual(back.map((r) => r.properties), [JSON.stringify(old), '']);
    });
  });
});
