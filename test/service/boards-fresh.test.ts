import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { boardFreshMs } from '../../apps/server/src/boards/run.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('boards: the fresh bound of cards whose range reaches today', () => {
  it('is the warming interval plus RESULTS_CACHE_FRESH_MS with warming on, the cache\'s own bound without', () => {
    assert.equal(boardFreshMs({ resultsCache: { freshMs: 60_000 } as any, boardWarm: { intervalMs: 300_000, maxCardsPerProject: 20 } }), 360_000);
    assert.equal(boardFreshMs({ resultsCache: { freshMs: 60_000 } as any, boardWarm: { intervalMs: 0, maxCardsPerProject: 20 } }), 60_000);
    assert.equal(boardFreshMs({ resultsCache: { freshMs: 0 } as any, boardWarm: { intervalMs: 300_000, maxCardsPerProject: 20 } }), 0, 'RESULTS_CACHE_FRESH_MS=0 still serves no live answer');
  });
});

/**
 * A live board (its range reaches today) with warming on: a card's answer is served by the board
 * past RESULTS_CACHE_FRESH_MS, until the next warming pass would have replaced it, while the same
 * report run on its own keeps the cache's bound.
 */
forEachBackend('boards: a live board served until the next warming pass', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let report: number;
  let board: number;

  before(async function () {
    this.timeout(60_000);
    // The loop's first pass comes after 30 s: the test is done before.
    t = await startTestService(backend, { RESULTS_CACHE_FRESH_MS: '500', BOARD_WARM_INTERVAL_MS: '30000' });
    tenant = await createTenant(t, 'fresh');
    const pid = tenant.project.id;
    const time = Date.now() - 60_000;
    await t.svc.deps.events.writeEvents(pid, [{ project_id: pid, id: 950_001, event: 'view', distinct_id: 'live', time, insert_id: 'live', prop_keys: [], prop_values: [], prop_types: '', received_at: time }]);
    const member = t.client(tenant.tokens.member);
    const query = { v: 2, dateRange: { kind: 'preset', preset: '7d' }, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } };
    const r = await member.post('/api/reports', { projectId: pid, name: 'live views', type: 'segmentation', query });
    assert.equal(r.status, 201, r.text);
    report = r.body.id;
    // No range of its own: its card shares the report's cache entry.
    const b = await member.post('/api/boards', { projectId: pid, name: 'Live', cards: [{ reportId: report }] });
    assert.equal(b.status, 201, b.text);
    board = b.body.id;
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it("the board serves its card's answer past RESULTS_CACHE_FRESH_MS; the report's own run computes it again", async function () {
    this.timeout(60_000);
    const member = t.client(tenant.tokens.member);
    const first = await member.post(`/api/boards/${board}/run`, {});
    assert.equal(first.status, 200, first.text);
    const [card] = first.body.cards;
    assert.equal(card.status, 'ok', JSON.stringify(card));
    assert.equal(card.cached_at, undefined);
    assert.deepEqual(card.result.series.map((s: any) => s.total), [1]);
    await sleep(1_000);
    const again = await member.post(`/api/boards/${board}/run`, {});
    assert.equal(again.body.cards[0].cached_at, card.computed_at, 'served from the cache 1 s later (fresh bound 0.5 s, warming every 30 s)');
    assert.deepEqual(again.body.cards[0].result, card.result);
    const own = await member.post(`/api/reports/${report}/run`, {});
    assert.equal(own.status, 200, own.text);
    assert.equal(own.body.cached_at, undefined, 'the report alone keeps RESULTS_CACHE_FRESH_MS');
  });
});
