import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type TestService } from '../support/service.js';
import { loadDataset } from '../support/reference/harness.js';
import { REPORT_EVENTS } from '../support/reports.js';
import { BoardWarmer } from '../../apps/server/src/boards/warming.js';
import type { EventStore } from '../../apps/server/src/ports/events/index.js';

const seg = (event: string) => ({ event, from: '2024-01-01', to: '2024-01-14', unit: 'day', type: 'total' });
const funnel = { steps: ['view', 'signup'], from: '2024-01-01', to: '2024-01-14', windowDays: 7 };

/**
 * Several worker processes warming boards on one metadata store (boards/warming.ts,
 * `board_warm_state`): each warmer here has its own id and nothing in memory the others see, as
 * two worker replicas (or one restarted) have.
 */
forEachBackend('boards: warming shared by several workers', (backend) => {
  let t: TestService;
  let pid: number;
  let writes = 0;

  const newWarmer = () => new BoardWarmer(t.svc.deps, t.svc.services);
  /** A new event in the reports' range: every cached answer of the project stops being served. */
  const newEvent = async () => {
    const time = Date.UTC(2024, 0, 6, 12);
    const id = `shared-warm-${++writes}`;
    await t.svc.deps.events.writeEvents(pid, [{
      project_id: pid, id: 940_000 + writes, event: 'view', distinct_id: id, time, insert_id: id, prop_keys: [], prop_values: [], prop_types: '', received_at: time,
    }]);
  };
  /** Engine statements during `work`. */
  const counted = async <T>(work: () => Promise<T>): Promise<{ out: T; statements: number }> => {
    const store = t.svc.deps.events as Partial<EventStore>;
    const { query } = t.svc.deps.events;
    let statements = 0;
    store.query = ((sql: string, opts?: any) => { statements++; return query(sql, opts); }) as EventStore['query'];
    try {
      return { out: await work(), statements };
    } finally {
      delete store.query;
    }
  };
  const stateRow = async () => t.svc.deps.db('board_warm_state').where({ project_id: pid }).first();

  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { BOARD_WARM_INTERVAL_MS: '0', RESULTS_CACHE_FRESH_MS: '600000' });
    const tenant = await createTenant(t, 'warm-shared');
    pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, { events: REPORT_EVENTS, links: [] });
    const member = t.client(tenant.tokens.member);
    const ids = [];
    for (const [name, type, query] of [['views', 'segmentation', seg('view')], ['buys', 'segmentation', seg('buy')], ['signup funnel', 'funnel', funnel]] as const) {
      const r = await member.post('/api/reports', { projectId: pid, name, type, query });
      assert.equal(r.status, 201, r.text);
      ids.push(r.body.id);
    }
    const b = await member.post('/api/boards', { projectId: pid, name: 'Shared warming', cards: ids.map((reportId) => ({ reportId })) });
    assert.equal(b.status, 201, b.text);
    // A person's view: the board is warmed from now on.
    const run = await member.post(`/api/boards/${b.body.id}/run`, {});
    assert.equal(run.status, 200, run.text);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('two workers passing at once warm each card once: one claims the project, the other leaves it', async function () {
    this.timeout(60_000);
    await newEvent();
    const [a, b] = await Promise.all([newWarmer().pass(), newWarmer().pass()]);
    const ran = (p: typeof a) => p.computed + p.cached + p.failed;
    assert.equal(ran(a) + ran(b), 3, `the 3 cards run once in all: ${JSON.stringify([a, b])}`);
    assert.equal(a.computed + b.computed, 3);
    const idle = ran(a) === 0 ? a : b;
    assert.equal(idle.claimed + idle.unchanged, 1, JSON.stringify(idle));
    const row = await stateRow();
    assert.ok(row.state, 'the state of the complete pass is stored');
    assert.equal(row.claimed_by, null, 'and the claim released');
  });

  it('a restarted worker (nothing in memory) finds the project warm and asks the engine nothing', async function () {
    this.timeout(60_000);
    const { out, statements } = await counted(() => newWarmer().pass());
    assert.deepEqual({ unchanged: out.unchanged, computed: out.computed, cached: out.cached }, { unchanged: 1, computed: 0, cached: 0 });
    assert.equal(statements, 0);
    await newEvent();
    const again = await newWarmer().pass();
    assert.equal(again.unchanged, 0);
    assert.equal(again.computed, 3, 'a change is warmed by whichever worker passes next');
  });

  it("a claim of a worker that died holds the project until it expires, then another worker takes it over", async function () {
    this.timeout(60_000);
    await newEvent();
    await t.svc.deps.db('board_warm_state').where({ project_id: pid }).update({ claimed_by: 'dead-worker', claim_until: Date.now() + 60_000 });
    const held = await newWarmer().pass();
    assert.deepEqual({ claimed: held.claimed, computed: held.computed, cached: held.cached }, { claimed: 1, computed: 0, cached: 0 });
    await t.svc.deps.db('board_warm_state').where({ project_id: pid }).update({ claim_until: Date.now() - 1 });
    const taken = await newWarmer().pass();
    assert.equal(taken.claimed, 0);
    assert.equal(taken.computed, 3);
    const row = await stateRow();
    assert.equal(row.claimed_by, null);
    assert.ok(row.state);
  });

  it('a pass that leaves a card cold stores no state: the next worker warms the project again', async function () {
    this.timeout(60_000);
    const limited = new BoardWarmer({ ...t.svc.deps, config: { ...t.svc.deps.config, boardWarm: { intervalMs: 0, maxCardsPerProject: 1 } } }, t.svc.services);
    await newEvent();
    assert.equal((await limited.pass()).computed, 1);
    assert.equal((await stateRow()).state, null);
    const next = await newWarmer().pass();
    assert.equal(next.unchanged, 0);
    assert.equal(next.computed, 2);
    assert.equal(next.cached, 1);
  });
});
