import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { loadDataset } from '../support/reference/harness.js';
import type { RefEvent } from '../support/reference/index.js';
import { loadConfig } from '../../apps/server/src/config.js';
import { createServices, type Services } from '../../apps/server/src/services.js';
import { runReport, type ReportRunner } from '../../apps/server/src/reports/run.js';
import type { SavedReport } from '../../apps/server/src/reports/store.js';
import type { ResultsCache } from '../../apps/server/src/results-cache/index.js';
import { slicesOf, runsOf } from '../../apps/server/src/results-cache/partials.js';
import type { EventStore } from '../../apps/server/src/ports/events/index.js';

const H = 3_600_000;
const DAY = 86_400_000;
/** "Today" of the first runs: 2024-03-10 (a Sunday), so the range's weeks and months have closed and open ones. */
const D = Date.UTC(2024, 2, 10);
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const FROM = iso(D - 12 * DAY);
const TO = iso(D + 1 * DAY);
let seq = 0;
const ev = (event: string, distinct_id: string, time: number, props: Record<string, string> = {}): RefEvent => ({ event, distinct_id, time, insert_id: `pc${++seq}`, props });

/** Views, signups and buys over the twelve days before D and on D, by five people, two of them one person through a link. */
function events(): RefEvent[] {
  const out: RefEvent[] = [];
  const people = ['u1', 'u2', 'u3', 'anon', 'u5'];
  for (let d = -12; d <= 0; d++) {
    people.forEach((p, i) => {
      if ((d + i) % 3 === 0) out.push(ev('view', p, D + d * DAY + (i + 1) * H, { country: i % 2 ? 'fr' : 'de' }));
      if ((d + i) % 4 === 0) out.push(ev('signup', p, D + d * DAY + (i + 2) * H));
      if ((d * i) % 5 === 1) out.push(ev('buy', p, D + d * DAY + (i + 3) * H, { country: 'fr' }));
    });
  }
  return out;
}

const metric = (id: string, event: string, op: string) => ({ id, kind: 'event', event, aggregation: { op } });
const irQuery = (q: Record<string, unknown>) => ({ v: 2, dateRange: { kind: 'absolute', from: FROM, to: TO }, ...q });

/**
 * Closed days are never recomputed (results-cache/partials.ts): every trend kind run with the reuse
 * answers exactly what the same run without any cache answers, on data written across midnight,
 * imported into the past, deleted by a privacy request and folded identities; and a run after
 * only today's data changed reads only today.
 */
