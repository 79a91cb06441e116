import assert from 'node:assert/strict';
import { embeddedIn, forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { useEventStore } from '../support/event-store.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import { BoardWarmer } from '../../apps/server/src/boards/warming.js';
import type { StoredEvent } from '../../apps/server/src/ports/events/index.js';
import { MAX_RUNTIME_MATERIALIZED } from '../../apps/server/src/ports/events/schema.js';
import { eventPropLists } from '../../apps/server/src/ingestion/records.js';

/**
 * The event properties the cards of a viewed board filter on and break down by (v0 filters and
 * breakdowns, IR metric and global filters, aggregated properties and breakdowns, the board's own
 * filters) are materialised on the embedded store (DuckDB) when the worker's warming computes the
 * board (boards/warming.ts, query/property-materializer.ts); the answers are the same numbers
 * before and after. Each organisation has a share of the store's runtime keys
 * (MATERIALIZED_PROPERTIES_PER_ORG): one organisation's experiments on made-up properties no
 * longer take them all. ClickHouse is left alone (MATERIALIZED_PROPERTIES is the way there).
 */

const SHARE = 6;
const FROM = '2024-03-01';
const T0 = Date.UTC(2024, 2, 4);
const range = { kind: 'absolute', from: FROM, to: '2024-03-10' };
/** The keys the board reads in the end (its share of runtime keys: SHARE), and one its project's events carry that it never reads is 'unused'. */
const BOARD_KEYS = ['plan', 'country', 'device', 'amount', 'channel', 'tier'];

forEachBackend('boards: the properties of viewed boards materialised at runtime', (backend) => {
  let t: TestService;
  let victim: Tenant;
  let attacker: Tenant;
  let boardId: number;
  let warmer: BoardWarmer;
  let writes = 0;

  const events = Array.from({ length: 40 }, (_, i) => ev(i % 3 === 0 ? 'buy' : 'view', `u${i % 13}`, {
    time: T0 + i * 3_600_000, plan: ['free', 'pro', 'team'][i % 3], country: ['fr', 'de', 'us', 'br'][i % 4], device: i % 5 === 0 ? 'mobile' : 'desktop',
    amount: String(i * 7), channel: i % 6 === 0 ? 'ads' : 'organic', tier: `t${i % 2}`, unused: 'x',
  }));
  const embedded = () => backend.name === 'embedded';
  const materialized = () => [...t.svc.deps.events.materialized.keys()].sort();
  const run = async () => {
    const r = await t.client(victim.tokens.member).post(`/api/boards/${boardId}/run`, {});
    assert.equal(r.status, 200, r.text);
    for (const c of r.body.cards) assert.equal(c.status, 'ok', JSON.stringify(c));
    return r.body.cards as Array<{ result: unknown; cached_at?: number }>;
  };
  /** A new event in the board's range that changes no answer: every cached answer of the project goes stale. */
  const noise = async () => {
    assert.equal((await ingest(t, victim.project.token).post('/track', [ev('noise', `n${++writes}`, { time: T0 })])).status, 200);
    await drained(t);
  };
  const report = async (name: string, type: string, query: unknown) => {
    const r = await t.client(victim.tokens.member).post('/api/reports', { projectId: victim.project.id, name, type, query });
    assert.equal(r.status, 201, r.text);
    return r.body.id as number;
  };

  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { BOARD_WARM_INTERVAL_MS: '0', MATERIALIZED_PROPERTIES_PER_ORG: String(SHARE) });
    victim = await createTenant(t, 'board-owner');
    attacker = await createTenant(t, 'key-hoarder');
    assert.equal((await ingest(t, victim.project.token).post('/track', events)).status, 200);
    await drained(t);
    const segmentation = await report('views by country, pro plan', 'segmentation', {
      event: 'view', from: FROM, to: '2024-03-10', unit: 'day', type: 'total', filters: [{ key: 'plan', op: 'eq', value: 'pro' }], breakdown: 'country',
    });
    const trend = await report('desktop amount by country', 'segmentation', {
      v: 2, dateRange: range, filters: [{ key: 'plan', op: 'neq', value: 'free' }],
      metrics: [{ id: 'A', kind: 'event', event: 'buy', filters: [{ key: 'device', op: 'eq', value: 'desktop' }], aggregation: { op: 'sum', property: 'amount' } }],
      breakdown: { property: 'country' }, analysis: { kind: 'trend', unit: 'day' },
    });
    const board = await t.client(victim.tokens.member).post('/api/boards', {
      projectId: victim.project.id, name: 'Sales', filters: [{ key: 'channel', op: 'neq', value: 'ads' }], cards: [{ reportId: segmentation }, { reportId: trend }],
    });
    assert.equal(board.status, 201, board.text);
    boardId = board.body.id;
    warmer = new BoardWarmer(t.svc.deps, t.svc.services);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it("a viewed board's filter and breakdown keys are materialised by the warming pass (embedded), with the same answers before and after", async function () {
    this.timeout(60_000);
    const before = await run(); // also records the view
    assert.deepEqual(materialized(), [], 'read from the lists so far');
    await noise();
    const pass = await warmer.pass();
    assert.equal(pass.computed, 2, JSON.stringify(pass));
    if (embedded()) {
      assert.deepEqual(materialized(), ['amount', 'channel', 'country', 'device', 'plan']);
      const rows = await t.svc.deps.events.query<{ key: string; organization_id: number }>('SELECT key, organization_id FROM materialized_properties ORDER BY key');
      assert.deepEqual(rows.map((r) => [r.key, Number(r.organization_id)]), ['amount', 'channel', 'country', 'device', 'plan'].map((k) => [k, victim.org.id]));
      // The compiled statements read the columns now, not the lists.
      const q = await t.svc.services.analyses.contexts.forProject(victim.project.id);
      assert.equal(q.d.propValue('plan'), t.svc.deps.events.materialized.get('plan'));
    } else {
      assert.equal(t.svc.deps.events.materialize, undefined, 'ClickHouse is not altered at runtime');
      assert.deepEqual(materialized(), []);
    }
    // The view answers from what the pass computed (from the columns on DuckDB): the same numbers.
    const after = await run();
    for (const c of after) assert.ok(c.cached_at !== undefined, 'served from the pass');
    assert.deepEqual(after.map((c) => c.result), before.map((c) => c.result));
    // And computed afresh once more, the same again.
    await noise();
    const fresh = await run();
    for (const c of fresh) assert.equal(c.cached_at, undefined);
    assert.deepEqual(fresh.map((c) => c.result), before.map((c) => c.result));
  });

  it("one organisation's experiments on made-up properties take its share of runtime keys, not the store's: another's board still gets its key", async function () {
    this.timeout(120_000);
    const owner = attacker.owner;
    const flag = await owner.post('/api/flags', {
      projectId: attacker.project.id, key: 'hoard', name: 'hoard', variants: [{ key: 'control', rolloutPct: 50 }, { key: 'test', rolloutPct: 50 }], rules: [{ rolloutPct: 100 }],
    });
    assert.equal(flag.status, 201, flag.text);
    // As many made-up sum properties as the store has runtime keys.
    const madeUp = Array.from({ length: MAX_RUNTIME_MATERIALIZED }, (_, i) => `made-up ${i}`);
    for (const [i, key] of madeUp.entries()) {
      const e = await owner.post('/api/experiments', {
        projectId: attacker.project.id, key: `hoard-${i}`, flagKey: 'hoard', startAt: T0, endAt: T0 + 86_400_000, metrics: [{ id: 'm', kind: 'sum', event: 'buy', property: key }],
      });
      assert.equal(e.status, 201, e.text);
    }
    // The experiments' requests run in the background: asked once more, this waits for them to be decided.
    await t.svc.services.properties.request(attacker.org.id, madeUp, 'experiment');
    const hoarded = madeUp.filter((k) => t.svc.deps.events.materialized.has(k));
    if (!embedded()) {
      // ClickHouse is not altered at runtime: twenty experiments materialise nothing, for anyone.
      assert.deepEqual(materialized(), []);
      return;
    }
    assert.equal(hoarded.length, SHARE, `the attacker's share: ${hoarded.join(', ')}`);

    // The victim's board gets a card on a new key; viewed and warmed, that key gets its column.
    const tiers = await report('buys by tier', 'segmentation', { event: 'buy', from: FROM, to: '2024-03-10', unit: 'day', type: 'total', breakdown: 'tier' });
    const cards = (await t.client(victim.tokens.member).get(`/api/boards/${boardId}`)).body.cards.map((c: { report_id: number }) => ({ reportId: c.report_id }));
    const put = await t.client(victim.tokens.member).put(`/api/boards/${boardId}`, { cards: [...cards, { reportId: tiers }] });
    assert.equal(put.status, 200, put.text);
    const before = await run();
    await noise();
    await warmer.pass();
    assert.ok(t.svc.deps.events.materialized.has('tier'), `the board's key is materialised: ${materialized().join(', ')}`);
    assert.ok(!t.svc.deps.events.materialized.has('unused'));
    const after = await run();
    assert.deepEqual(after.map((c) => c.result), before.map((c) => c.result));

    // A key already a column costs nothing: the attacker's share is full, yet asking for the victim's key answers at once.
    assert.equal(await t.svc.deps.events.materialize!('tier', { organizationId: attacker.org.id, maxKeys: SHARE }), 'materialized');
    const byOrg = await t.svc.deps.events.query<{ o: number; n: number }>('SELECT organization_id AS o, count(*) AS n FROM materialized_properties GROUP BY 1 ORDER BY 1');
    assert.deepEqual(byOrg.map((r) => [Number(r.o), Number(r.n)]), [[victim.org.id, BOARD_KEYS.length], [attacker.org.id, SHARE]].sort((a, b) => a[0] - b[0]));
  });
});

