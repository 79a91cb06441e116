import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { TokenBuckets } from '../../apps/server/src/http/rate-limit.js';

/**
 * docs/decisions.md, "Limits": `/api/query/*` per credential and project (token
 * buckets), `/flags/evaluate` per project token, `/flags/local-evaluation` per flag secret; 429 in
 * the `{status: 0, error}` envelope with Retry-After. Small bounds configured by env.
 */
describe('token buckets', () => {
  it('allow the burst, then one request per 1/perSecond, answering how long to wait', () => {
    let now = 0;
    const b = new TokenBuckets({ perSecond: 2, burst: 3 }, () => now);
    assert.deepEqual([b.take('k'), b.take('k'), b.take('k')], [0, 0, 0]);
    assert.equal(b.take('k'), 1, 'empty: half a second rounds up to Retry-After 1');
    assert.equal(b.take('other'), 0, 'keys are separate');
    now += 500;
    assert.equal(b.take('k'), 0);
    assert.equal(b.take('k'), 1, 'a refused request takes nothing but waits for a whole token');
    now += 10_000;
    assert.deepEqual([b.take('k'), b.take('k'), b.take('k'), b.take('k')], [0, 0, 0, 1], 'refills to the burst, no more');
    const slow = new TokenBuckets({ perSecond: 1, burst: 1 }, () => now);
    slow.take('s');
    assert.equal(slow.take('s'), 1);
  });
});

forEachBackend('rate limits: /api/query/*', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let pid: number;
  let other: number;
  before(async () => {
    t = await startTestService(backend, { QUERY_RATE_PER_SECOND: '1', QUERY_RATE_BURST: '3' });
    acme = await createTenant(t, 'Rate');
    pid = acme.project.id;
    other = (await acme.owner.post('/api/projects', { name: 'second' })).body.id;
  });
  after(async () => t?.close());

  it('per credential and project: a burst of 3, then 429 {status: 0} with Retry-After; other credentials and projects unaffected', async () => {
    const seg = (client: TestService['anon'], projectId: number) =>
      client.post('/api/query/segmentation', { projectId, event: 'v', from: '2024-01-01', to: '2024-01-02', unit: 'day', type: 'total' });
    const ir = (client: TestService['anon'], projectId: number) =>
      client.post('/api/query', { projectId, query: { v: 2, dateRange: { kind: 'absolute', from: '2024-01-01', to: '2024-01-02' }, metrics: [{ id: 'A', kind: 'event', event: 'v', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } } });
    const statuses = [(await seg(acme.owner, pid)).status, (await ir(acme.owner, pid)).status, (await seg(acme.owner, pid)).status];
    assert.deepEqual(statuses, [200, 200, 200]);
    for (const r of [await seg(acme.owner, pid), await ir(acme.owner, pid)]) {
      assert.equal(r.status, 429, r.text);
      assert.deepEqual(r.body, { status: 0, error: 'rate limited' });
      assert.equal(r.headers.get('retry-after'), '1');
    }
    assert.equal((await seg(acme.owner, other)).status, 200, 'another project of the same credential has its own bucket');
    assert.equal((await seg(t.client(acme.tokens.viewer), pid)).status, 200, 'another credential on the same project too');
    // A refused request is not counted: an invalid body or a foreign project spends nothing.
    const stranger = await createTenant(t, 'Stranger');
    assert.equal((await seg(stranger.owner, pid)).status, 403);
    await new Promise((r) => setTimeout(r, 1100));
    // About one token came back: of four sent at once, some pass and the rest are refused (not
    // "exactly one": on a loaded machine the four may take long enough for a second token).
    const again = (await Promise.all(Array.from({ length: 4 }, () => seg(acme.owner, pid)))).map((r) => r.status);
    assert.ok(again.includes(200) && again.includes(429), `a token came back, not four: ${again}`);
  });
});
