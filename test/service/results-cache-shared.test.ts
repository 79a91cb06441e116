import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { Client } from '../support/http.js';
import { loadDataset } from '../support/reference/harness.js';
import { REPORT_EVENTS } from '../support/reports.js';
import { loadConfig } from '../../apps/server/src/config.js';
import { buildDeps, buildKoa, startService, type RunningService } from '../../apps/server/src/app.js';
import { allRoutes } from '../../apps/server/src/routes.js';
import { createServices, type Services } from '../../apps/server/src/services.js';
import { SharedEntries, type ResultsCache } from '../../apps/server/src/results-cache/index.js';
import type { EventStore } from '../../apps/server/src/ports/events/index.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const seg = { event: 'view', from: '2024-01-01', to: '2024-01-14', unit: 'day', type: 'total' };
const funnel = { steps: ['view', 'signup'], from: '2024-01-01', to: '2024-01-14', windowDays: 7 };
const total = (card: any) => card.result.series.reduce((s: number, x: any) => s + x.data.reduce((a: number, d: any) => a + d.value, 0), 0);

describe('results cache: RESULTS_CACHE configuration', () => {
  it('is shared by default on PostgreSQL, in process memory on SQLite, and refuses another value', () => {
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://db/tally' }).resultsCache.mode, 'shared');
    assert.equal(loadConfig({}).resultsCache.mode, 'process');
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://db/tally', RESULTS_CACHE: 'process' }).resultsCache.mode, 'process');
    assert.equal(loadConfig({ RESULTS_CACHE_SHARED_MAX_MB: '3' }).resultsCache.sharedMaxBytes, 3 * 1024 * 1024);
    assert.throws(() => loadConfig({ RESULTS_CACHE: 'redis' }), /RESULTS_CACHE must be one of shared, process/);
  });
});

/**
 * Two API processes on one metadata store: on PostgreSQL a second service (its own connections,
 * event store client and memory); on SQLite, one file per process, a second set of services (its
 * own in-process cache) behind a second listener on the same stores.
 */
