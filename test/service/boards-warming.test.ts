import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { waitFor } from '../support/processes.js';
import { loadDataset } from '../support/reference/harness.js';
import { REPORT_EVENTS } from '../support/reports.js';
import { BoardWarmer } from '../../apps/server/src/boards/warming.js';
import { VIEW_RECORD_MS } from '../../apps/server/src/boards/views.js';
import { registry } from '../../apps/server/src/metrics/registry.js';
import type { EventStore } from '../../apps/server/src/ports/events/index.js';

const DAY = 86_400_000;
const seg = (event: string) => ({ event, from: '2024-01-01', to: '2024-01-14', unit: 'day', type: 'total' });
const funnel = { steps: ['view', 'signup'], from: '2024-01-01', to: '2024-01-14', windowDays: 7 };

forEachBackend('boards: warming viewed boards in the background', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let pid: number;
  let viewed: number;
  let stale: number;
  let member: ReturnType<TestService['client']>;
  let warmer: BoardWarmer;
  let writes = 0;

  const run = async (id: number) => {
    const r = await member.post(`/api/boards/${id}/run`, {});
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  /** Engine statements during `work`; statements whose SQL matches `fail` are refused as by a failing engine. */
  const counted = async <T>(work: () => Promise<T>, fail?: RegExp): Promise<{ out: T; statements: number }> => {
    const store = t.svc.deps.events as Partial<EventStore>;
    const { query } = t.svc.deps.events;
    let statements = 0;
    store.query = ((sql: string, opts?: any) => {
      statements++;
      return fail?.test(sql) ? Promise.reject(new Error('engine refused the statement')) : query(sql, opts);
    }) as EventStore['query'];
    try {
      return { out: await work(), statements };
    } finally {
      delete store.query;
    }
  };
  /** A new event in the reports' range: every cached answer of the project stops being served. */
  const newEvent = async () => {
    const time = Date.UTC(2024, 0, 6, 12);
    const id = `warm-${++writes}`;
    await t.svc.deps.events.writeEvents(pid, [{
      project_id: pid, id: 920_000 + writes, event: 'view', distinct_id: id, time, insert_id: id, prop_keys: [], prop_values: [], prop_types: '', received_at: time,
    }]);
  };
  const cardsCounted = async (outcome: string) => {
    const m = (await registry.getSingleMetric('tally_board_warm_cards_total')!.get()).values.find((v) => v.labels.outcome === outcome);
    return m?.value ?? 0;
  };

  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { BOARD_WARM_INTERVAL_MS: '0', RESULTS_CACHE_FRESH_MS: '600000' });
    tenant = await createTenant(t, 'warm');
    pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, { events: REPORT_EVENTS, links: [] });
    member = t.client(tenant.tokens.member);
    const report = async (name: string, type: string, query: unknown) => {
      const r = await member.post('/api/reports', { projectId: pid, name, type, query });
      assert.equal(r.status, 201, r.text);
      return r.body.id as number;
    };
    const board = async (name: string, reportIds: number[]) => {
      const b = await member.post('/api/boards', { projectId: pid, name, cards: reportIds.map((reportId) => ({ reportId })) });
      assert.equal(b.status, 201, b.text);
      return b.body.id as number;
    };
    // The buy card is first: the test of a failing card makes the engine refuse its statement.
    viewed = await board('Viewed', [await report('buys', 'segmentation', seg('buy')), await report('views', 'segmentation', seg('view')), await report('signup funnel', 'funnel', funnel)]);
    stale = await board('Stale', [await report('signups', 'segmentation', seg('signup'))]);
    warmer = new BoardWarmer(t.svc.deps, t.svc.services);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it("a person's run records the view, at most once a minute per board", async function () {
    this.timeout(30_000);
    await run(viewed);
    assert.equal((await t.svc.deps.db('board_views').where({ board_id: viewed })).length, 1, 'recorded before the run answered');
    const views = t.svc.services.boardViews;
    const at = async (id: number) => Number((await t.svc.deps.db('board_views').where({ board_id: id }).first())?.last_viewed_at);
    const now = Date.now() + 5 * VIEW_RECORD_MS;
    await views.record(stale, pid, now);
    await views.record(stale, pid, now + VIEW_RECORD_MS / 2);
    assert.equal(await at(stale), now, 'a second view within the minute writes nothing');
    await views.record(stale, pid, now + VIEW_RECORD_MS);
    assert.equal(await at(stale), now + VIEW_RECORD_MS);
    // A machine token's run is not a person's view.
    const token = await t.client(tenant.tokens.admin).post('/api/org/tokens', { name: 'warm-bot', role: 'viewer' });
    assert.equal(token.status, 201, token.text);
    await t.svc.deps.db('board_views').where({ board_id: stale }).delete();
    const r = await t.client(token.body.token).post(`/api/boards/${stale}/run`, {});
    assert.equal(r.status, 200, r.text);
    // The record is written before the run answers: a machine's would be there now.
    assert.equal((await t.svc.deps.db('board_views').where({ board_id: stale })).length, 0);
  });

  it("after a warm pass a viewed board's cards answer from the cache the worker filled; a board not viewed for 8 days is not warmed", async function () {
    this.timeout(60_000);
    await t.svc.deps.db('board_views').where({ board_id: stale }).update({ last_viewed_at: Date.now() - 8 * DAY });
    await newEvent();
    const computed = await cardsCounted('computed');
    const started = Date.now();
    const pass = await warmer.pass();
    const ended = Date.now();
    assert.equal(pass.projects, 1);
    assert.equal(pass.computed, 3, JSON.stringify(pass));
    assert.equal(pass.failed, 0);
    assert.ok(pass.engineMs > 0);
    assert.equal(await cardsCounted('computed'), computed + 3);
    const { out, statements } = await counted(() => run(viewed));
    assert.equal(statements, 0, 'no engine statement on the view');
    for (const c of out.cards) {
      assert.equal(c.status, 'ok', JSON.stringify(c));
      assert.ok(c.cached_at >= started && c.cached_at <= ended, `cached_at ${c.cached_at} set by the pass (${started}..${ended})`);
    }
    const cold = await counted(() => run(stale));
    assert.ok(cold.statements > 0, 'the stale board was not warmed: its run asks the engine');
    assert.equal(cold.out.cards[0].cached_at, undefined);
    await t.svc.deps.db('board_views').where({ board_id: stale }).delete();
  });

  it('a project without changes since its last warming is skipped; a change makes the next pass warm it again', async function () {
    this.timeout(60_000);
    await warmer.pass();
    const { out: quiet, statements } = await counted(() => warmer.pass());
    assert.deepEqual({ unchanged: quiet.unchanged, computed: quiet.computed, cached: quiet.cached }, { unchanged: 1, computed: 0, cached: 0 });
    assert.equal(statements, 0);
    await newEvent();
    const again = await warmer.pass();
    assert.equal(again.unchanged, 0);
    assert.equal(again.computed, 3);
  });

  it('a card that fails does not stop the pass: the others are warmed, and the project is tried again next pass', async function () {
    this.timeout(60_000);
    await newEvent();
    const errors = await cardsCounted('error');
    const { out: pass } = await counted(() => warmer.pass(), /'buy'/);
    assert.equal(pass.failed, 1, JSON.stringify(pass));
    assert.equal(pass.computed, 2);
    assert.equal(await cardsCounted('error'), errors + 1);
    const { out, statements } = await counted(() => run(viewed));
    assert.ok(statements > 0, 'the failed card computes on the view');
    assert.equal(out.cards[0].cached_at, undefined);
    assert.equal(typeof out.cards[1].cached_at, 'number');
    assert.equal(typeof out.cards[2].cached_at, 'number');
    const next = await warmer.pass();
    assert.equal(next.unchanged, 0, 'not recorded as warm after a failure');
  });

  it('at most BOARD_WARM_MAX_CARDS_PER_PASS cards are computed per project and pass; the rest next pass', async function () {
    this.timeout(60_000);
    const limited = new BoardWarmer({ ...t.svc.deps, config: { ...t.svc.deps.config, boardWarm: { intervalMs: 0, maxCardsPerProject: 2 } } }, t.svc.services);
    await newEvent();
    const first = await limited.pass();
    assert.equal(first.computed, 2);
    const second = await limited.pass();
    assert.equal(second.computed, 1);
    assert.equal(second.cached, 2);
    assert.equal((await limited.pass()).unchanged, 1);
  });
});

