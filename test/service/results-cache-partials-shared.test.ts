import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type TestService } from '../support/service.js';
import { loadDataset } from '../support/reference/harness.js';
import type { RefEvent } from '../support/reference/index.js';
import { buildDeps, startService, type RunningService } from '../../apps/server/src/app.js';
import { createServices, type Services } from '../../apps/server/src/services.js';
import { runReport, type ReportRunner } from '../../apps/server/src/reports/run.js';
import type { SavedReport } from '../../apps/server/src/reports/store.js';
import type { ResultsCache } from '../../apps/server/src/results-cache/index.js';
import type { EventStore } from '../../apps/server/src/ports/events/index.js';
import type { Db } from '../../apps/server/src/ports/metadata/knex.js';

const H = 3_600_000;
const DAY = 86_400_000;
/** The runs' today: 2024-04-30; the trend covers the 30 days ending with it, 29 of them closed. */
const D = Date.UTC(2024, 3, 30);
const NOW = D + 12 * H;
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** Days `[from, to)` as read by a statement: the first day and the last. */
const span = (fromMs: number, toEndMs: number) => `${iso(fromMs)}..${iso(toEndMs - 1)}`;
let seq = 0;

interface Instance {
  services: Services;
  events: EventStore;
  db: Db;
}
const ev = (event: string, distinct_id: string, time: number, props: Record<string, string> = {}): RefEvent => ({ event, distinct_id, time, insert_id: `pcs${++seq}`, props });

/** Views by four people over the 30 days, each with a country. */
function events(): RefEvent[] {
  const out: RefEvent[] = [];
  for (let d = -29; d <= 0; d++) {
    ['p1', 'p2', 'p3', 'p4'].forEach((p, i) => {
      if ((d + i) % 2 === 0) out.push(ev('view', p, D + d * DAY + (i + 1) * H, { country: i % 2 ? 'fr' : 'de' }));
    });
  }
  return out;
}

/**
 * The parts of closed days of trends are kept where the answers are (results-cache/partials.ts
 * keptParts): on the production stores (RESULTS_CACHE=shared by default with PostgreSQL) in the
 * table every API process shares, so a day one process computed is not computed by another; on
 * the embedded stores (RESULTS_CACHE=process) in each process's memory. Two services on the same
 * stores: on PostgreSQL a second service (its own connections, event store client and memory);
 * on SQLite, one file per process, a second set of services (its own in-process cache).
 */
