import assert from 'node:assert/strict';
import fc from 'fast-check';
import { forEachBackend } from '../support/backends.js';
import type { TestService } from '../support/service.js';
import { datasetService } from '../support/dataset-service.js';
import type { IrFunnelResult, TrendResult } from '../../apps/server/src/query/ir/results.js';
import * as ref from '../support/reference/index.js';
import { DAY, T0, datasetArb, eventNameArb, filterArb } from '../support/reference/harness.js';

/**
 * Generated datasets (ties, duplicates, links with and without from_time, derived events): the IR
 * gives the reference evaluator's answer — the same one the v0 endpoints give (query.generated.test.ts)
 * — with per-metric filters expressed to the reference as derived events, and every drilldown's
 * total equals the figure it drills into. On every configured backend.
 */
const RUNS = Number(process.env.QUERY_PROPERTY_RUNS ?? 20);
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const rangeArb = fc.tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 0, max: 12 })).map(([a, len]) => ({ from: day(T0 + a * DAY), to: day(T0 + (a + len) * DAY) }));
const toRef = (r: { from: string; to: string }) => ({ fromMs: Date.parse(`${r.from}T00:00:00Z`), toEndMs: Date.parse(`${r.to}T00:00:00Z`) + DAY });
const metricArb = fc.record({ event: eventNameArb(true), filters: fc.array(filterArb, { maxLength: 2 }) });

/** The reference data with one derived event per metric: its event (or D's sources) AND its own filters. */
function withMetrics(data: ref.RefData, metrics: Array<{ event: string; filters: ref.RefFilter[] }>): ref.RefData {
  const derived = { ...(data.derived ?? {}) };
  metrics.forEach((m, i) => {
    const base = data.derived?.[m.event];
    derived[`M${i}`] = base ? base.map((s) => ({ event: s.event, filters: [...(s.filters ?? []), ...m.filters] })) : [{ event: m.event, filters: m.filters }];
  });
  return { ...data, derived };
}
/** Adds `n`: a number (or not) fixed by the event's dedup key, so duplicates stay identical. */
const AMOUNTS = ['-3', '0', '1', '2.5', '7', '10', '12.25', '40', '99', '1000', 'n/a', '1e3', ' 2', '', '3.'];
const withAmounts = datasetArb.map((data) => ({
  ...data,
  events: data.events.map((e) => {
    const k = [...`${e.event}|${e.time}|${e.distinct_id}|${e.insert_id}`].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
    return { ...e, props: { ...e.props, n: AMOUNTS[k % AMOUNTS.length] } };
  }),
}));
const ids = (page: { users: Array<{ distinctId: string }> }) => page.users.map((u) => u.distinctId);

