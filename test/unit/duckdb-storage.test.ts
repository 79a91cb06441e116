import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDbEventStore } from '../../apps/server/src/ports/events/duckdb.js';
import type { StoredEvent } from '../../apps/server/src/ports/events/index.js';

/**
 * The embedded store's storage settings: ingestion checkpoints without vacuuming (vacuuming read
 * the last row groups back at every checkpoint), and a delete vacuums itself: the row groups it
 * thinned are rewritten without the deleted rows.
 */
describe('events: DuckDB storage (checkpoints, vacuum after deletes)', () => {
  const T0 = Date.UTC(2024, 4, 6);
  let dir: string;
  let store: DuckDbEventStore;
  let n = 0;
  const events = (distinctId: string, count: number): StoredEvent[] => Array.from({ length: count }, () => ({
    project_id: 1, id: ++n, event: 'Viewed', distinct_id: distinctId, time: T0 + n, insert_id: `i${n}`,
    prop_keys: ['plan'], prop_values: ['pro'], prop_types: 's', received_at: T0,
  }));
  /** Rows the events table's storage holds (live or deleted), and the live ones. */
  const stored = async () => {
    const [s] = await store.query<{ n: number }>("SELECT sum(count)::BIGINT AS n FROM pragma_storage_info('events') WHERE column_name = 'id' AND segment_type <> 'VALIDITY'");
    const [l] = await store.query<{ n: number }>('SELECT count(*)::BIGINT AS n FROM events');
    return { stored: Number(s.n), live: Number(l.n) };
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'duckdb-storage-'));
    store = new DuckDbEventStore(path.join(dir, 'events.duckdb'));
    await store.migrate();
  });
  after(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the row groups each checkpoint wrote (no vacuum while ingesting)', async () => {
    for (let i = 0; i < 3; i++) {
      await store.writeEvents(1, [...events('ann', 5000), ...events('bob', 5000)]);
      await store.command('CHECKPOINT');
    }
    const [rg] = await store.query<{ n: number }>("SELECT count(DISTINCT row_group_id)::BIGINT AS n FROM pragma_storage_info('events')");
    assert.equal(Number(rg.n), 3);
    assert.deepEqual(await stored(), { stored: 30_000, live: 30_000 });
  });

  it('rewrites the row groups a delete thinned, so the deleted rows leave storage', async () => {
    await store.deleteIdentities(1, ['ann']);
    assert.deepEqual(await stored(), { stored: 15_000, live: 15_000 });
    await store.deleteProject(1);
    assert.deepEqual(await stored(), { stored: 0, live: 0 });
  });
});
