import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { loadDataset } from '../support/reference/harness.js';
import { REPORT_EVENTS } from '../support/reports.js';
import { OrgSlots } from '../../apps/server/src/query/engine/concurrency.js';
import { QueryExecutor } from '../../apps/server/src/query/executor.js';
import { AppError } from '../../apps/server/src/http/errors.js';
import { RankedStatementQueue } from '../../apps/server/src/ports/events/duckdb-queue.js';
import type { ReadOptions } from '../../apps/server/src/ports/events/index.js';
import { registry } from '../../apps/server/src/metrics/registry.js';

const seg = { event: 'view', from: '2024-01-01', to: '2024-01-14', unit: 'day', type: 'total' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('per-organisation query slots', () => {
  it('admits up to perOrg at once per organisation, queues the rest in order, refuses after queueMs with Retry-After', async () => {
    const slots = new OrgSlots(2, 150);
    const a1 = await slots.acquire(1);
    const a2 = await slots.acquire(1);
    assert.deepEqual(slots.load(1), { running: 2, waiting: 0 });
    const order: string[] = [];
    const w1 = slots.acquire(1).then((r) => { order.push('w1'); return r; });
    const w2 = slots.acquire(1).then((r) => { order.push('w2'); return r; });
    assert.deepEqual(slots.load(1), { running: 2, waiting: 2 });
    a1();
    a1(); // a second release of the same slot changes nothing
    const r1 = await w1;
    assert.deepEqual(order, ['w1'], 'the longest waiter goes first');
    assert.deepEqual(slots.load(1), { running: 2, waiting: 1 });
    const refused = await w2.then(() => undefined, (e: unknown) => e);
    assert.ok(refused instanceof AppError, String(refused));
    assert.equal(refused.status, 429);
    assert.equal(refused.error, 'too many concurrent queries');
    assert.equal(refused.extra.headers?.['Retry-After'], '1');
    assert.deepEqual(slots.load(1), { running: 2, waiting: 0 }, 'a refused waiter leaves the queue');
    const b1 = await slots.acquire(2);
    assert.deepEqual(slots.load(2), { running: 1, waiting: 0 }, 'the other organisation takes a slot at once');
    a2();
    r1();
    b1();
    assert.deepEqual([slots.load(1), slots.load(2)], [{ running: 0, waiting: 0 }, { running: 0, waiting: 0 }]);
  });

  it('while another organisation is active, each starts one analysis at a time', async () => {
    const slots = new OrgSlots(4, 2000, 50);
    const flood = await Promise.all([1, 2, 3, 4].map(() => slots.acquire(1)));
    assert.equal(slots.limit(1), 4, 'alone: all of perOrg');
    const queued = [slots.acquire(1), slots.acquire(1)];
    const quiet = await slots.acquire(2);
    assert.deepEqual([slots.limit(1), slots.limit(2)], [1, 1], 'two active organisations: one each');
    assert.deepEqual(slots.load(2), { running: 1, waiting: 0 }, 'the quiet organisation starts at once');
    flood[0]();
    flood[1]();
    flood[2]();
    assert.deepEqual(slots.load(1), { running: 1, waiting: 2 }, 'the flood starts nothing while it runs one');
    flood[3]();
    assert.deepEqual(slots.load(1), { running: 1, waiting: 1 }, 'none running: its longest waiter starts');
    quiet();
    assert.equal(slots.limit(1), 1, 'the quiet organisation counts as active for activeMs after its last slot');
    const started = Date.now();
    const last = await queued[1];
    assert.ok(Date.now() - started >= 40, 'the last waiter started once the quiet organisation stopped counting');
    assert.deepEqual([slots.limit(1), slots.load(1)], [4, { running: 2, waiting: 0 }]);
    for (const release of [await queued[0], last]) release();
    assert.deepEqual(slots.load(1), { running: 0, waiting: 0 });
  });

  it('counts refusals and waiting queries in the metrics', async () => {
    const org = 987_654;
    const value = async (name: string) => {
      const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
      return (metric?.values as Array<{ value: number; labels: Record<string, unknown> }> | undefined)?.find((v) => v.labels.org === String(org))?.value ?? 0;
    };
    const slots = new OrgSlots(1, 100);
    const refusedBefore = await value('tally_query_concurrency_refused_total');
    const held = await slots.take(org);
    assert.equal(await value('tally_query_running'), 1);
    const waiter = slots.take(org).catch((e: unknown) => e);
    assert.equal(await value('tally_query_waiting'), 1, 'one waiting');
    assert.ok((await waiter) instanceof AppError);
    assert.equal(await value('tally_query_waiting'), 0, 'the refused query no longer waits');
    assert.equal(await value('tally_query_concurrency_refused_total'), refusedBefore + 1);
    held.release();
    assert.equal(await value('tally_query_running'), 0);
  });
});

describe("DuckDB's statement queue by rank", () => {
  it('runs one statement at a time, unranked first, then by rank, one rank in arrival order; a statement passed over for maxPassMs goes next', async () => {
    const queue = new RankedStatementQueue(200);
    const order: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let running = 0;
    const statement = (name: string, rank?: number, wait?: Promise<void>) => queue.run(async () => {
      running++;
      assert.equal(running, 1, 'one statement at a time');
      await wait;
      order.push(name);
      running--;
      return name;
    }, rank);
    const all = [statement('first (rank 3)', 3, gate), statement('a2', 2), statement('b2', 2), statement('a1', 1), statement('write'), statement('b1', 1)];
    assert.deepEqual(queue.ranks(), [2, 2, 1, 0, 1], 'the first runs, the others wait');
    open();
    assert.deepEqual(await Promise.all(all), ['first (rank 3)', 'a2', 'b2', 'a1', 'write', 'b1'], 'each caller gets its own answer');
    assert.deepEqual(order, ['first (rank 3)', 'write', 'a1', 'b1', 'a2', 'b2']);

    order.length = 0;
    let openSlow!: () => void;
    const slow = new Promise<void>((r) => (openSlow = r));
    const passed = [statement('slow', 1, slow), statement('rank 4', 4), statement('rank 1', 1)];
    await sleep(250);
    openSlow();
    await Promise.all(passed);
    assert.deepEqual(order, ['slow', 'rank 4', 'rank 1'], 'the rank-4 statement had waited past maxPassMs');
    await queue.drained();
    await assert.rejects(queue.run(async () => { throw new Error('boom'); }), /boom/);
    assert.equal(await queue.run(async () => 'after a failure'), 'after a failure', 'a failed statement does not stop the queue');
  });
});

describe("DuckDB's statement queue: the express lane", () => {
  it('a read ranked better than the running read starts at once in the express lane, one at a time; writes and worse ranks wait', async () => {
    const queue = new RankedStatementQueue(1000, true);
    const order: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let openExpress!: () => void;
    const expressGate = new Promise<void>((r) => (openExpress = r));
    const statement = (name: string, rank?: number, wait?: Promise<void>) => queue.run(async (lane) => {
      order.push(`${name} starts (${lane})`);
      await wait;
      order.push(`${name} ends`);
      return lane;
    }, rank);
    const flood = statement('flood (rank 4)', 4, gate);
    await sleep(10);
    const quiet = statement('quiet (rank 1)', 1, expressGate);
    const write = statement('write');
    const other = statement('other (rank 2)', 2);
    const worse = statement('worse (rank 4)', 4);
    await sleep(10);
    assert.deepEqual(order, ['flood (rank 4) starts (main)', 'quiet (rank 1) starts (express)'], 'the quiet read runs beside the flood; the lane holds one');
    assert.deepEqual(queue.ranks(), [0, 2, 4], 'a write, the second better read and a worse one wait their turn');
    openExpress();
    assert.equal(await quiet, 'express');
    open();
    assert.deepEqual(await Promise.all([flood, write, other, worse]), ['main', 'main', 'main', 'main']);
    assert.deepEqual(order.slice(2), ['quiet (rank 1) ends', 'flood (rank 4) ends', 'write starts (main)', 'write ends',
      'other (rank 2) starts (main)', 'other (rank 2) ends', 'worse (rank 4) starts (main)', 'worse (rank 4) ends']);
    // Nothing ranked runs: a read goes through the main lane.
    assert.equal(await statement('alone (rank 1)', 1), 'main');
    await queue.drained();
  });

  it('while a better read runs in the express lane, the main lane starts no worse read until it ends (or the worse one has waited maxPassMs); writes still start', async () => {
    const queue = new RankedStatementQueue(300, true);
    const order: string[] = [];
    const gate = () => { let open!: () => void; const opened = new Promise<void>((r) => (open = r)); return { opened, open }; };
    const statement = (name: string, rank?: number, wait?: Promise<void>) => queue.run(async (lane) => {
      order.push(`${name} starts (${lane})`);
      await wait;
      order.push(`${name} ends`);
    }, rank);
    const floodGate = gate();
    const quietGate = gate();
    const flood = statement('flood', 4, floodGate.opened);
    await sleep(10);
    const quiet = statement('quiet', 1, quietGate.opened);
    const next = statement('next of the flood', 4);
    const write = statement('write');
    await sleep(10);
    floodGate.open();
    await Promise.all([flood, write]);
    await sleep(20);
    assert.deepEqual(order, ['flood starts (main)', 'quiet starts (express)', 'flood ends', 'write starts (main)', 'write ends'],
      "the flood's next read waits for the quiet one to end; a write does not");
    assert.deepEqual(queue.ranks(), [4]);
    quietGate.open();
    await Promise.all([quiet, next]);
    assert.deepEqual(order.slice(5), ['quiet ends', 'next of the flood starts (main)', 'next of the flood ends']);

    // A quiet read longer than maxPassMs holds the flood back no longer than that.
    order.length = 0;
    const floodGate2 = gate();
    const quietGate2 = gate();
    const flood2 = statement('flood', 4, floodGate2.opened);
    await sleep(10);
    const quiet2 = statement('quiet', 1, quietGate2.opened);
    const queued = Date.now();
    const held = statement('held', 4);
    floodGate2.open();
    await Promise.all([flood2, held]);
    const waited = Date.now() - queued;
    assert.ok(waited >= 280 && waited < 2000, `the held read started after about maxPassMs (300 ms): ${waited} ms`);
    assert.deepEqual(order, ['flood starts (main)', 'quiet starts (express)', 'flood ends', 'held starts (main)', 'held ends']);
    quietGate2.open();
    await quiet2;
    await queue.drained();
  });
});

forEachBackend('query executor: report and board runs share the query rate limit', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let report: number;
  let board: number;
  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { QUERY_RATE_PER_SECOND: '1', QUERY_RATE_BURST: '4' });
    acme = await createTenant(t, 'Exec');
    const pid = acme.project.id;
    const r = await acme.owner.post('/api/reports', { projectId: pid, name: 'views', type: 'segmentation', query: seg });
    assert.equal(r.status, 201, r.text);
    report = r.body.id;
    const b = await acme.owner.post('/api/boards', { projectId: pid, name: 'Views', cards: [{ reportId: report }] });
    assert.equal(b.status, 201, b.text);
    board = b.body.id;
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('a query, a report run and a board run spend one bucket; once empty each answers 429 {status: 0} with Retry-After', async function () {
    this.timeout(30_000);
    const query = (c = acme.owner) => c.post('/api/query/segmentation', { projectId: acme.project.id, ...seg });
    const runReport = (c = acme.owner) => c.post(`/api/reports/${report}/run`, {});
    const runBoard = (c = acme.owner) => c.post(`/api/boards/${board}/run`, {});
    const csvReport = (c = acme.owner) => c.get(`/api/reports/${report}/run?format=csv`);
    // A report or board of another organisation is 404 before any token is spent.
    const stranger = await createTenant(t, 'Exec stranger');
    assert.equal((await runReport(stranger.owner)).status, 404);
    assert.deepEqual([(await query()).status, (await runReport()).status, (await runBoard()).status, (await csvReport()).status], [200, 200, 200, 200]);
    for (const r of [await runReport(), await runBoard(), await csvReport(), await query()]) {
      assert.equal(r.status, 429, r.text);
      assert.deepEqual(r.body, { status: 0, error: 'rate limited' });
      assert.equal(r.headers.get('retry-after'), '1');
    }
    assert.equal((await runBoard(t.client(acme.tokens.viewer))).status, 200, 'another credential has its own bucket');
    assert.equal((await runReport(stranger.owner)).status, 404, 'and a stranger still sees nothing');
  });
});

