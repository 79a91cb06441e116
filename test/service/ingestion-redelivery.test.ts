import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { applyBatch } from '../../apps/server/src/ingestion/apply.js';
import type { IngestionBatch } from '../../apps/server/src/ports/buffer/port.js';

/**
 * A redelivered batch (the buffer lost an ack, a worker died after writing) adds no row to raw
 * storage: counted without FINAL or any dedup at read time.
 */
forEachBackend('ingestion: redelivered batches', (backend) => {
  let t: TestService;
  let acme: Tenant;
  const JAN = Date.UTC(2024, 0, 31, 23, 0);
  const FEB = Date.UTC(2024, 1, 1, 1, 0);

  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Acme');
  });

  const record = (i: number, time: number) => ({
    t: 'e', id: 1000 + i, event: i % 2 ? 'page_view' : 'signup', distinct_id: `u${i % 7}`, time, insert_id: `ins-${i}`,
    received_at: time, properties: { $insert_id: `ins-${i}`, i },
  });
  /** Rows stored for the project, every physical copy (no FINAL). */
  const rawRows = async () => {
    const [r] = await t.svc.deps.events.query<{ n: number | string }>(`SELECT count(*) AS n FROM events WHERE project_id = ${acme.project.id}`);
    return Number(r.n);
  };

  it('writes only what a crashed first delivery did not, across month partitions, and nothing on a second redelivery', async () => {
    const records = [...Array.from({ length: 300 }, (_, i) => record(i, JAN + i)), ...Array.from({ length: 200 }, (_, i) => record(300 + i, FEB + i))];
    const batch: IngestionBatch = { id: 'redeliver-months', kind: 'track', projectId: acme.project.id, acceptedAt: JAN, records };
    // The first delivery died after January's insert and before February's.
    await applyBatch(t.svc.deps, { ...batch, records: records.slice(0, 300) });
    assert.equal(await rawRows(), 300);
    await applyBatch(t.svc.deps, { ...batch, redelivered: true });
    assert.equal(await rawRows(), 500, 'February written, January not again');
    await applyBatch(t.svc.deps, { ...batch, redelivered: true });
    assert.equal(await rawRows(), 500, 'a second redelivery adds nothing');
    // The rows are the batch's: every insert id once.
    const [d] = await t.svc.deps.events.query<{ n: number | string }>(
      `SELECT count(DISTINCT insert_id) AS n FROM events WHERE project_id = ${acme.project.id}`,
    );
    assert.equal(Number(d.n), 500);
  });
});