forEachBackend('results cache shared by API processes', (backend) => {
  let t: TestService;
  let second: { url: string; services: Services; events: EventStore; close(): Promise<void> };
  let tenant: Tenant;
  let pid: number;
  let board: number;

  const run = async (url: string, id = board) => {
    const r = await new Client(url, tenant.tokens.member).post(`/api/boards/${id}/run`, {});
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  /** Engine statements `events` runs during `work`. */
  const counted = async <T>(events: EventStore, work: () => Promise<T>): Promise<{ out: T; statements: number }> => {
    const store = events as Partial<EventStore>;
    const { query } = events;
    let statements = 0;
    store.query = ((sql: string, opts?: any) => { statements++; return query(sql, opts); }) as EventStore['query'];
    try {
      return { out: await work(), statements };
    } finally {
      delete store.query;
    }
  };
  const cacheOf = (s: Services) => s.executor.cache as ResultsCache;

  before(async function () {
    this.timeout(90_000);
    t = await startTestService(backend, { RESULTS_CACHE: 'shared', RESULTS_CACHE_FRESH_MS: '600000' });
    tenant = await createTenant(t, 'rcs');
    pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, { events: REPORT_EVENTS, links: [] });
    const member = t.client(tenant.tokens.member);
    const ids = [];
    for (const [name, type, query] of [['views', 'segmentation', seg], ['signup funnel', 'funnel', funnel]] as const) {
      const r = await member.post('/api/reports', { projectId: pid, name, type, query });
      assert.equal(r.status, 201, r.text);
      ids.push(r.body.id);
    }
    const b = await member.post('/api/boards', { projectId: pid, name: 'Shared', cards: ids.map((reportId) => ({ reportId })) });
    assert.equal(b.status, 201, b.text);
    board = b.body.id;
    if (t.svc.deps.config.databaseUrl) {
      const svc: RunningService = await startService(await buildDeps({ ...t.svc.deps.config }), { port: 0, host: '127.0.0.1', roles: ['api'] });
      second = { url: svc.url, services: svc.services, events: svc.deps.events, close: () => svc.close() };
    } else {
      const services = createServices(t.svc.deps);
      const server = http.createServer(buildKoa(t.svc.deps, allRoutes(t.svc.deps, services)).callback());
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      second = { url, services, events: t.svc.deps.events, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
    }
  });
  after(async function () {
    this.timeout(60_000);
    await second?.close();
    await t?.close();
  });

  it('the second process answers from the entries the first computed, without asking the engine', async function () {
    this.timeout(30_000);
    const first = await run(t.url);
    assert.ok(first.cards.every((c: any) => c.status === 'ok' && c.cached_at === undefined), JSON.stringify(first.cards));
    const before = cacheOf(second.services).sharedHits;
    const { out, statements } = await counted(second.events, () => run(second.url));
    assert.equal(statements, 0, 'no engine statement on the second process');
    assert.equal(cacheOf(second.services).sharedHits, before + 2);
    for (const [i, c] of out.cards.entries()) {
      assert.equal(typeof c.cached_at, 'number', JSON.stringify(c));
      assert.deepEqual(c.result, first.cards[i].result);
    }
    assert.equal(total(out.cards[0]), 4);
  });

  it('new events in the range, a deletion of a person and a new annotation each invalidate the shared entries', async function () {
    this.timeout(60_000);
    await run(t.url);
    const base = total((await run(second.url)).cards[0]);
    // New events, written by the first process's store (as its ingestion worker would).
    const time = Date.UTC(2024, 0, 6, 12);
    await t.svc.deps.events.writeEvents(pid, [{
      project_id: pid, id: 910_001, event: 'view', distinct_id: 'rcs-new', time, insert_id: 'rcs-new', prop_keys: [], prop_values: [], prop_types: '', received_at: time,
    }]);
    const { out: fresh, statements } = await counted(second.events, () => run(second.url));
    assert.ok(statements > 0, 'the second process computed again');
    assert.equal(fresh.cards[0].cached_at, undefined);
    assert.equal(total(fresh.cards[0]), base + 1);
    // The first process now answers from the entry the second computed.
    const back = await run(t.url);
    assert.equal(typeof back.cards[0].cached_at, 'number');
    assert.equal(total(back.cards[0]), base + 1);
    // A privacy deletion (the privacy runner's store call) of that person.
    await t.svc.deps.events.deleteIdentities(pid, ['rcs-new']);
    // Dead, and possibly naming the deleted person's values: gone at once, not when evicted.
    assert.equal((await t.svc.deps.db('results_cache').where({ project_id: pid })).length, 0);
    const deleted = await run(second.url);
    assert.equal(deleted.cards[0].cached_at, undefined);
    assert.equal(total(deleted.cards[0]), base);
    assert.equal(typeof (await run(t.url)).cards[0].cached_at, 'number');
    // A metadata change through the first process's API.
    const a = await t.client(tenant.tokens.member).post('/api/annotations', { projectId: pid, date: '2024-01-03', description: 'shared launch' });
    assert.equal(a.status, 201, a.text);
    const annotated = await run(second.url);
    assert.equal(annotated.cards[0].cached_at, undefined);
    assert.ok(JSON.stringify(annotated.cards[0].result.annotations).includes('shared launch'));
  });

  it('an entry is only read for its own project', async function () {
    this.timeout(30_000);
    await run(t.url);
    const [row] = await t.svc.deps.db('results_cache').where({ project_id: pid }).select('id');
    assert.ok(row, 'an entry of the project');
    const shared = new SharedEntries(t.svc.deps.db, 1 << 30);
    assert.ok(await shared.get(row.id, pid));
    assert.equal(await shared.get(row.id, pid + 1000), undefined);
  });

  it('the table stays within its byte bound: the least recently read entries go first', async function () {
    this.timeout(30_000);
    const db = t.svc.deps.db;
    const shared = new SharedEntries(db, 40_000);
    const entry = (n: number) => ({ value: { pad: 'x'.repeat(9_000 + n) }, signature: 's', at: Date.now(), live: false, bytes: 0 });
    const now = Date.now();
    for (let i = 0; i < 4; i++) {
      await shared.set(`evict-${i}`, pid, entry(i), now + i * 120_000);
      await shared.settled();
    }
    // Read the oldest: it becomes the most recently read (reads mark at most once a minute).
    assert.ok(await shared.get('evict-0', pid, now + 600_000));
    await shared.set('evict-4', pid, entry(4), now + 720_000);
    await shared.settled();
    const left = (await db('results_cache').select('id')).map((r: any) => r.id);
    const size = await shared.size();
    assert.ok(size.bytes <= 40_000, JSON.stringify(size));
    assert.ok(left.includes('evict-0'), `read lately: kept (${left})`);
    assert.ok(left.includes('evict-4'), `just written: kept (${left})`);
    assert.ok(!left.includes('evict-1'), `least recently read: evicted (${left})`);
    // An answer over a quarter of the bound is not kept.
    await shared.set('evict-huge', pid, { ...entry(0), value: { pad: 'x'.repeat(20_000) } }, now + 800_000);
    assert.equal(await shared.get('evict-huge', pid), undefined);
  });
});
