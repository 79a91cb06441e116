import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { waitFor } from '../support/processes.js';
import { loadDataset } from '../support/reference/harness.js';
import { REPORT_EVENTS } from '../support/reports.js';
import type { ResultsCache } from '../../apps/server/src/results-cache/index.js';
import { SizedLru } from '../../apps/server/src/results-cache/lru.js';
import type { EventStore } from '../../apps/server/src/ports/events/index.js';

const seg = { event: 'view', from: '2024-01-01', to: '2024-01-14', unit: 'day', type: 'total' };
const funnel = { steps: ['view', 'signup'], from: '2024-01-01', to: '2024-01-14', windowDays: 7 };
const FRESH_MS = 2500;

const total = (card: any) => card.result.series.reduce((s: number, x: any) => s + x.data.reduce((a: number, d: any) => a + d.value, 0), 0);

describe('results cache: size-bounded LRU', () => {
  it('evicts the least recently used entries by size, not count, and refuses an entry over a quarter of the budget', () => {
    const lru = new SizedLru<string>(1000);
    const e = (bytes: number) => ({ value: 'x', signature: 's', at: 0, live: false, bytes });
    lru.set('a', e(200));
    lru.set('b', e(200));
    lru.set('c', e(200));
    lru.get('a'); // a is now the most recent: b goes first
    lru.set('d', e(250));
    lru.set('e', e(250));
    assert.equal(lru.get('b'), undefined);
    assert.ok(lru.get('a'));
    assert.ok(lru.bytes <= 1000, String(lru.bytes));
    lru.set('huge', e(251));
    assert.equal(lru.get('huge'), undefined);
  });
});