forEachBackend('query IR: generated datasets agree with the reference', (backend) => {
  let t: TestService;
  // `p` is materialised (its own column), `q` read from the lists, `r` materialised and never set.
  const { projectWith, scope, doc } = datasetService(backend, { MATERIALIZED_PROPERTIES: 'p,r' }, (s) => { t = s; });
  const check = <Q>(queryArb: fc.Arbitrary<Q>, body: (projectId: number, data: ref.RefData, q: Q) => Promise<void>, dataArb = datasetArb) =>
    fc.assert(fc.asyncProperty(dataArb, queryArb, async (data, q) => body(await projectWith(data), data, q)), { numRuns: RUNS });

  it('trend: count/unique with per-metric and global filters and breakdown; drilldowns equal the figures', async function () {
    this.timeout(300_000);
    const qArb = fc.record({
      metric: metricArb, op: fc.constantFrom('count' as const, 'unique' as const), unit: fc.constantFrom('hour' as const, 'day' as const, 'week' as const, 'month' as const),
      breakdown: fc.option(fc.constantFrom('p', 'q'), { nil: undefined }), filters: fc.array(filterArb, { maxLength: 1 }), range: rangeArb, bucket: fc.nat(),
    });
    await check(qArb, async (projectId, data, q) => {
      const query = doc({
        v: 2, dateRange: { kind: 'absolute', ...q.range }, filters: q.filters, metrics: [{ id: 'A', kind: 'event', event: q.metric.event, filters: q.metric.filters, aggregation: { op: q.op } }],
        ...(q.breakdown ? { breakdown: { property: q.breakdown } } : {}), analysis: { kind: 'trend', unit: q.unit },
      });
      const ir = await t.svc.services.executor.ir(scope(projectId), query) as TrendResult;
      const rdata = withMetrics(data, [q.metric]);
      const expected = ref.segmentation(rdata, { event: 'M0', unit: q.unit, type: q.op === 'count' ? 'total' : 'unique', breakdown: q.breakdown, filters: q.filters }, toRef(q.range));
      assert.deepEqual(ir.buckets, expected.buckets);
      assert.deepEqual(ir.series.map((s) => [q.breakdown ? s.segment ?? '(none)' : 'M0', s.data]), expected.series.map((s) => [s.name, s.data.map((d) => d.value)]));
      if (q.op !== 'unique') return;
      for (const s of ir.series) {
        const segment = q.breakdown ? { segment: s.segment } : {};
        const b = q.bucket % ir.buckets.length;
        const page = await t.svc.services.executor.drilldown(scope(projectId), query, { kind: 'trend', metricId: 'A', bucket: b, range: 'primary', ...segment }, { limit: 500, offset: 0 });
        assert.equal(page.total, s.data[b]);
        const all = await t.svc.services.executor.drilldown(scope(projectId), query, { kind: 'trend', metricId: 'A', bucket: 'total', range: 'primary', ...segment }, { limit: 500, offset: 0 });
        assert.equal(all.total, s.total);
        assert.deepEqual(ids(all), [...ids(all)].sort());
      }
    });
  });

  it('trend: property aggregations and the dropped identities of a comparison range', async function () {
    this.timeout(300_000);
    const qArb = fc.record({
      metric: metricArb, op: fc.constantFrom('sum' as const, 'avg' as const, 'min' as const, 'max' as const, 'p50' as const, 'p90' as const),
      unit: fc.constantFrom('day' as const, 'week' as const), range: rangeArb, days: fc.integer({ min: 1, max: 6 }),
    });
    await check(qArb, async (projectId, data, q) => {
      const query = doc({
        v: 2, dateRange: { kind: 'absolute', ...q.range }, metrics: [{ id: 'A', kind: 'event', event: q.metric.event, filters: q.metric.filters, aggregation: { op: q.op, property: 'n' } }],
        analysis: { kind: 'trend', unit: q.unit, compare: { kind: 'offset', days: q.days } },
      });
      const ir = await t.svc.services.executor.ir(scope(projectId), query) as TrendResult;
      const rdata = withMetrics(data, [q.metric]);
      const r = toRef(q.range);
      const cmpR = { fromMs: r.fromMs - q.days * DAY, toEndMs: r.toEndMs - q.days * DAY };
      const matching = (rr: { fromMs: number; toEndMs: number }) => ref.dedup(data.events)
        .filter((e) => e.time >= rr.fromMs && e.time < rr.toEndMs && ref.matchEvent(rdata, 'M0', e) && /^-?[0-9]+([.][0-9]+)?$/.test(e.props.n ?? ''));
      const agg = (xs: number[]) => {
        const s = [...xs].sort((a, b) => a - b);
        const pct = (p: number) => s[Math.max(1, Math.ceil((p * s.length) / 100)) - 1];
        return { sum: s.reduce((a, b) => a + b, 0), avg: s.reduce((a, b) => a + b, 0) / s.length, min: s[0], max: s[s.length - 1], p50: pct(50), p90: pct(90) }[q.op];
      };
      const evs = matching(r);
      const [primary] = ir.series;
      const expectedData = ir.buckets.map((label) => {
        const xs = evs.filter((e) => ref.label(q.unit, ref.bucketStart(q.unit, e.time)) === label).map((e) => Number(e.props.n));
        return xs.length ? agg(xs) : 0;
      });
      primary.data.forEach((v, i) => assert.ok(Math.abs(v - expectedData[i]) < 1e-9, `${v} vs ${expectedData[i]}`));
      assert.ok(Math.abs((primary.total ?? NaN) - (evs.length ? agg(evs.map((e) => Number(e.props.n)))! : 0)) < 1e-9);
      // Dropped: identities with such events in the comparison range and none in the primary range.
      const cids = (list: ref.RefEvent[]) => new Set(list.map((e) => ref.cidOf(data, e)));
      const before = cids(matching(cmpR));
      const now = cids(evs);
      const dropped = [...before].filter((c) => !now.has(c)).sort();
      assert.equal(primary.dropped, dropped.length);
      const page = await t.svc.services.executor.drilldown(scope(projectId), query, { kind: 'trend_dropped', metricId: 'A' }, { limit: 500, offset: 0 });
      assert.deepEqual(ids(page), dropped);
    }, withAmounts);
  });

  it('funnel: per-step filters, window in days, breakdown; reached/dropped drilldowns equal the counts', async function () {
    this.timeout(300_000);
    const qArb = fc.record({
      steps: fc.array(metricArb, { minLength: 2, maxLength: 4 }), windowDays: fc.integer({ min: 1, max: 4 }),
      breakdown: fc.option(fc.constantFrom('p', 'q'), { nil: undefined }), filters: fc.array(filterArb, { maxLength: 1 }), range: rangeArb, step: fc.nat(),
    });
    await check(qArb, async (projectId, data, q) => {
      const letters = ['A', 'B', 'C', 'D'];
      const query = doc({
        v: 2, dateRange: { kind: 'absolute', ...q.range }, filters: q.filters,
        metrics: q.steps.map((m, i) => ({ id: letters[i], kind: 'event', event: m.event, filters: m.filters, aggregation: { op: 'unique' } })),
        ...(q.breakdown ? { breakdown: { property: q.breakdown } } : {}),
        analysis: { kind: 'funnel', steps: letters.slice(0, q.steps.length), window: { value: q.windowDays, unit: 'day' } },
      });
      const ir = await t.svc.services.executor.ir(scope(projectId), query) as IrFunnelResult;
      const expected = ref.funnel(withMetrics(data, q.steps), { steps: q.steps.map((_, i) => `M${i}`), windowDays: q.windowDays, breakdown: q.breakdown, filters: q.filters }, toRef(q.range));
      assert.deepEqual(ir.steps.map((s) => [s.count, s.droppedCount, s.meanSecondsToConvert, s.medianSecondsToConvert, s.segments.map((g) => [g.segment ?? '(none)', g.count])]),
        expected.map((s) => [s.count, s.droppedCount, s.meanSecondsToConvert, s.medianSecondsToConvert, s.segments.map((g) => [g.name, g.count])]));
      const k = q.step % q.steps.length;
      const segment = q.breakdown ? { segment: ir.steps[0].segments[0]?.segment ?? null } : {};
      const reached = await t.svc.services.executor.drilldown(scope(projectId), query, { kind: 'funnel', step: k, mode: 'reached', range: 'primary', ...segment }, { limit: 500, offset: 0 });
      const dropped = await t.svc.services.executor.drilldown(scope(projectId), query, { kind: 'funnel', step: k, mode: 'dropped', range: 'primary', ...segment }, { limit: 500, offset: 0 });
      if (q.breakdown) {
        const seg = (j: number) => ir.steps[j].segments.find((g) => g.segment === segment.segment)?.count ?? 0;
        assert.equal(reached.total, seg(k));
        assert.equal(dropped.total, k === 0 ? 0 : seg(k - 1) - seg(k));
      } else {
        assert.equal(reached.total, ir.steps[k].count);
        assert.deepEqual(ids(reached), expected[k].convertedUserIds);
        assert.equal(dropped.total, ir.steps[k].droppedCount);
        assert.deepEqual(ids(dropped), expected[k].droppedUserIds);
      }
    });
  });
});