forEachBackend('results cache: closed days\' parts shared by API processes', (backend) => {
  let t: TestService;
  let pid: number;
  let orgId: number;
  let report: SavedReport;
  let second: Instance & { close(): Promise<void> };
  let uncut: Services;
  let shared: boolean;
  /** Reads of the shared table by the last run: the whole answer's, then the parts' (one statement for all). */
  let tableReads = 0;

  const a = (): Instance => ({ services: t.svc.services, events: t.svc.deps.events, db: t.svc.deps.db });
  const b = () => second;
  const runner = (s: Services): ReportRunner => ({ executor: s.executor, config: t.svc.deps.config });
  const cacheOf = (s: Services) => s.executor.cache as ResultsCache;
  const write = (rows: RefEvent[]) => t.svc.deps.events.writeEvents(pid, rows.map((e, i) => ({
    project_id: pid, id: 960_000 + ++seq * 10 + i, event: e.event, distinct_id: e.distinct_id, time: e.time, insert_id: e.insert_id,
    prop_keys: Object.keys(e.props), prop_values: Object.values(e.props), prop_types: Object.keys(e.props).map(() => 's').join(''), received_at: Date.now(),
  })));
  /** A live project: an event of today, so no whole answer computed before it is served. */
  const today = () => write([ev('view', `live${seq}`, D + H, { country: 'de' })]);
  /**
   * One run of the trend on an instance: the parts it reused and the ranges it computed (cache
   * counters), the ranges of days the engine statements read, and the answer, which must equal the
   * run with RESULTS_CACHE_PARTIALS=0.
   */
  const run = async (on: Instance, label: string) => {
    const cache = cacheOf(on.services);
    const [reused, computed] = [cache.partialsReused, cache.partialsComputed];
    const store = on.events as Partial<EventStore>;
    const { query } = on.events;
    const reads: string[] = [];
    store.query = ((sql: string, opts?: any) => {
      // The range a statement reads (ClickHouse's recent-rows window is written `(time >= … AND …)`, not read alone).
      reads.push(...[...sql.matchAll(/\(time >= (\d+)\) AND \(time < (\d+)\)/g)].map((m) => span(Number(m[1]), Number(m[2]))));
      return query(sql, opts);
    }) as EventStore['query'];
    tableReads = 0;
    const table = (q: { sql: string }) => { if (/^select .* from "?results_cache"?/i.test(q.sql)) tableReads++; };
    on.db.on('query', table);
    let out;
    try {
      out = await runReport(runner(on.services), { id: pid, org_id: orgId }, report, {}, NOW);
    } finally {
      delete store.query;
      on.db.off('query', table);
    }
    assert.equal(out.cached_at, undefined, `${label}: computed, not a whole answer served`);
    const whole = await runReport(runner(uncut), { id: pid, org_id: orgId }, report, {}, NOW, { refresh: true });
    const { cached_at: _c, ...answer } = out as any;
    assert.deepEqual(answer, whole, `${label}: the answer of the uncut run`);
    return { reused: cache.partialsReused - reused, computed: cache.partialsComputed - computed, reads: [...new Set(reads)].sort() };
  };
  const partRows = async () => (await t.svc.deps.db('results_cache').where({ project_id: pid })).length;

  before(async function () {
    this.timeout(90_000);
    t = await startTestService(backend, { RESULTS_CACHE_FRESH_MS: '0' });
    shared = t.svc.deps.config.resultsCache.mode === 'shared';
    const tenant = await createTenant(t, 'partials-shared');
    pid = tenant.project.id;
    orgId = tenant.org.id;
    await loadDataset(t.svc.deps, pid, { events: events(), links: [] });
    const r = await t.client(tenant.tokens.member).post('/api/reports', {
      projectId: pid, name: 'views per day by country', type: 'segmentation',
      query: { event: 'view', unit: 'day', type: 'total', breakdown: 'country', from: iso(D - 29 * DAY), to: iso(D) },
    });
    assert.equal(r.status, 201, r.text);
    report = r.body as SavedReport;
    uncut = createServices({ ...t.svc.deps, config: { ...t.svc.deps.config, resultsCache: { ...t.svc.deps.config.resultsCache, mode: 'process', partials: false } } });
    if (t.svc.deps.config.databaseUrl) {
      const svc: RunningService = await startService(await buildDeps({ ...t.svc.deps.config }), { port: 0, host: '127.0.0.1', roles: ['api'] });
      second = { services: svc.services, events: svc.deps.events, db: svc.deps.db, close: () => svc.close() };
    } else {
      second = { services: createServices(t.svc.deps), events: t.svc.deps.events, db: t.svc.deps.db, close: async () => {} };
    }
  });
  after(async function () {
    this.timeout(60_000);
    await second?.close();
    await t?.close();
  });

  it('shared by default on the production stores, in process memory on the embedded ones', () => {
    assert.equal(shared, backend.name === 'production');
  });

  it('B answers the trend A computed by computing only the open day, and recomputes a day imported into or a project deleted from', async function () {
    this.timeout(120_000);
    const first = span(D - 29 * DAY, D + DAY);
    const open = span(D, D + DAY);
    // A computes the 30 days in one go and keeps the 29 closed days' parts.
    const byA = await run(a(), 'A, first run');
    assert.deepEqual(byA, { reused: 0, computed: 1, reads: [first] });
    assert.equal(await partRows(), shared ? 29 + 1 : 0, 'the parts and the whole answer in the shared table, or none');

    await today();
    const byB = await run(b(), 'B after A');
    if (shared) {
      assert.deepEqual(byB, { reused: 29, computed: 1, reads: [open] }, 'only the open day computed');
      assert.equal(tableReads, 2, 'the whole answer, then the 29 parts in one statement');
    } else {
      // B's memory holds no part; A still reuses its own.
      assert.deepEqual(byB, { reused: 0, computed: 1, reads: [first] });
      assert.equal(tableReads, 0);
      await today();
      assert.deepEqual(await run(a(), 'A again'), { reused: 29, computed: 1, reads: [open] });
    }

    // An import of old events into a closed day: only that day (and the open one) computed again.
    await write([ev('view', 'p9', D - 10 * DAY + 5 * H, { country: 'fr' })]);
    assert.deepEqual(await run(b(), 'B after an import'), { reused: 28, computed: 2, reads: [span(D - 10 * DAY, D - 9 * DAY), open] });
    if (shared) {
      // A finds the imported day's new part B computed.
      await today();
      assert.deepEqual(await run(a(), 'A after B\'s import run'), { reused: 29, computed: 1, reads: [open] });
    }

    // A privacy deletion of a person with events on closed days: every day of the project changed.
    await t.svc.deps.events.deleteIdentities(pid, ['p2']);
    assert.equal(await partRows(), 0, 'no part of the project is kept in the shared table');
    assert.deepEqual(await run(b(), 'B after a privacy deletion'), { reused: 0, computed: 1, reads: [first] });
    await today();
    assert.deepEqual(await run(a(), 'A after B\'s deletion run'), shared ? { reused: 29, computed: 1, reads: [open] } : { reused: 0, computed: 1, reads: [first] });
  });
});
