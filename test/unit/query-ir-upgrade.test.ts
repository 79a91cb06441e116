import assert from 'node:assert/strict';
import fc from 'fast-check';
import { upgradeQuery } from '../../apps/server/src/query/ir/upgrade.js';
import { QueryV2Schema } from '../../apps/server/src/query/ir/document.js';

/** The upgrader alone (pure): every version's valid documents upgrade; repairs are warnings. */
describe('query IR: versions and upgrader', () => {
  const range = { from: '2024-01-01', to: '2024-01-07' };
  const ok = (doc: unknown, type?: Parameters<typeof upgradeQuery>[1] extends infer O ? (O extends { type?: infer T } ? T : never) : never) => {
    const r = upgradeQuery(doc, type ? { type } : {});
    assert.ok(r.ok, JSON.stringify(r));
    assert.ok(QueryV2Schema.safeParse(r.query).success);
    return r;
  };
  const errs = (doc: unknown) => {
    const r = upgradeQuery(doc);
    assert.ok(!r.ok, `expected errors for ${JSON.stringify(doc)}`);
    return r.errors;
  };

  it('v0 bodies of every stable endpoint upgrade without warnings', () => {
    const seg = ok({ ...range, event: 'view', unit: 'week', type: 'unique', breakdown: 'country', filters: [{ key: 'k', op: 'set' }], projectId: '7' }, 'segmentation');
    assert.deepEqual(seg.query, {
      v: 2, dateRange: { kind: 'absolute', ...range }, filters: [{ key: 'k', op: 'set' }],
      metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } }],
      breakdown: { property: 'country', limit: 25 }, analysis: { kind: 'trend', unit: 'week', chart: 'line' },
    });
    assert.deepEqual(seg.warnings, []);
    const fun = ok({ ...range, steps: ['a', 'b', 'c'], windowDays: 3 });
    assert.deepEqual(fun.query.analysis, { kind: 'funnel', steps: ['A', 'B', 'C'], window: { value: 3, unit: 'day' }, order: 'ordered', chart: 'steps' });
    assert.deepEqual(fun.query.metrics.map((m) => m.kind === 'event' && m.event), ['a', 'b', 'c']);
    assert.equal(ok({ ...range, bornEvent: 'a', returnEvent: 'b' }, 'retention').query.analysis.kind, 'retention');
    assert.equal(ok({ ...range, event: 'a', direction: 'before' }, 'flows').query.analysis.kind, 'flows');
    assert.equal(ok({ ...range }, 'sessions').query.analysis.kind, 'sessions');
    const metric = ok({ ...range, definitionId: 4, unit: 'day' }, 'metric').query;
    assert.deepEqual(metric.metrics, [{ id: 'A', kind: 'calculated', definitionId: 4 }]);
    // Dates travel as sent: the range is checked (plain `invalid date range`) when it runs.
    assert.deepEqual(ok({ from: 20240101, to: '2024-01-01' }, 'sessions').query.dateRange, { kind: 'absolute', from: '20240101', to: '2024-01-01' });
  });

  it('invalid v0 bodies fail with the v0 paths', () => {
    const r = upgradeQuery({ ...range, steps: ['a'] }, { type: 'funnel' });
    assert.ok(!r.ok);
    assert.deepEqual(r.errors.map((e) => e.path), ['steps']);
  });

  it('v1 documents upgrade, repairing what v2 refuses, with one warning per repair', () => {
    const r = ok({
      v: 1, dateRange: '7d', breakdown: 'plan',
      metrics: [{ event: 'buy', math: 'sum' }, { event: 'buy', math: 'median', property: 'amount' }, { event: 'view', math: 'unique', property: 'x' }],
      analysis: { kind: 'trend', formula: 'A / Z', compare: true, chart: 'funnel', unit: 'week' },
    });
    assert.deepEqual(r.query, {
      v: 2, dateRange: { kind: 'preset', preset: '7d' }, breakdown: { property: 'plan', limit: 25 },
      metrics: [
        { id: 'A', kind: 'event', event: 'buy', aggregation: { op: 'count' } },
        { id: 'B', kind: 'event', event: 'buy', aggregation: { op: 'p50', property: 'amount' } },
        { id: 'C', kind: 'event', event: 'view', aggregation: { op: 'unique' } },
      ],
      analysis: { kind: 'trend', unit: 'week', chart: 'line', compare: { kind: 'previous_period' } },
    });
    assert.equal(r.warnings.length, 4, r.warnings.join('\n'));
    assert.ok(r.warnings.some((w) => w.startsWith('metrics.0')));
    assert.ok(r.warnings.some((w) => w.startsWith('analysis.formula')));
    assert.ok(r.warnings.some((w) => w.startsWith('analysis.chart')));
    const f = ok({ v: 1, dateRange: { ...range }, metrics: [{ event: 'a' }, { event: 'b' }], analysis: { kind: 'funnel', steps: [0, 1], windowDays: 0, formula: 'A' } });
    assert.deepEqual(f.query.analysis, { kind: 'funnel', steps: ['A', 'B'], window: { value: 366, unit: 'day' }, order: 'ordered', chart: 'steps' });
    assert.equal(f.warnings.length, 2);
  });

  it('v1 documents holding the members every IR document has are read as v2 reads them, without warnings', () => {
    const v1 = ok({
      v: 1, dateRange: { kind: 'preset', preset: '7d' }, breakdown: { property: 'plan', limit: 3 },
      metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } }, { kind: 'event', event: 'buy', aggregation: { op: 'sum', property: 'amount' } }, { kind: 'calculated', definitionId: 4 }],
      analysis: { kind: 'trend', unit: 'week', compare: { kind: 'offset', days: 7 } },
    });
    assert.deepEqual(v1.query, {
      v: 2, dateRange: { kind: 'preset', preset: '7d' }, breakdown: { property: 'plan', limit: 3 },
      metrics: [
        { id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } },
        { id: 'B', kind: 'event', event: 'buy', aggregation: { op: 'sum', property: 'amount' } },
        { id: 'C', kind: 'calculated', definitionId: 4 },
      ],
      analysis: { kind: 'trend', unit: 'week', chart: 'line', compare: { kind: 'offset', days: 7 } },
    });
    assert.deepEqual(v1.warnings, []);
    // The same document labelled v2 upgrades to the same query.
    const abs = ok({ v: 1, dateRange: { kind: 'absolute', ...range }, metrics: [{ kind: 'event', event: 'a', aggregation: { op: 'count' } }], analysis: { kind: 'trend' } });
    assert.deepEqual(abs.query.dateRange, { kind: 'absolute', ...range });
    assert.deepEqual(abs.warnings, []);
  });

  it('v1 leniency: v2 analysis members carried when valid in v2, everything else dropped with a warning, never refused', () => {
    const f = ok({
      v: 1, bogus: 1, dateRange: '7d',
      metrics: [{ event: 'view', color: 'red' }, { event: 'buy', math: 'sum', aggregation: { op: 'count' } }],
      analysis: { kind: 'funnel', windowDays: 3, window: { value: 2, unit: 'week' }, compare: { kind: 'offset', days: 7 }, order: 'ordered', zz: 1 },
    });
    assert.deepEqual(f.query.analysis, { kind: 'funnel', steps: ['A', 'B'], window: { value: 2, unit: 'week' }, order: 'ordered', chart: 'steps', compare: { kind: 'offset', days: 7 } });
    assert.deepEqual(f.query.metrics.map((m) => m.kind === 'event' && m.aggregation.op), ['count', 'count']);
    assert.deepEqual(f.warnings.map((w) => w.split(':')[0]).sort(), ['analysis.windowDays', 'analysis.zz', 'bogus', 'metrics.0.color', 'metrics.1.math']);
    // A carried letter that names no metric falls back to v1's reading (the first metric), with a warning.
    const r = ok({ v: 1, dateRange: '7d', metrics: [{ event: 'view' }, { event: 'buy' }], analysis: { kind: 'retention', born: 'C', returning: 'B', buckets: 3 } });
    assert.deepEqual(r.query.analysis, { kind: 'retention', born: 'A', returning: 'B', unit: 'week', buckets: 3 });
    assert.deepEqual(r.warnings, ['analysis.born: no metric with id C; dropped']);
    // Flows: v2's numeric steps takes the place of v1's depth; a limit out of v2's range is dropped.
    const fl = ok({ v: 1, dateRange: '7d', metrics: [{ event: 'view' }], analysis: { kind: 'flows', steps: 4, depth: 2, direction: 'before', limit: 1000 } });
    assert.deepEqual(fl.query.analysis, { kind: 'flows', anchor: 'A', direction: 'before', steps: 4, limit: 20 });
    assert.deepEqual(fl.warnings.map((w) => w.split(':')[0]), ['analysis.depth', 'analysis.limit']);
    // What v1 itself has is still checked: a bad math, a metric that is not an object.
    assert.deepEqual(errs({ v: 1, dateRange: '7d', metrics: [{ event: 'a', math: 'mode' }], analysis: { kind: 'trend' } }).map((e) => e.path), ['metrics.0.math']);
    assert.deepEqual(errs({ v: 1, dateRange: '7d', metrics: [{ event: 'a' }, 3], analysis: { kind: 'trend' } }).map((e) => e.path), ['metrics.1']);
    assert.deepEqual(errs({ v: 1, dateRange: '7d', metrics: [{ event: 'a' }], analysis: { kind: 'pie' } }).map((e) => e.path), ['analysis.kind']);
  });

  it('v2 documents pass unchanged; unknown versions name v', () => {
    const doc = { v: 2, dateRange: { kind: 'preset', preset: '30d' }, metrics: [{ id: 'A', kind: 'event', event: 'a', aggregation: { op: 'avg', property: 'n' } }], analysis: { kind: 'trend', unit: 'day', chart: 'bar', formula: 'A * 2' } };
    const r = ok(doc);
    assert.deepEqual(r.query, doc);
    assert.deepEqual(r.warnings, []);
    for (const v of [3, 0, '2', 1.5, null]) {
      const e = errs({ ...doc, v });
      assert.equal(e.length, 1);
      assert.equal(e[0].path, 'v');
      assert.equal(e[0].code, 'unsupported_version');
    }
  });

  it('one error per problem, dotted paths, codes on resolve-time errors', () => {
    const e = errs({
      v: 2, dateRange: { kind: 'absolute', ...range }, extra: 1,
      metrics: [{ id: 'A', kind: 'event', event: 'a', aggregation: { op: 'median' } }, { id: 'B', kind: 'event', event: 'b', aggregation: { op: 'sum' }, bogus: true }],
      analysis: { kind: 'trend', unit: 'day' },
    });
    assert.deepEqual(e.map((x) => x.path).sort(), ['extra', 'metrics.0.aggregation.op', 'metrics.1.aggregation.property', 'metrics.1.bogus']);
    assert.ok(e.every((x) => x.code === undefined && x.message.length > 0));
    const base = { v: 2, dateRange: { kind: 'preset', preset: '7d' }, metrics: [{ id: 'A', kind: 'event', event: 'a', aggregation: { op: 'count' } }] };
    assert.deepEqual(errs({ ...base, analysis: { kind: 'trend', unit: 'day', formula: 'A + F' } }), [
      { path: 'analysis.formula', message: 'formula letter F is not a metric id', code: 'unknown_reference' },
    ]);
    assert.equal(errs({ ...base, analysis: { kind: 'trend', unit: 'day', formula: 'A +' } })[0].code, 'invalid_formula');
    assert.deepEqual(errs({ ...base, analysis: { kind: 'funnel', steps: ['A', 'C'] } }).map((x) => [x.path, x.code]), [['analysis.steps.1', 'unknown_reference']]);
    assert.deepEqual(errs({ ...base, metrics: [...base.metrics, ...base.metrics], analysis: { kind: 'trend', unit: 'day' } }).map((x) => [x.path, x.code]), [['metrics.1.id', 'duplicate_id']]);
    assert.deepEqual(errs({ ...base, metrics: [{ id: 'A', kind: 'calculated', definitionId: 1 }], analysis: { kind: 'funnel', steps: ['A', 'A'] } }).map((x) => x.code), ['illegal_position', 'illegal_position']);
    assert.equal(errs([]).length, 1);
    assert.equal(errs('x')[0].path, '');
  });

  it('random documents never throw; every answer is ok with a v2 query or errors with paths', () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 4 }), fc.constantFrom(undefined, 'segmentation', 'funnel', 'metric') as fc.Arbitrary<any>, (doc, type) => {
      const r = upgradeQuery(doc, { type });
      if (r.ok) assert.ok(QueryV2Schema.safeParse(r.query).success);
      else assert.ok(r.errors.length > 0 && r.errors.every((x) => typeof x.path === 'string' && typeof x.message === 'string'));
    }), { numRuns: 500 });
  });
});
