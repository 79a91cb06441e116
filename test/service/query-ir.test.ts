import assert from 'node:assert/strict';
import fc from 'fast-check';
import fs from 'node:fs';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';
import { loadDataset, T0, DAY } from '../support/reference/harness.js';
import type { RefEvent } from '../support/reference/index.js';
import { PAGE_SMALLEST_MAX } from '../../apps/server/src/query/kinds/trend/sql.js';

const H = 3_600_000;
const MIN = 60_000;
let seq = 0;
const ev = (event: string, distinct_id: string, time: number, props: Record<string, string> = {}): RefEvent => ({ event, distinct_id, time, insert_id: `ir${++seq}`, props });

/** Events of 2024-01-01..14 (T0 is Monday 2024-01-01); amounts are numbers, one is not. */
const EVENTS: RefEvent[] = [
  ev('view', 'anon1', T0 + 10 * H, { country: 'fr' }),
  ev('signup', 'u1', T0 + 10 * H + 5 * MIN, { plan: 'pro' }),
  ev('buy', 'u1', T0 + 2 * DAY + 10 * H, { amount: '5', country: 'fr' }),
  ev('buy', 'u1', T0 + 2 * DAY + 11 * H, { amount: '7.5', country: 'fr' }),
  ev('view', 'u2', T0 + 12 * H, { country: 'de' }),
  ev('signup', 'u2', T0 + DAY + 12 * H, { plan: 'free' }),
  ev('buy', 'u2', T0 + 2 * DAY + 12 * H + 1, { amount: '20', country: 'de' }),
  ev('buy', 'u2', T0 + 3 * DAY, { amount: 'n/a', country: 'de' }),
  ev('view', 'u3', T0 + 7 * DAY - 1),
  ev('view', 'old', T0 + 3 * DAY),
  ev('view', 'old', T0 + 8 * DAY),
  ev('view', 'u4', T0 + 9 * DAY, { country: 'fr' }),
  ev('buy', 'u4', T0 + 9 * DAY + H, { amount: '1', country: 'fr' }),
];
const LINKS = [
  { distinct_id: 'anon1', canonical_id: 'u1', from_time: 0 },
  { distinct_id: 'old', canonical_id: 'u2', from_time: T0 + 5 * DAY },
];

export const absolute = (from: string, to: string) => ({ kind: 'absolute', from, to });
const metric = (id: string, event: string, op: string, extra: Record<string, unknown> = {}) => ({
  id, kind: 'event', event, aggregation: op === 'count' || op === 'unique' ? { op } : { op, property: 'amount' }, ...extra,
});