describe('events: runtime materialisation, shares of organisations and the store limit [embedded]', () => {
  const fixture = useEventStore(embeddedIn(''), { open: false });

  it("refuses an organisation past its share and everyone past the store's limit; a key already a column costs nobody", async function () {
    this.timeout(60_000);
    const store = fixture.open(['configured']);
    try {
      await store.migrate();
      const event: StoredEvent = { project_id: 1, id: 1, event: 'e', distinct_id: 'd', time: T0, insert_id: 'i', ...eventPropLists({ a0: 'v', configured: 'c' }), received_at: T0 };
      await store.writeEvents(1, [event]);
      const share = (organizationId: number) => ({ organizationId, maxKeys: 5 });
      for (let i = 0; i < 5; i++) assert.equal(await store.materialize!(`a${i}`, share(1)), 'materialized');
      assert.equal(await store.materialize!('a5', share(1)), 'share-full');
      assert.equal(store.materialized.has('a5'), false);
      // Already columns: a configured key, and another organisation's.
      assert.equal(await store.materialize!('configured', share(1)), 'materialized');
      for (let i = 0; i < 3; i++) assert.equal(await store.materialize!(`b${i}`, share(2)), 'materialized');
      assert.equal(await store.materialize!('b0', share(1)), 'materialized');
      // A larger share elsewhere does not lift the store's limit: 20 keys in all, then no one.
      for (let i = 0; i < MAX_RUNTIME_MATERIALIZED - 8; i++) assert.equal(await store.materialize!(`c${i}`, { organizationId: 3, maxKeys: 100 }), 'materialized');
      assert.equal(await store.materialize!('d0', share(4)), 'store-full');
      assert.equal(await store.materialize!('c-more', { organizationId: 3, maxKeys: 100 }), 'store-full');
      const rows = await store.query<{ o: number; n: number }>('SELECT organization_id AS o, count(*) AS n FROM materialized_properties GROUP BY 1 ORDER BY 1');
      assert.deepEqual(rows.map((r) => [Number(r.o), Number(r.n)]), [[1, 5], [2, 3], [3, MAX_RUNTIME_MATERIALIZED - 8]]);
      // The filled column holds the stored event's value.
      const filled = await store.query<{ v: string }>(`SELECT ${store.materialized.get('a0')} AS v FROM events`);
      assert.deepEqual(filled.map((r) => r.v), ['v']);
    } finally {
      await store.close();
    }
  });
});
