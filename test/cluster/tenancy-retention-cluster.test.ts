import assert from 'node:assert/strict';
import { useClusterService } from '../support/clickhouse-cluster.js';
import type { StoredEvent } from '../../apps/server/src/ports/events/port.js';

const DAY = 86_400_000;

/**
 * Retention in ClickHouse cluster mode (two shards): the delete runs ON CLUSTER on every shard's
 * local tables, is waited for, and each shard's event_ids keeps only the ids its events still have.
 */
describe('tenancy: retention on a ClickHouse cluster (2 shards)', function () {
  const c = useClusterService({ RETENTION_INTERVAL_MS: '0' });
  const local = async (shard: number, sql: string) => Number(await c.cluster.query(shard, sql.replace(/\{db\}/g, c.database)));

  it('deletes expired events on both shards, keeps newer ones, drops ids left without events', async function () {
    this.timeout(120_000);
    const cut = Date.UTC(2024, 5, 1);
    const rows: StoredEvent[] = Array.from({ length: 40 }, (_, i) => ({
      project_id: 9, id: i, event: 'view', distinct_id: `u${i}`, time: i < 30 ? cut - DAY - i : cut + i, insert_id: `i${i}`,
      prop_keys: [], prop_values: [], prop_types: '', received_at: cut,
    }));
    await c.t.svc.deps.events.writeEvents(9, rows);
    const before = [await local(0, 'SELECT count() FROM {db}.events_local WHERE project_id = 9 AND time < ' + cut), await local(1, 'SELECT count() FROM {db}.events_local WHERE project_id = 9 AND time < ' + cut)];
    assert.ok(before[0] > 0 && before[1] > 0, `expired rows on both shards: ${before}`);
    assert.equal(await c.t.svc.deps.events.deleteEventsBefore(9, cut), true);
    for (const shard of [0, 1]) {
      assert.equal(await local(shard, `SELECT count() FROM {db}.events_local WHERE project_id = 9 AND time < ${cut}`), 0, `shard ${shard + 1}: expired rows gone`);
      const ids = await local(shard, `SELECT count() FROM {db}.event_ids_local FINAL WHERE project_id = 9`);
      const withEvents = await local(shard, `SELECT uniqExact(distinct_id) FROM {db}.events_local WHERE project_id = 9`);
      assert.equal(ids, withEvents, `shard ${shard + 1}: event_ids holds exactly the ids with events`);
    }
    const total = await c.t.svc.deps.events.query<{ n: number }>('SELECT count() AS n FROM events WHERE project_id = 9');
    assert.equal(Number(total[0].n), 10);
    assert.deepEqual([...await c.t.svc.deps.events.idsWithEvents(9, ['u0', 'u35'])], ['u35']);
  });
});
