import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';

/**
 * Every route taking a date parses it strictly: a day that does not exist, a month 13, text or
 * an absurd number answers 400 naming the problem, never shifted to a neighbouring day, ignored
 * or a 500 (docs/hardening.md "Input at the edge").
 */
forEachBackend('hardening: dates parsed strictly', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let pid: number;
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Dates');
    pid = acme.project.id;
  });

  const BAD_DAYS = ['2024-02-30', '2023-02-29', '2024-13-01', '2024-1-1', 'abc', '1e20', '', '2024-01-01T00:00:00Z'];

  it('query bodies (v0 and IR), annotations, boards, data browsing and usage months', async () => {
    for (const bad of BAD_DAYS) {
      const seg = await acme.owner.post('/api/query/segmentation', { projectId: pid, event: 'e', from: bad, to: '2024-03-01', unit: 'day', type: 'total' });
      assert.deepEqual([seg.status, seg.body.error], [400, 'invalid date range'], `segmentation from=${bad}: ${seg.text}`);
      const ir = await acme.owner.post('/api/query', {
        projectId: pid,
        query: { v: 2, dateRange: { kind: 'absolute', from: '2024-01-01', to: bad }, metrics: [{ id: 'A', kind: 'event', event: 'e', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } },
      });
      assert.equal(ir.status, 400, `IR to=${bad}: ${ir.text}`);
      const note = await acme.owner.post(`/api/annotations?projectId=${pid}`, { date: bad, description: 'x' });
      assert.equal(note.status, 400, `annotation date=${bad}: ${note.text}`);
      assert.match(note.body.error, /^date: /);
      const list = await acme.owner.get(`/api/annotations?projectId=${pid}&from=${encodeURIComponent(bad)}`);
      assert.equal(list.status, 400, `annotations from=${bad}: ${list.text}`);
      const board = await acme.owner.post('/api/boards', { projectId: pid, name: 'b', date_range: { kind: 'absolute', from: bad, to: '2024-03-01' } });
      assert.equal(board.status, 400, `board from=${bad}: ${board.text}`);
      if (bad !== '') {
        const data = await acme.owner.get(`/api/data/events?projectId=${pid}&from=${encodeURIComponent(bad)}`);
        assert.equal(data.status, 400, `data from=${bad}: ${data.text}`);
        assert.match(data.body.error, /^from: /);
      }
    }
    for (const month of ['2024-13', '2024-00', '2024-1', 'abc']) {
      const usage = await t.admin.get(`/admin/usage?month=${month}`);
      assert.equal(usage.status, 400, `usage month=${month}: ${usage.text}`);
    }
    assert.equal((await acme.owner.get(`/api/annotations?projectId=${pid}`)).body.length, 0, 'nothing stored');
    assert.equal((await acme.owner.get(`/api/boards?projectId=${pid}`)).body.length, 0, 'nothing stored');
  });

  it('ingestion: a time that is not a Unix timestamp refuses the record naming it', async () => {
    for (const time of ['2024-02-30', 'abc', 1e20, -1]) {
      const r = await t.anon.post('/track', { event: 'e', properties: { distinct_id: 'u', time } }, { headers: { 'x-service-token': acme.project.token } });
      assert.equal(r.status, 400, `time=${time}: ${r.text}`);
      assert.match(JSON.stringify(r.body), /properties\.time/, r.text);
    }
  });
});