forEachBackend('query executor: fairness between organisations', (backend) => {
  let t: TestService;
  let a: Tenant;
  let b: Tenant;
  /** Org A's engine reads wait here until released: the slot stays held however fast the engine is. */
  let gate: { entered: number; release: () => void; opened: Promise<void> };
  const tags: string[] = [];
  const ranks: Array<number | undefined> = [];
  /** Whether another organisation was active at each statement (ReadOptions.contended). */
  const contended: Array<boolean | undefined> = [];
  const resetGate = () => {
    let release!: () => void;
    const opened = new Promise<void>((r) => (release = r));
    gate = { entered: 0, release, opened };
  };

  before(async function () {
    this.timeout(60_000);
    t = await startTestService(backend, { QUERY_CONCURRENCY_PER_ORG: '1', QUERY_QUEUE_MS: '400' });
    a = await createTenant(t, 'Fair A');
    b = await createTenant(t, 'Fair B');
    for (const tenant of [a, b]) await loadDataset(t.svc.deps, tenant.project.id, { events: REPORT_EVENTS, links: [] });
    resetGate();
    // The seam: the event store the service runs on, with org A's reads held at the gate before
    // they run (the store answers what is assigned on it; deleting the assignment restores it).
    const store = t.svc.deps.events;
    const query = store.query.bind(store);
    const held = `/* org=${a.org.id} project=${a.project.id} */`;
    store.query = (async (sql: string, opts?: ReadOptions) => {
      tags.push(sql.slice(0, sql.indexOf('*/') + 2));
      ranks.push(opts?.rank);
      contended.push(opts?.contended);
      if (sql.startsWith(held)) {
        gate.entered++;
        await gate.opened;
      }
      return query(sql, opts);
    }) as typeof store.query;
  });
  after(async function () {
    this.timeout(60_000);
    if (t) delete (t.svc.deps.events as { query?: unknown }).query;
    await t?.close();
  });

  const query = (tenant: Tenant) => tenant.owner.post('/api/query/segmentation', { projectId: tenant.project.id, ...seg });
  const waitEntered = async (n: number) => {
    for (let i = 0; i < 200 && gate.entered < n; i++) await sleep(25);
    assert.equal(gate.entered, n, 'org A reached the engine');
  };

  it("organisation A past its slot waits, then answers 429 with Retry-After, while B's queries answer 200", async function () {
    this.timeout(30_000);
    resetGate();
    const first = query(a);
    await waitEntered(1);
    const started = Date.now();
    const [second, other] = await Promise.all([query(a), query(b)]);
    assert.equal(second.status, 429, second.text);
    assert.deepEqual(second.body, { error: 'too many concurrent queries', message: second.body.message });
    assert.match(second.body.message, /waited 400 ms/);
    assert.equal(second.headers.get('retry-after'), '1');
    assert.ok(Date.now() - started >= 350, 'it waited for a slot first');
    assert.equal(other.status, 200, other.text);
    assert.ok(other.body.series.length > 0, 'B got its answer while A held its slot');
    gate.release();
    const done = await first;
    assert.equal(done.status, 200, done.text);
    assert.deepEqual(done.body, other.body, 'both organisations hold the same events: the same answer');
    assert.equal((await query(a)).status, 200, 'the slot is free again');
    assert.ok(tags.includes(`/* org=${b.org.id} project=${b.project.id} */`), `reads carry the organisation and project: ${[...new Set(tags)]}`);
    assert.deepEqual([...new Set(ranks)], [1], 'and their rank: the analyses their organisation runs at once (one at most here)');
  });

  it('ranks each statement by the analyses its organisation runs or waits to run at that moment, and whether another organisation is active', async function () {
    this.timeout(30_000);
    // An executor of this service's parts allowing three at once: A runs three, B one.
    const { deps, services } = t.svc;
    const wide = new QueryExecutor({
      config: { ...deps.config, queryConcurrency: { perOrg: 3, queueMs: 1000 } },
      events: deps.events, analyses: services.analyses, rateLimits: deps.rateLimits, projects: deps.projects, cache: services.executor.cache,
    });
    const scope = (tenant: Tenant) => ({ id: tenant.project.id, org_id: tenant.org.id });
    const rankOf = (tenant: Tenant) => ranks[tags.lastIndexOf(`/* org=${tenant.org.id} project=${tenant.project.id} */`)];
    resetGate();
    const from = tags.length;
    const flood = [1, 2, 3].map(() => wide.compiled(scope(a), (events) => events.query('SELECT 1 AS n')));
    await waitEntered(3);
    // Ranked by slot order they were 1, 2, 3: the flood's first shared the engine evenly with B.
    assert.deepEqual(ranks.slice(from), [3, 3, 3], 'while A runs three, each of its statements ranks 3');
    // Alone, though: not contended, so ClickHouse gives them whole threads and blocks (a board's cards).
    assert.deepEqual(contended.slice(from), [false, false, false], 'A alone: its reads are not contended');
    await wide.compiled(scope(b), (events) => events.query('SELECT 1 AS n'));
    assert.equal(rankOf(b), 1, 'B, running one, ranks 1: the engine takes it before the flood');
    assert.equal(contended[tags.lastIndexOf(`/* org=${b.org.id} project=${b.project.id} */`)], true, "B reads beside A's flood: contended");
    // Two more of A's wait (B is active: A starts one at a time); a statement of A's read while
    // another waits counts it, so a flood held to one running analysis still ranks behind B.
    const more = [1, 2].map(() => wide.compiled(scope(a), (events) => events.query('SELECT 1 AS n')));
    assert.deepEqual(wide.slots.load(a.org.id), { running: 3, waiting: 2 });
    const afterB = tags.length;
    gate.release();
    await Promise.all([...flood, ...more]);
    const aTag = `/* org=${a.org.id} project=${a.project.id} */`;
    const laterRanks = ranks.slice(afterB).filter((_, i) => tags[afterB + i] === aTag);
    // The second ranks 1 if it started after the first ended, 2 if B stopped counting as active
    // meanwhile and both started at once.
    assert.equal(laterRanks.length, 2, `both read: ${laterRanks}`);
    assert.equal(laterRanks[0], 2, `the first of the two ranks 2, running one with one waiting: ${laterRanks}`);
    assert.equal(contended.slice(afterB).find((_, i) => tags[afterB + i] === aTag), true, 'with B active, A shares: contended');
    await wide.compiled(scope(a), (events) => events.query('SELECT 1 AS n'));
    assert.equal(rankOf(a), 1, 'A alone again: rank 1');
  });

  it('data browsing takes the same slots, its reads named like an analysis', async function () {
    this.timeout(30_000);
    const stats = (tenant: Tenant) => tenant.owner.get(`/api/data/stats?projectId=${tenant.project.id}`);
    resetGate();
    const first = query(a);
    await waitEntered(1);
    const [refused, other] = await Promise.all([stats(a), stats(b)]);
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.error, 'too many concurrent queries');
    assert.equal(other.status, 200, other.text);
    assert.equal(other.body.events, REPORT_EVENTS.length);
    gate.release();
    assert.equal((await first).status, 200);
    tags.length = 0;
    resetGate();
    gate.release();
    const mine = await stats(a);
    assert.equal(mine.status, 200, mine.text);
    assert.deepEqual(mine.body, other.body, 'the same events, the same totals');
    assert.ok(tags.length > 0 && tags.every((tag) => tag === `/* org=${a.org.id} project=${a.project.id} */`), `every read of the stats is named: ${tags}`);
  });

  it('cohort previews take the same slots, their reads named like an analysis', async function () {
    this.timeout(30_000);
    const definition = { op: 'and', criteria: [{ kind: 'behavior', event: 'view', op: 'gte', count: 1, windowDays: 0 }] };
    const preview = (tenant: Tenant) => tenant.owner.post('/api/cohorts/preview', { projectId: tenant.project.id, definition });
    resetGate();
    const first = query(a);
    await waitEntered(1);
    const [refused, other] = await Promise.all([preview(a), preview(b)]);
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.error, 'too many concurrent queries');
    assert.equal(other.status, 200, other.text);
    assert.ok(other.body.count > 0, 'B counts its cohort meanwhile');
    gate.release();
    assert.equal((await first).status, 200);
    tags.length = 0;
    const mine = await preview(a);
    assert.deepEqual([mine.status, mine.body.count], [200, other.body.count], mine.text);
    assert.ok(tags.length > 0 && tags.every((tag) => tag === `/* org=${a.org.id} project=${a.project.id} */`), `every read of the preview is named: ${tags}`);
  });

  it('a read of a better rank goes before reads of worse ranks already in the engine', async function () {
    this.timeout(60_000);
    const store = t.svc.deps.events;
    // Big enough on ClickHouse that three share the engine for a while (0.5 s each alone on a fast
    // machine with 2 threads, where 20M numbers took 0.18 s and both rank-2 reads ended about when
    // the better one started); DuckDB runs one statement at a time, so there the order is the queue's.
    const heavy = store.dialect === 'clickhouse'
      ? 'SELECT count() AS n FROM numbers(80000000) WHERE sipHash64(number) % 7 = 1'
      : 'SELECT count(*) AS n FROM range(2000000) t(x) WHERE hash(x) % 7 = 1';
    const done: string[] = [];
    const read = (name: string, rank: number) => store.query<{ n: number }>(heavy, { rank }).then((rows) => { done.push(name); return Number(rows[0].n); });
    const first = read('first (rank 2)', 2);
    const second = read('second (rank 2)', 2);
    if (store.dialect === 'clickhouse') await sleep(200); // both running before the better one starts
    const better = read('better (rank 1)', 1);
    const answers = await Promise.all([first, second, better]);
    assert.equal(new Set(answers).size, 1, `the same count each time: ${answers}`);
    assert.ok(done.indexOf('better (rank 1)') < done.indexOf('second (rank 2)'), `the rank-1 read started last and finished before the second rank-2 read: ${done}`);
  });

  it("an organisation running several analyses reads with its share of the engine: ClickHouse's threads and blocks, DuckDB's main lane held while a better read runs", async function () {
    this.timeout(60_000);
    const store = t.svc.deps.events;
    if (store.dialect === 'clickhouse') {
      // system.settings shows the settings the reading query itself runs with.
      const settings = async (rank?: number, contended?: boolean) => Object.fromEntries((await store.query<{ name: string; value: string }>(
        `SELECT name, value FROM system.settings WHERE name IN ('priority', 'max_threads', 'max_block_size')`, rank ? { rank, contended } : {})).map((r) => [r.name, r.value]));
      const server = await settings();
      const threads = Number(/\d+/.exec(server.max_threads)?.[0]);
      assert.ok(threads > 0, `the server's max_threads: ${server.max_threads}`);
      assert.deepEqual(await settings(1), { ...server, priority: '1' }, 'an organisation running one analysis: every thread, whole blocks');
      for (const rank of [2, 4]) {
        assert.deepEqual(await settings(rank), { priority: String(rank), max_threads: String(Math.max(1, Math.floor(threads / rank))), max_block_size: '8192' },
          `running ${rank}: its share of the threads, smaller blocks`);
        assert.deepEqual(await settings(rank, false), { ...server, priority: String(rank) }, `running ${rank} with no other organisation active: every thread, whole blocks`);
      }
      return;
    }
    // DuckDB: the flood's second read is queued while its first runs and a quiet read runs beside
    // it in the express lane; the first ends long before the quiet one, and the second waits for the
    // quiet read to end (or for the queue's maxPassMs, a second) instead of starting at once.
    const scan = (rows: number) => `SELECT count(*) AS n FROM range(${rows}) t(x) WHERE hash(x) % 7 = 1`;
    const at: Record<string, number> = {};
    const read = (name: string, sql: string, rank: number) => store.query<{ n: number }>(sql, { rank }).then((r) => { at[name] = Date.now(); return Number(r[0].n); });
    const first = read('first', scan(1_000_000), 4);
    await sleep(5);
    const quiet = read('quiet', scan(4_000_000), 1);
    const queued = Date.now();
    const second = read('second', 'SELECT 42 AS n', 4);
    const [n1, n4, answer] = await Promise.all([first, quiet, second]);
    assert.ok(n1 > 100_000 && n4 > 3 * n1 && answer === 42, `each read its own answer: ${[n1, n4, answer]}`);
    assert.ok(at.first < at.quiet, `the flood's first read ended first (${at.first - queued} ms, the quiet one ${at.quiet - queued} ms)`);
    assert.ok(at.second >= Math.min(at.quiet, queued + 1000) - 5,
      `the flood's second read waited for the quiet read (ended ${at.quiet - queued} ms) or a second: it ended at ${at.second - queued} ms`);
  });

  it('a query that waits less than QUERY_QUEUE_MS gets the slot when it frees, in arrival order', async function () {
    this.timeout(30_000);
    resetGate();
    const first = query(a);
    await waitEntered(1);
    const second = query(a);
    await sleep(150);
    gate.release();
    const [r1, r2] = await Promise.all([first, second]);
    assert.deepEqual([r1.status, r2.status], [200, 200], r2.text);
  });

  it('a report run and a board card take the same slots', async function () {
    this.timeout(30_000);
    const r = await a.owner.post('/api/reports', { projectId: a.project.id, name: 'views', type: 'segmentation', query: { ...seg, to: '2024-01-13' } });
    assert.equal(r.status, 201, r.text);
    const bd = await a.owner.post('/api/boards', { projectId: a.project.id, name: 'Views', cards: [{ reportId: r.body.id }] });
    assert.equal(bd.status, 201, bd.text);
    resetGate();
    const first = query(a);
    await waitEntered(1);
    const [report, board] = await Promise.all([a.owner.post(`/api/reports/${r.body.id}/run`, {}), a.owner.post(`/api/boards/${bd.body.id}/run`, {})]);
    assert.equal(report.status, 429, report.text);
    assert.equal(report.body.error, 'too many concurrent queries');
    assert.equal(report.headers.get('retry-after'), '1');
    // A board answers each card on its own: the card carries the refusal.
    assert.equal(board.status, 200, board.text);
    assert.deepEqual(board.body.cards[0].error && { status: board.body.cards[0].error.status, error: board.body.cards[0].error.error }, { status: 429, error: 'too many concurrent queries' });
    gate.release();
    assert.equal((await first).status, 200);
    assert.equal((await a.owner.post(`/api/reports/${r.body.id}/run`, {})).status, 200);
  });
});
