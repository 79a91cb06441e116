import assert from 'node:assert/strict';
import { LinkRequests } from '../../apps/server/src/identity/requests.js';

/** The Mixpanel identity rules alone (pure): which links a unit's records ask for, in order. */
describe('identity: the link requests of an ingestion unit', () => {
  const ev = (event: string, distinct_id: string, properties: Record<string, unknown> = {}) => ({ event, distinct_id, properties });

  it('$device_id/$user_id sent as the user and $identify ask for retroactive links, each pair once', () => {
    const links = new LinkRequests();
    links.event(ev('view', 'u1', { $device_id: 'd1', $user_id: 'u1' }), 10);
    links.event(ev('view', 'u1', { $device_id: 'd1', $user_id: 'u1' }), 11); // repeated on every identified event
    links.event(ev('view', 'd2', { $device_id: 'd2', $user_id: 'u2' }), 12); // sent as the device: no link
    links.event(ev('view', 'u3', { $device_id: 'u3', $user_id: 'u3' }), 13); // the same id: no link
    links.event(ev('$identify', 'u4', { $anon_distinct_id: 'a4' }), 14);
    links.event(ev('view', 'u5', { $anon_distinct_id: 'a5' }), 15); // only $identify reads it
    assert.deepEqual(links.requests, [
      { alias: 'd1', distinctId: 'u1', retroactive: 'always', at: 10 },
      { alias: 'a4', distinctId: 'u4', retroactive: 'always', at: 14 },
    ]);
  });

  it('an alias counts the events sent before it in the unit as stored, never those after', () => {
    const links = new LinkRequests();
    links.alias('anon', 'user', 1);
    links.event(ev('view', 'anon'), 2);
    links.alias('anon', 'user', 3);
    assert.equal(links.length, 2);
    assert.deepEqual(links.requests.map((r) => [r.retroactive, r.at, r.aliasHasPendingEvents]), [['auto', 1, false], ['auto', 3, true]]);
  });
});