/** The worker role's loop itself: a pass every BOARD_WARM_INTERVAL_MS (several workers: boards-warming-shared.test.ts). */
forEachBackend('boards: the worker warming loop', (backend) => {
  let t: TestService;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { BOARD_WARM_INTERVAL_MS: '300', RESULTS_CACHE_FRESH_MS: '600000' });
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it("the worker's loop warms a viewed board after a change", async function () {
    this.timeout(60_000);
    const tenant = await createTenant(t, 'warm-loop');
    const pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, { events: REPORT_EVENTS, links: [] });
    const member = t.client(tenant.tokens.member);
    const rep = await member.post('/api/reports', { projectId: pid, name: 'views', type: 'segmentation', query: seg('view') });
    const b = await member.post('/api/boards', { projectId: pid, name: 'Loop', cards: [{ reportId: rep.body.id }] });
    assert.equal(b.status, 201, b.text);
    const first = await member.post(`/api/boards/${b.body.id}/run`, {});
    assert.equal(first.status, 200, first.text);
    await waitFor('view recorded', async () => (await t.svc.deps.db('board_views').where({ board_id: b.body.id })).length === 1, 10_000);
    const computed = async () => (await registry.getSingleMetric('tally_board_warm_cards_total')!.get()).values.find((v) => v.labels.outcome === 'computed')?.value ?? 0;
    const before = await computed();
    const time = Date.UTC(2024, 0, 6, 12);
    const written = Date.now();
    await t.svc.deps.events.writeEvents(pid, [{ project_id: pid, id: 930_001, event: 'view', distinct_id: 'loop', time, insert_id: 'loop', prop_keys: [], prop_values: [], prop_types: '', received_at: time }]);
    await waitFor('a pass of the loop computed the card', async () => (await computed()) > before, 20_000);
    const view = await member.post(`/api/boards/${b.body.id}/run`, {});
    assert.ok(view.body.cards[0].cached_at >= written, JSON.stringify(view.body.cards[0]));
  });
});