forEachBackend('results cache: closed buckets of trends reused', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let pid: number;
  let plain: Services;
  const reports: Array<{ name: string; report: SavedReport }> = [];

  const runner = (s: Services): ReportRunner => ({ executor: s.executor, config: t.svc.deps.config });
  const project = () => ({ id: pid, org_id: tenant.org.id });
  const cache = () => t.svc.services.executor.cache as ResultsCache;
  /** Engine statements run during `work`, and their text. */
  const counted = async <T>(work: () => Promise<T>): Promise<{ out: T; sql: string[] }> => {
    const store = t.svc.deps.events as Partial<EventStore>;
    const { query } = t.svc.deps.events;
    const sql: string[] = [];
    store.query = ((s: string, opts?: any) => { sql.push(s); return query(s, opts); }) as EventStore['query'];
    try {
      return { out: await work(), sql };
    } finally {
      delete store.query;
    }
  };
  /** Every report with the reuse and without any cache, at the clock `now`: the answers must be equal. */
  const compareAll = async (now: number, label: string) => {
    for (const { name, report } of reports) {
      const reused = await runReport(runner(t.svc.services), project(), report, {}, now);
      const whole = await runReport(runner(plain), project(), report, {}, now);
      const { cached_at: _c, ...r } = reused as any;
      assert.deepEqual(r, whole, `${label}: ${name}`);
    }
  };
  const write = (rows: RefEvent[]) => t.svc.deps.events.writeEvents(pid, rows.map((e, i) => ({
    project_id: pid, id: 950_000 + ++seq * 10 + i, event: e.event, distinct_id: e.distinct_id, time: e.time, insert_id: e.insert_id,
    prop_keys: Object.keys(e.props), prop_values: Object.values(e.props), prop_types: Object.keys(e.props).map(() => 's').join(''), received_at: Date.now(),
  })));
  const sumOf = (res: any) => res.result.series.reduce((s: number, x: any) => s + x.data.reduce((a: number, d: any) => a + d.value, 0), 0);

  before(async function () {
    this.timeout(90_000);
    t = await startTestService(backend, { RESULTS_CACHE_FRESH_MS: '0' });
    tenant = await createTenant(t, 'partials');
    pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, { events: events(), links: [{ distinct_id: 'anon', canonical_id: 'u1', from_time: 0 }] }, 'links only');
    plain = createServices({ ...t.svc.deps, config: { ...t.svc.deps.config, resultsCache: { ...t.svc.deps.config.resultsCache, maxBytes: 0 } } });
    const member = t.client(tenant.tokens.member);
    const def = await member.post('/api/definitions/metrics', {
      projectId: pid, name: 'views per signup', metrics: [{ id: 'A', event: 'view', type: 'total' }, { id: 'B', event: 'signup', type: 'unique' }], formula: 'A / B',
    });
    assert.equal(def.status, 201, def.text);
    const v0 = { from: FROM, to: TO };
    const list: Array<[string, string, Record<string, unknown>]> = [
      ['views per day', 'segmentation', { event: 'view', unit: 'day', type: 'total', ...v0 }],
      ['people by country per day', 'segmentation', { event: 'view', unit: 'day', type: 'unique', breakdown: 'country', ...v0 }],
      ['buys per week where country = fr', 'segmentation', { event: 'buy', unit: 'week', type: 'total', filters: [{ key: 'country', op: 'eq', value: 'fr' }], ...v0 }],
      ['all events per month by country', 'segmentation', { event: '$all_events', unit: 'month', type: 'total', breakdown: 'country', ...v0 }],
      ['views per signup per day', 'metric', { definitionId: def.body.id, unit: 'day', ...v0 }],
      ['IR counts, calculated and formula', 'segmentation', irQuery({
        metrics: [metric('A', 'view', 'count'), metric('B', 'signup', 'count'), { id: 'C', kind: 'calculated', definitionId: def.body.id }],
        analysis: { kind: 'trend', unit: 'day', formula: 'A / B' },
      })],
      ['IR count per week', 'segmentation', irQuery({ metrics: [metric('A', 'buy', 'count')], analysis: { kind: 'trend', unit: 'week' } })],
      // Not cut (their totals span the range): computed whole, the same answers all the same.
      ['IR uniques', 'segmentation', irQuery({ metrics: [metric('A', 'view', 'unique')], analysis: { kind: 'trend', unit: 'day' } })],
      ['IR count by country', 'segmentation', irQuery({ metrics: [metric('A', 'view', 'count')], breakdown: { property: 'country' }, analysis: { kind: 'trend', unit: 'day' } })],
      ['funnel', 'funnel', { steps: ['view', 'buy'], windowDays: 3, ...v0 }],
      ['retention', 'retention', { bornEvent: 'view', returnEvent: 'buy', unit: 'day', buckets: 3, ...v0 }],
    ];
    for (const [name, type, query] of list) {
      const r = await member.post('/api/reports', { projectId: pid, name, type, query });
      assert.equal(r.status, 201, `${name}: ${r.text}`);
      reports.push({ name, report: r.body as SavedReport });
    }
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('RESULTS_CACHE_PARTIALS=0 turns the reuse off; buckets are cut to the range and closed only before today', () => {
    assert.equal(loadConfig({}).resultsCache.partials, true);
    assert.equal(loadConfig({ RESULTS_CACHE_PARTIALS: '0' }).resultsCache.partials, false);
    const weeks = slicesOf('week', { fromMs: D - 12 * DAY, toEndMs: D + 2 * DAY }, D);
    assert.deepEqual(weeks.map((s) => [iso(s.fromMs), iso(s.toEndMs), s.closed]), [
      ['2024-02-27', '2024-03-04', true], ['2024-03-04', '2024-03-11', false], ['2024-03-11', '2024-03-12', false],
    ]);
    assert.deepEqual(runsOf(weeks, [true, false, true]).length, 2);
    assert.deepEqual(runsOf(weeks, [false, true, true]).map((r) => [iso(r.fromMs), iso(r.toEndMs)]), [['2024-03-04', '2024-03-12']]);
  });

  it('answers as without reuse: before and after midnight, after an import into the past, a privacy deletion and an identity fold', async function () {
    this.timeout(240_000);
    // The evening of D: D is today, the days before are closed and stored.
    const evening = D + 23 * H + 30 * 60_000;
    await compareAll(evening, 'first run');
    const reusedBefore = cache().partialsReused;
    await compareAll(evening, 'second run');
    // Writes across midnight: 23:50 on D and 00:10 on D+1; the next run is after midnight.
    await write([ev('view', 'u2', D + 23 * H + 50 * 60_000, { country: 'fr' }), ev('view', 'u9', D + DAY + 10 * 60_000, { country: 'de' }), ev('signup', 'u9', D + DAY + 11 * 60_000)]);
    const night = D + DAY + 30 * 60_000;
    await compareAll(night, 'after midnight');
    assert.ok(cache().partialsReused > reusedBefore, 'closed buckets were served from their parts');
    // An import of old events into a closed day: that day is computed again.
    const views = reports[0].report;
    const beforeImport = sumOf(await runReport(runner(t.svc.services), project(), views, {}, night));
    await write([ev('view', 'u7', D - 8 * DAY + 5 * H, { country: 'fr' }), ev('buy', 'u7', D - 8 * DAY + 6 * H, { country: 'fr' }), ev('signup', 'u7', D - 8 * DAY + 7 * H)]);
    assert.equal(sumOf(await runReport(runner(t.svc.services), project(), views, {}, night)), beforeImport + 1, 'the imported view counts');
    await compareAll(night, 'after an import into the past');
    // A privacy deletion of a person with events on closed days.
    await t.svc.deps.events.deleteIdentities(pid, ['u3']);
    await compareAll(night, 'after a privacy deletion');
    // The identity fold: `anon` becomes u1 in the stored rows.
    await t.svc.deps.events.foldLinks(1_000, Date.now());
    await compareAll(night, 'after an identity fold');
  });

  it('after only today\'s data changed, a run computes only today\'s bucket', async function () {
    this.timeout(60_000);
    const now = D + DAY + 2 * H;
    const views = reports[0].report;
    const weekly = reports[6].report;
    // Refreshed: every bucket computed and the closed ones stored, whatever the whole answers cached.
    await runReport(runner(t.svc.services), project(), views, {}, now, { refresh: true });
    await runReport(runner(t.svc.services), project(), weekly, {}, now, { refresh: true });
    await write([ev('view', 'u8', D + DAY + H, { country: 'de' }), ev('buy', 'u8', D + DAY + H + 1, { country: 'de' })]);
    const today = D + DAY;
    for (const [report, from] of [[views, today], [weekly, Date.UTC(2024, 2, 11)]] as const) {
      const { out, sql } = await counted(() => runReport(runner(t.svc.services), project(), report, {}, now));
      assert.equal(out.cached_at, undefined, 'computed, not the whole answer cached');
      assert.ok(sql.length >= 1, 'the open bucket was computed');
      for (const s of sql) {
        assert.match(s, new RegExp(`time >= ${from}\\b`), `reads from today's bucket only: ${s.slice(0, 400)}`);
        assert.ok(!s.includes(`time >= ${D - 12 * DAY}`), 'not from the range\'s first day');
      }
      const { cached_at: _c, ...r } = out as any;
      assert.deepEqual(r, await runReport(runner(plain), project(), report, {}, now));
    }
  });
});