forEachBackend('query IR: POST /api/query and drilldown', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let projectId: number;
  const post = (path: string, body: Record<string, unknown>, token = tenant.tokens.viewer) => t.client(token).post(path, { projectId, ...body });
  const run = async (query: unknown) => {
    const r = await post('/api/query', { query });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  const drill = async (query: unknown, selection: unknown, page?: unknown) => {
    const r = await post('/api/query/drilldown', { query, selection, ...(page ? { page } : {}) });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };

  before(async function () {
    this.timeout(60_000);
    t = await sharedService(backend);
    tenant = await createTenant(t, 'ir');
    projectId = tenant.project.id;
    await loadDataset(t.svc.deps, projectId, { events: EVENTS, links: LINKS });
  });

  it('trend: count and unique agree with /api/query/segmentation (breakdown, filters, units)', async () => {
    for (const v0 of [
      { event: 'view', from: '2024-01-01', to: '2024-01-21', unit: 'week', type: 'unique' },
      { event: 'view', from: '2024-01-01', to: '2024-01-10', unit: 'day', type: 'total', breakdown: 'country' },
      { event: '$all_events', from: '2024-01-01', to: '2024-01-14', unit: 'day', type: 'unique', breakdown: 'country', filters: [{ key: 'country', op: 'neq', value: 'de' }] },
      { event: 'buy', from: '2024-01-01', to: '2024-01-03', unit: 'hour', type: 'total' },
    ]) {
      const old = await post('/api/query/segmentation', v0);
      assert.equal(old.status, 200, old.text);
      const ir = await run(v0); // a v0 body upgrades too
      const direct = await run({
        v: 2, dateRange: absolute(v0.from, v0.to), ...(v0.filters ? { filters: v0.filters } : {}),
        metrics: [metric('A', v0.event, v0.type === 'total' ? 'count' : 'unique')],
        ...(v0.breakdown ? { breakdown: { property: v0.breakdown } } : {}), analysis: { kind: 'trend', unit: v0.unit },
      });
      assert.deepEqual(ir, direct);
      assert.deepEqual(ir.buckets, old.body.buckets);
      assert.deepEqual(
        ir.series.map((s: any) => [s.segment === undefined ? v0.event : s.segment ?? '(none)', s.data]),
        old.body.series.map((s: any) => [s.name, s.data.map((d: any) => d.value)]),
      );
      for (const s of ir.series) {
        if (v0.type === 'total') assert.equal(s.total, s.data.reduce((a: number, b: number) => a + b, 0));
      }
    }
  });

  it('trend: per-metric filters, property aggregations, formula over letters', async () => {
    const r = await run({
      v: 2, dateRange: absolute('2024-01-01', '2024-01-14'),
      metrics: [
        metric('A', 'buy', 'sum'), metric('B', 'buy', 'avg'), metric('C', 'buy', 'p50'), metric('D', 'buy', 'p90'),
        metric('E', 'buy', 'max'), metric('F', 'buy', 'min'), metric('G', 'buy', 'count', { filters: [{ key: 'country', op: 'eq', value: 'fr' }] }),
        metric('H', 'buy', 'unique'),
      ],
      analysis: { kind: 'trend', unit: 'week', formula: 'A / H' },
    });
    const byId = Object.fromEntries(r.series.map((s: any) => [s.metricId, s]));
    // Week 1 amounts: 5, 7.5, 20 ('n/a' is skipped); week 2: 1.
    assert.deepEqual(byId.A.data, [32.5, 1]);
    assert.equal(byId.A.total, 33.5);
    assert.deepEqual(byId.B.data, [32.5 / 3, 1]);
    assert.equal(byId.B.total, 33.5 / 4);
    assert.deepEqual(byId.C.data, [7.5, 1]); // nearest rank: ceil(0.5 * 3) = 2nd of [5, 7.5, 20]
    assert.equal(byId.C.total, 5); // 2nd of [1, 5, 7.5, 20]
    assert.deepEqual(byId.D.data, [20, 1]);
    assert.deepEqual([byId.E.total, byId.F.total], [20, 1]);
    assert.deepEqual(byId.G.data, [2, 1]); // fr buys only
    assert.deepEqual(byId.H.data, [2, 1]);
    assert.equal(byId.H.total, 3);
    assert.deepEqual(byId.formula.data, [32.5 / 2, 1]);
    assert.equal(byId.formula.total, 33.5 / 3);
  });

  it('trend: comparison range, dropped identities, and their drilldowns', async () => {
    const query = {
      v: 2, dateRange: absolute('2024-01-08', '2024-01-14'), metrics: [metric('A', 'view', 'unique')],
      analysis: { kind: 'trend', unit: 'day', compare: { kind: 'previous_period' } },
    };
    const r = await run(query);
    assert.deepEqual(r.comparison.buckets[0], '2024-01-01');
    const [primary, cmp] = r.series;
    assert.equal(primary.range, 'primary');
    assert.equal(cmp.range, 'comparison');
    assert.deepEqual(cmp.data, [2, 0, 0, 1, 0, 0, 1]); // u1+u2, old (own identity before its link), u3
    assert.equal(primary.total, 2); // u2 (old after its link), u4
    assert.equal(cmp.total, 4);
    assert.equal(primary.dropped, 3); // u1, old, u3 viewed before, not after
    const dropped = await drill(query, { kind: 'trend_dropped', metricId: 'A' });
    assert.deepEqual(dropped, { total: 3, limit: 50, offset: 0, users: [{ distinctId: 'old' }, { distinctId: 'u1' }, { distinctId: 'u3' }] });
    const c = await drill(query, { kind: 'trend', metricId: 'A', bucket: 'total', range: 'comparison' });
    assert.equal(c.total, cmp.total);
    const b3 = await drill(query, { kind: 'trend', metricId: 'A', bucket: 3, range: 'comparison' });
    assert.deepEqual(b3.users, [{ distinctId: 'old' }]);
  });

  it('drilldown: every bucket, segment and total equals its figure; pages are stable', async () => {
    const query = {
      v: 2, dateRange: absolute('2024-01-01', '2024-01-14'), metrics: [metric('A', '$all_events', 'unique'), metric('B', 'buy', 'sum')],
      breakdown: { property: 'country' }, analysis: { kind: 'trend', unit: 'week' },
    };
    const r = await run(query);
    let checked = 0;
    for (const s of r.series.filter((x: any) => x.metricId === 'A')) {
      for (const bucket of [...s.data.keys(), 'total'] as Array<number | 'total'>) {
        const d = await drill(query, { kind: 'trend', metricId: 'A', bucket, segment: s.segment });
        assert.equal(d.total, bucket === 'total' ? s.total : s.data[bucket], `${s.segment} ${bucket}`);
        assert.equal(d.users.length, d.total);
        checked++;
      }
    }
    assert.ok(checked >= 6);
    const all = await drill({ ...query, breakdown: undefined }, { kind: 'trend', metricId: 'A', bucket: 'total' });
    const p1 = await drill({ ...query, breakdown: undefined }, { kind: 'trend', metricId: 'A', bucket: 'total' }, { limit: 2, offset: 0 });
    const p2 = await drill({ ...query, breakdown: undefined }, { kind: 'trend', metricId: 'A', bucket: 'total' }, { limit: 2, offset: 2 });
    assert.deepEqual([...p1.users, ...p2.users], all.users.slice(0, 4));
    // a page ending past PAGE_SMALLEST_MAX comes from sorting the whole set: its total, no id past its end
    const deep = await drill({ ...query, breakdown: undefined }, { kind: 'trend', metricId: 'A', bucket: 'total' }, { limit: 2, offset: PAGE_SMALLEST_MAX });
    assert.deepEqual(deep, { ...all, limit: 2, offset: PAGE_SMALLEST_MAX, users: [] });
    assert.deepEqual(all.users.map((u: any) => u.distinctId), [...all.users.map((u: any) => u.distinctId)].sort());
    assert.equal(p1.total, all.total);
  });

  it('funnel: agrees with /api/query/funnel; per-step filters; drilldown reached/dropped equal the counts', async () => {
    const v0 = { steps: ['view', 'signup', 'buy'], from: '2024-01-01', to: '2024-01-14', windowDays: 2, breakdown: 'country' };
    const old = (await post('/api/query/funnel', v0)).body;
    const query = {
      v: 2, dateRange: absolute(v0.from, v0.to), metrics: v0.steps.map((e, i) => metric('ABC'[i], e, 'unique')),
      breakdown: { property: 'country' }, analysis: { kind: 'funnel', steps: ['A', 'B', 'C'], window: { value: 2, unit: 'day' } },
    };
    const r = await run(query);
    assert.deepEqual(r.steps.map((s: any) => [s.count, s.conversionFromPrevious, s.conversionFromStart, s.droppedCount, s.dropoffRate, s.meanSecondsToConvert, s.medianSecondsToConvert]),
      old.map((s: any) => [s.count, s.conversionFromPrevious, s.conversionFromStart, s.droppedCount, s.dropoffRate, s.meanSecondsToConvert, s.medianSecondsToConvert]));
    assert.deepEqual(r.steps.map((s: any) => s.segments.map((g: any) => [g.segment ?? '(none)', g.count])), old.map((s: any) => s.segments.map((g: any) => [g.name, g.count])));
    assert.deepEqual(await run(v0), r);
    for (let k = 0; k < 3; k++) {
      const step = r.steps[k];
      const reached = await drill(query, { kind: 'funnel', step: k, mode: 'reached', segment: null }, { limit: 500 });
      assert.equal(reached.total, step.segments.find((g: any) => g.segment === null)?.count ?? 0);
      const noSeg = { ...query, breakdown: undefined };
      const all = await drill(noSeg, { kind: 'funnel', step: k, mode: 'reached' });
      assert.equal(all.total, step.count);
      assert.deepEqual(all.users.map((u: any) => u.distinctId), old[k].convertedUserIds);
      const dropped = await drill(noSeg, { kind: 'funnel', step: k, mode: 'dropped' });
      assert.equal(dropped.total, step.droppedCount);
      assert.deepEqual(dropped.users.map((u: any) => u.distinctId), old[k].droppedUserIds);
    }
    // A step's own filters: only pro signups count.
    const pro = await run({ ...query, breakdown: undefined, metrics: [query.metrics[0], metric('B', 'signup', 'unique', { filters: [{ key: 'plan', op: 'eq', value: 'pro' }] }), query.metrics[2]] });
    assert.deepEqual(pro.steps.map((s: any) => s.count), [5, 1, 1]);
    // Weeks: 1 week covers u2's buy 2 days + 1 ms after its view.
    const wide = await run({ ...query, breakdown: undefined, analysis: { kind: 'funnel', steps: ['A', 'B', 'C'], window: { value: 1, unit: 'week' } } });
    assert.equal(wide.steps[2].count, 2);
    assert.equal(wide.windowDays, 7);
  });

  it('errors: invalid query with dotted paths and codes, plain invalid date range, too large, 501, unknown v', async () => {
    const bad = async (body: Record<string, unknown>, path = '/api/query') => {
      const r = await post(path, body);
      assert.equal(r.status, 400, r.text);
      return r.body;
    };
    const base = { v: 2, dateRange: absolute('2024-01-01', '2024-01-07'), metrics: [metric('A', 'view', 'count')], analysis: { kind: 'trend', unit: 'day' } };
    const e = await bad({ query: { ...base, metrics: [metric('A', 'view', 'count'), { ...metric('B', 'buy', 'sum'), aggregation: { op: 'median' } }], extra: true } });
    assert.equal(e.error, 'invalid query');
    assert.deepEqual(e.errors.map((x: any) => x.path).sort(), ['extra', 'metrics.1.aggregation.op']);
    const ref = await bad({ query: { ...base, analysis: { kind: 'trend', unit: 'day', formula: 'A / B' } } });
    assert.deepEqual(ref.errors, [{ path: 'analysis.formula', message: 'formula letter B is not a metric id', code: 'unknown_reference' }]);
    const v9 = await bad({ query: { ...base, v: 9 } });
    assert.deepEqual(v9.errors.map((x: any) => [x.path, x.code]), [['v', 'unsupported_version']]);
    assert.deepEqual(await bad({ query: { ...base, dateRange: absolute('2024-01-07', '2024-01-01') } }), { error: 'invalid query'.replace('query', 'date range') });
    assert.deepEqual((await bad({})).errors.map((x: any) => x.path), ['query']);
    const large = await bad({ query: { ...base, dateRange: absolute('2024-01-01', '2025-12-31'), analysis: { kind: 'trend', unit: 'hour' } } });
    assert.match(large.error, /^query too large: 1 series × 17544 buckets exceeds 10000/);
    const r501 = await post('/api/query', { query: { ...base, metrics: [metric('A', 'view', 'unique'), metric('B', 'buy', 'unique')], analysis: { kind: 'retention', born: 'A', returning: 'B' } } });
    assert.equal(r501.status, 501);
    assert.equal((await post('/api/query', { query: { from: '2024-01-01', to: '2024-01-02', event: 'view', direction: 'after' } })).status, 501);
    // Drilldown: selection paths and resolve-time codes.
    const funnel = { ...base, metrics: [metric('A', 'view', 'unique'), metric('B', 'buy', 'unique')], analysis: { kind: 'funnel', steps: ['A', 'B'] } };
    const codes = async (query: unknown, selection: unknown, page?: unknown) => (await bad({ query, selection, ...(page ? { page } : {}) }, '/api/query/drilldown')).errors.map((x: any) => [x.path, x.code]);
    assert.deepEqual(await codes(funnel, { kind: 'funnel', step: 2, mode: 'reached' }), [['selection.step', 'out_of_range']]);
    assert.deepEqual(await codes(base, { kind: 'trend', metricId: 'Z', bucket: 0 }), [['selection.metricId', 'unknown_reference']]);
    assert.deepEqual(await codes(base, { kind: 'trend', metricId: 'A', bucket: 7 }), [['selection.bucket', 'out_of_range']]);
    assert.deepEqual(await codes(base, { kind: 'trend_dropped', metricId: 'A' }), [['selection.range', 'no_comparison']]);
    assert.deepEqual(await codes(base, { kind: 'trend', metricId: 'A', bucket: 0, segment: 'fr' }), [['selection.segment', 'illegal_position']]);
    assert.deepEqual(await codes(base, { kind: 'funnel', step: 0, mode: 'reached' }), [['selection.kind', 'illegal_position']]);
    assert.deepEqual(await codes(base, { kind: 'trend', metricId: 'A', bucket: 0 }, { limit: 501 }), [['page.limit', undefined]]);
  });

  it('v1 documents run, with their repairs as warnings', async () => {
    const r = await run({ v: 1, dateRange: { from: '2024-01-01', to: '2024-01-07' }, metrics: [{ event: 'buy', math: 'sum' }], analysis: { kind: 'trend', unit: 'day', chart: 'pie' } });
    assert.equal(r.warnings.length, 2);
    assert.equal(r.series[0].total, 4); // math sum without property → count of buys
  });

  it('a v1 document using the members every IR document has runs as its v2 twin (query and drilldown)', async () => {
    const v2 = { v: 2, dateRange: absolute('2024-01-01', '2024-01-07'), metrics: [metric('A', 'buy', 'unique'), metric('B', 'buy', 'sum')], analysis: { kind: 'trend', unit: 'day' } };
    const v1 = { ...v2, v: 1, stray: true };
    const [a, b] = [await run(v2), await run(v1)];
    assert.deepEqual(b.warnings, ['stray: not a member of a query document; dropped']);
    const { warnings: _w, ...same } = b;
    assert.deepEqual(same, a);
    assert.equal(a.series[0].total, 2);
    const selection = { kind: 'trend', metricId: 'A', bucket: 'total' };
    assert.deepEqual(await drill(v1, selection), await drill(v2, selection));
    const funnel = { v: 1, dateRange: absolute('2024-01-01', '2024-01-07'), metrics: [metric('A', 'view', 'unique'), metric('B', 'buy', 'unique')], analysis: { kind: 'funnel', steps: ['A', 'B'], window: { value: 1, unit: 'week' } } };
    const fr = await run(funnel);
    assert.equal(fr.windowDays, 7);
    assert.deepEqual(fr.warnings, undefined);
  });

  it('retention and flows analyses answer 501 whatever the rest of the document holds', async () => {
    const bodies = [
      { v: 2, dateRange: absolute('2024-01-01', '2024-01-07'), metrics: [metric('A', 'view', 'unique')], analysis: { kind: 'retention' } },
      { v: 2, analysis: { kind: 'flows', anchor: 'Q', bogus: 1 } },
      { v: 1, dateRange: '7d', metrics: [{ event: 'view' }], analysis: { kind: 'flows' } },
      { v: 7, analysis: { kind: 'retention' } },
    ];
    for (const query of bodies) {
      const r = await post('/api/query', { query });
      assert.equal(r.status, 501, `${JSON.stringify(query)} -> ${r.status} ${r.text}`);
      const d = await post('/api/query/drilldown', { query, selection: { kind: 'trend', metricId: 'A', bucket: 0 } });
      assert.equal(d.status, 501, d.text);
    }
    // Still authorised first: another organisation's project is 403, no credential 401.
    const other = await createTenant(t, 'ir-501');
    assert.equal((await t.client(other.tokens.owner).post('/api/query', { projectId, query: bodies[0] })).status, 403);
    assert.equal((await t.anon.post('/api/query', { projectId, query: bodies[0] })).status, 401);
    // A kind the IR does not know is still a 400 naming it.
    const bad = await post('/api/query', { query: { ...bodies[0], analysis: { kind: 'pie' } } });
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors.map((e: any) => e.path), ['analysis.kind']);
  });

  it('the examples of docs/query-ir.md run', async () => {
    const doc = fs.readFileSync(new URL('../../docs/query-ir.md', import.meta.url), 'utf8');
    const examples = [...doc.matchAll(/<!-- example -->\n```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]));
    assert.ok(examples.length >= 5);
    for (const body of examples) {
      const r = await post('/api/query', body);
      assert.equal(r.status, 200, `${JSON.stringify(body)} -> ${r.text}`);
      assert.ok(r.body.kind === 'trend' ? r.body.series.length > 0 : r.body.steps.length >= 2);
      assert.equal(r.body.warnings !== undefined, body.query.v === 1);
    }
    const oa = await t.anon.get('/openapi.json');
    const schemas = oa.body.components.schemas;
    for (const name of ['QueryV2', 'IrMetric', 'IrAggregation', 'IrTrendAnalysis', 'IrFunnelAnalysis', 'IrResult', 'DrilldownSelection', 'DrilldownPage']) assert.ok(schemas[name], name);
    assert.equal(oa.body.paths['/api/query'].post.requestBody.content['application/json'].schema.$ref, '#/components/schemas/IrQueryRequest');
    assert.ok(oa.body.paths['/api/query/drilldown'].post);
  });

  it('auth: viewer queries; another organisation gets 403 and no data; no credential is 401', async () => {
    const query = { v: 2, dateRange: absolute('2024-01-01', '2024-01-07'), metrics: [metric('A', 'view', 'unique')], analysis: { kind: 'trend', unit: 'day' } };
    const selection = { kind: 'trend', metricId: 'A', bucket: 'total' };
    const other = await createTenant(t, 'ir-other');
    for (const [path, body] of [['/api/query', { query }], ['/api/query/drilldown', { query, selection }]] as const) {
      assert.equal((await post(path, body, tenant.tokens.viewer)).status, 200);
      const foreign = await t.client(other.tokens.owner).post(path, { projectId, ...body });
      assert.equal(foreign.status, 403);
      assert.equal(foreign.body.series, undefined);
      assert.equal(foreign.body.users, undefined);
      assert.equal((await t.anon.post(path, { projectId, ...body })).status, 401);
      // Their own default project: empty.
      const own = await t.client(other.tokens.viewer).post(path, body);
      assert.equal(own.status, 200, own.text);
      assert.equal(path === '/api/query' ? own.body.series[0].total : own.body.total, 0);
    }
  });

  it('random mutations of valid documents never answer 5xx', async function () {
    this.timeout(120_000);
    const valid = [
      { v: 2, dateRange: absolute('2024-01-01', '2024-01-07'), filters: [{ key: 'country', op: 'set' }], metrics: [metric('A', 'view', 'unique'), metric('B', 'buy', 'p90')], breakdown: { property: 'country' }, analysis: { kind: 'trend', unit: 'day', formula: 'A * B', compare: { kind: 'offset', days: 7 } } },
      { v: 2, dateRange: { kind: 'preset', preset: '7d' }, metrics: [metric('A', 'view', 'count'), metric('B', 'buy', 'count')], analysis: { kind: 'funnel', steps: ['A', 'B'], window: { value: 3, unit: 'day' } } },
      { v: 1, dateRange: '30d', metrics: [{ event: 'view' }, { event: 'buy', math: 'avg', property: 'amount' }], analysis: { kind: 'funnel', steps: [0, 1] } },
      { steps: ['view', 'buy'], from: '2024-01-01', to: '2024-01-09' },
    ];
    const junk = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(-1, 0, 2, 3, 1e300, 'A', 'Z', '', '\u0000', null, [], {}, 'total', 'week', 'unique', 'sum', 'previous_period'));
    const mutate = (doc: any, path: string[], value: unknown, drop: boolean) => {
      const copy = structuredClone(doc);
      let node = copy;
      for (const key of path.slice(0, -1)) { if (node?.[key] === undefined || typeof node[key] !== 'object') return copy; node = node[key]; }
      if (node && typeof node === 'object') { if (drop) delete node[path[path.length - 1]]; else node[path[path.length - 1]] = value; }
      return copy;
    };
    const pathArb = fc.array(fc.constantFrom('v', 'dateRange', 'kind', 'from', 'to', 'preset', 'metrics', '0', '1', 'aggregation', 'op', 'property', 'event', 'filters', 'breakdown', 'limit', 'analysis', 'unit', 'formula', 'compare', 'days', 'steps', 'window', 'value', 'id', 'math'), { minLength: 1, maxLength: 4 });
    const selArb = fc.record({ kind: fc.constantFrom('trend', 'trend_dropped', 'funnel'), metricId: fc.constantFrom('A', 'B', 'Z'), bucket: fc.oneof(fc.constant('total'), fc.integer({ min: -1, max: 9 })), step: fc.integer({ min: -1, max: 3 }), mode: fc.constantFrom('reached', 'dropped'), range: fc.constantFrom('primary', 'comparison'), segment: fc.constantFrom(undefined, null, 'fr') }, { requiredKeys: ['kind'] });
    await fc.assert(fc.asyncProperty(fc.constantFrom(...valid), pathArb, junk, fc.boolean(), selArb, async (doc, path, value, drop, selection) => {
      const query = mutate(doc, path, value, drop);
      const r = await post('/api/query', { query });
      assert.ok(r.status < 500 || r.status === 501, `${r.status} ${r.text} for ${JSON.stringify(query)}`);
      const d = await post('/api/query/drilldown', { query, selection });
      assert.ok(d.status < 500 || d.status === 501, `${d.status} ${d.text} for ${JSON.stringify({ query, selection })}`);
    }), { numRuns: Number(process.env.QUERY_IR_FUZZ_RUNS ?? 60) });
  });
});