forEachBackend('results cache', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  let pid: number;
  let board: number;
  let member: ReturnType<TestService['client']>;

  const track = async (token: string, event: string, distinctId: string, time: number) => {
    const r = await t.anon.post('/track', { event, properties: { distinct_id: distinctId, time, $insert_id: `${distinctId}-${time}` } }, { headers: { 'x-service-token': token } });
    assert.equal(r.status, 200, r.text);
    await waitFor(`${distinctId} stored`, async () => (await t.svc.deps.events.idsWithEvents(pid, [distinctId])).size === 1, 20_000);
  };
  const runBoard = async (id = board, client = member) => {
    const r = await client.post(`/api/boards/${id}/run`, {});
    assert.equal(r.status, 200, r.text);
    return r.body;
  };

  before(async function () {
    this.timeout(60_000);
    // Warming off: a board's live cards are then served for the cache's own fresh bound (with warming,
    // until the next pass: test/service/boards-fresh.test.ts).
    t = await startTestService(backend, { RESULTS_CACHE_FRESH_MS: String(FRESH_MS), BOARD_WARM_INTERVAL_MS: '0' });
    tenant = await createTenant(t, 'rc');
    other = await createTenant(t, 'rc-other');
    pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, { events: REPORT_EVENTS, links: [] });
    member = t.client(tenant.tokens.member);
    const ids = [];
    for (const [name, type, query] of [['views', 'segmentation', seg], ['signup funnel', 'funnel', funnel]] as const) {
      const r = await member.post('/api/reports', { projectId: pid, name, type, query });
      assert.equal(r.status, 201, r.text);
      ids.push(r.body.id);
    }
    const b = await member.post('/api/boards', { projectId: pid, name: 'Cached', cards: ids.map((reportId) => ({ reportId })) });
    assert.equal(b.status, 201, b.text);
    board = b.body.id;
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('a second board run is served from the cache with the same answers; a report run shares the entries', async function () {
    this.timeout(30_000);
    const cache = t.svc.services.executor.cache as ResultsCache;
    const first = await runBoard();
    assert.ok(first.cards.every((c: any) => c.status === 'ok' && c.cached_at === undefined), JSON.stringify(first.cards));
    const hits = cache.hits;
    const second = await runBoard();
    assert.equal(cache.hits, hits + 2);
    for (const [i, c] of second.cards.entries()) {
      assert.equal(typeof c.cached_at, 'number');
      assert.ok(c.cached_at <= second.ran_at);
      assert.deepEqual(c.result, first.cards[i].result);
    }
    assert.equal(total(second.cards[0]), 4);
    const report = await t.client(tenant.tokens.viewer).get(`/api/reports/${first.cards[0].report_id}/run`);
    assert.equal(report.status, 200, report.text);
    assert.equal(typeof report.body.cached_at, 'number');
    assert.deepEqual(report.body.result, first.cards[0].result);
  });

  it('events ingested into the range invalidate the entries and the answer changes; events outside it do not', async function () {
    this.timeout(60_000);
    const before = await runBoard();
    assert.equal(typeof before.cards[0].cached_at, 'number');
    // Outside the range (a year earlier): the cached answers stay.
    await track(tenant.project.token, 'view', 'rc-old', Date.UTC(2023, 0, 5, 12));
    const still = await runBoard();
    assert.equal(still.cards[0].cached_at, before.cards[0].cached_at);
    // Inside the range: the next run computes again and counts the new view.
    await track(tenant.project.token, 'view', 'rc-late', Date.UTC(2024, 0, 5, 12));
    const after = await runBoard();
    assert.equal(after.cards[0].cached_at, undefined);
    assert.equal(total(after.cards[0]), total(before.cards[0]) + 1);
    const again = await runBoard();
    assert.equal(typeof again.cards[0].cached_at, 'number');
    assert.equal(total(again.cards[0]), total(after.cards[0]));
  });

  it('a privacy delete of a person in the range invalidates the entries', async function () {
    this.timeout(60_000);
    await runBoard();
    const cached = await runBoard();
    assert.equal(typeof cached.cards[0].cached_at, 'number');
    const owner = t.client(tenant.tokens.owner);
    const r = await owner.post('/api/privacy/requests', { projectId: pid, type: 'delete', distinctIds: ['rc-late'] });
    assert.equal(r.status, 202, r.text);
    await waitFor('privacy delete done', async () => (await owner.get(`/api/privacy/requests/${r.body.id}`)).body.status === 'completed', 30_000);
    const after = await runBoard();
    assert.equal(after.cards[0].cached_at, undefined);
    assert.equal(total(after.cards[0]), total(cached.cards[0]) - 1);
  });

  it("a retention delete of the range's first days invalidates the entries", async function () {
    this.timeout(60_000);
    await runBoard();
    const cached = await runBoard();
    assert.equal(typeof cached.cards[0].cached_at, 'number');
    // The events of 2024-01-01 (one view) go, as the retention worker deletes them.
    await t.svc.deps.events.deleteEventsBefore(pid, Date.UTC(2024, 0, 2));
    const after = await runBoard();
    assert.equal(after.cards[0].cached_at, undefined);
    assert.equal(total(after.cards[0]), total(cached.cards[0]) - 1);
  });

  it('a range reaching today is served until the fresh bound, then computed again with the new events', async function () {
    this.timeout(60_000);
    const live = { date_range: { kind: 'preset', preset: '7d' } };
    const run = async () => {
      const r = await member.post(`/api/boards/${board}/run`, live);
      assert.equal(r.status, 200, r.text);
      return r.body.cards[0];
    };
    const first = await run();
    const second = await run();
    assert.equal(first.cached_at, undefined);
    assert.equal(typeof second.cached_at, 'number');
    await track(tenant.project.token, 'view', 'rc-today', Date.now());
    const startedAt = second.cached_at as number;
    const wait = startedAt + FRESH_MS + 50 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const expired = await run();
    assert.equal(expired.cached_at, undefined);
    assert.equal(total(expired), total(first) + 1);
  });

  it("never answers from another project's entry, and another organisation's credential never reaches the board", async function () {
    this.timeout(30_000);
    await runBoard();
    // The same report, word for word, in another organisation's project (no events there).
    const theirs = t.client(other.tokens.member);
    const rep = await theirs.post('/api/reports', { projectId: other.project.id, name: 'views', type: 'segmentation', query: seg });
    assert.equal(rep.status, 201, rep.text);
    const b = await theirs.post('/api/boards', { projectId: other.project.id, name: 'Theirs', cards: [{ reportId: rep.body.id }] });
    const run = await runBoard(b.body.id, theirs);
    assert.equal(run.cards[0].cached_at, undefined);
    assert.equal(total(run.cards[0]), 0);
    // Their credential on our (cached) board and report: 404, not the cached answer.
    const denied = await theirs.post(`/api/boards/${board}/run`, {});
    assert.equal(denied.status, 404, denied.text);
    const reportId = (await runBoard()).cards[0].report_id;
    assert.equal((await theirs.get(`/api/reports/${reportId}/run`)).status, 404);
    assert.equal((await t.anon.post(`/api/boards/${board}/run`, {})).status, 401);
  });

  it('a method assigned on the service\'s event store wraps the one it captured: called once, the write still invalidates, deleting it restores', async function () {
    this.timeout(30_000);
    const events = t.svc.deps.events as Partial<EventStore>;
    const { writeEvents } = t.svc.deps.events;
    let calls = 0;
    events.writeEvents = (projectId, rows, opts) => { calls++; return writeEvents(projectId, rows, opts); };
    try {
      await runBoard();
      assert.equal(typeof (await runBoard()).cards[0].cached_at, 'number');
      const time = Date.UTC(2024, 0, 6, 12);
      await t.svc.deps.events.writeEvents(pid, [{
        project_id: pid, id: 900_001, event: 'view', distinct_id: 'rc-assigned', time, insert_id: 'rc-assigned', prop_keys: [], prop_values: [], prop_types: '', received_at: time,
      }]);
      assert.equal(calls, 1);
      const after = await runBoard();
      assert.equal(after.cards[0].cached_at, undefined, 'the captured method bumped the data versions');
    } finally {
      delete events.writeEvents;
    }
    assert.equal(t.svc.deps.events.writeEvents, writeEvents);
  });

  it('a new annotation invalidates the entries (annotations, derived events and calculated metrics are hashed into the signature)', async function () {
    this.timeout(30_000);
    await runBoard();
    assert.equal(typeof (await runBoard()).cards[0].cached_at, 'number');
    const a = await member.post('/api/annotations', { projectId: pid, date: '2024-01-03', description: 'launch' });
    assert.equal(a.status, 201, a.text);
    const after = await runBoard();
    assert.equal(after.cards[0].cached_at, undefined);
    assert.ok(JSON.stringify(after.cards[0].result.annotations).includes('launch'));
  });
});
