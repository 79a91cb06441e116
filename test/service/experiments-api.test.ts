import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import type { Client } from '../support/http.js';
import { drained, ev, ingest } from '../support/ingestion.js';
import { LIMITS } from '../../apps/server/src/limits.js';
import { analyzeMetrics, sampleRatioMismatch, type AnalysisSettings, type MetricTotals } from '../../apps/server/src/experiments/stats.js';

/**
 * The experiments API on both backends: a designed data set sent through /track, /alias and
 * $identify whose per-unit values are written out by hand below (not computed by any SQL), the
 * results compared with those hand numbers and with the statistics module run on them; settings
 * overrides, the results cache, the canary verdict, bad input (400 naming the field, nothing
 * stored), audit rows and the authorisation matrix of every route.
 */

/** The audit log's largest page. */
const LIMIT = LIMITS.auditLogLimit.max;
const H = 3_600_000;
const T0 = Date.UTC(2024, 0, 10);
const START = T0;
const END = T0 + 10 * 24 * H;
const at = (hours: number) => T0 + hours * H;

const METRICS = [
  { id: 'converted', kind: 'conversion', event: 'purchase' },
  { id: 'purchases', kind: 'count', event: 'purchase' },
  { id: 'revenue', kind: 'sum', event: 'purchase', property: 'amount' },
  { id: 'converted-24h', kind: 'conversion', event: 'purchase', windowHours: 24 },
] as const;

/**
 * Per exposed unit its variant and, by hand, its value per metric (converted, purchases, revenue,
 * converted within 24 h): what the rules of docs/experiments.md give for the events sent in `send`.
 */
const UNITS: Record<string, { variant: 'control' | 'treatment'; values: [number, number, number, number] }> = {
  // purchase before exposure (not counted), at +1 h (10), at +29 h (5: outside the 24 h window)
  c1: { variant: 'control', values: [1, 2, 15, 1] },
  // exposed at startAt exactly by $feature_flag_called; nothing bought
  c2: { variant: 'control', values: [0, 0, 0, 0] },
  // anonymous exposure, linked later by /alias: its user's purchases count ('abc' is not a number)
  'user-c3': { variant: 'control', values: [1, 2, 20, 1] },
  // a purchase at endAt counts, one after endAt does not; both outside the window
  c4: { variant: 'control', values: [1, 1, 7, 0] },
  // exposed twice: the first exposure counts; purchase 35 h after it
  c5: { variant: 'control', values: [1, 1, 3, 0] },
  // an exposure before startAt is ignored; the one at +6 h counts
  c6: { variant: 'control', values: [1, 1, 1, 1] },
  t1: { variant: 'treatment', values: [1, 3, 100, 1] },
  t2: { variant: 'treatment', values: [0, 0, 0, 0] },
  // anonymous exposure by $feature_flag_called, linked by $identify
  'user-t3': { variant: 'treatment', values: [1, 1, 12.5, 1] },
  // purchases at +23 h (in the window) and at +24 h exactly (outside it)
  t4: { variant: 'treatment', values: [1, 2, 10, 1] },
  // exposed at endAt exactly
  t6: { variant: 'treatment', values: [0, 0, 0, 0] },
};
/** m1 (two variants itself) and user-m2 (two variants across its linked ids). */
const EXCLUDED = 2;

const started = (id: string, time: number, variant: string, name = 'checkout-exp') =>
  ev('$experiment_started', id, { time, 'Experiment name': name, 'Variant name': variant });
const called = (id: string, time: number, variant: string, flag = 'checkout') =>
  ev('$feature_flag_called', id, { time, $feature_flag: flag, $feature_flag_response: variant });
const purchase = (id: string, time: number, amount?: unknown) => ev('purchase', id, { time, ...(amount === undefined ? {} : { amount }) });

const EVENTS = [
  started('c1', at(1), 'control'), purchase('c1', at(0.5), 50), purchase('c1', at(2), 10), purchase('c1', at(30), 5),
  called('c2', START, 'control'),
  started('$device:c3', at(3), 'control', 'checkout'), purchase('user-c3', at(5), 'abc'), purchase('user-c3', at(6), 20),
  started('c4', at(4), 'control'), purchase('c4', END, 7), purchase('c4', END + H, 100),
  started('c5', at(5), 'control'), started('c5', at(50), 'control'), purchase('c5', at(40), 3),
  started('c6', START - 5 * H, 'control'), purchase('c6', at(-1), 9), started('c6', at(6), 'control'), purchase('c6', at(7), 1),
  started('t1', at(1), 'treatment'), purchase('t1', at(2), 30), purchase('t1', at(3), 30), purchase('t1', at(4), 40),
  started('t2', at(2), 'treatment', 'checkout'),
  called('$device:t3', at(3), 'treatment'), purchase('user-t3', at(10), 12.5),
  started('t4', at(4), 'treatment'), purchase('t4', at(27), 8), purchase('t4', at(28), 2),
  started('t6', END, 'treatment'),
  // not exposures: an unknown variant, another experiment, another flag, after endAt
  started('x1', at(1), 'bogus'), purchase('x1', at(2), 1),
  started('x2', at(1), 'control', 'other-exp'), purchase('x2', at(2), 1),
  called('x3', at(1), 'control', 'other-flag'), purchase('x3', at(2), 1),
  started('late', END + 1, 'control'), purchase('late', END + 2, 1),
  // in two variants: left out of everything
  started('m1', at(1), 'control'), started('m1', at(2), 'treatment'), purchase('m1', at(3), 1000),
  started('$device:m2', at(1), 'control'), started('user-m2', at(2), 'treatment'), purchase('user-m2', at(3), 1000),
];

/** The hand numbers: per metric and variant, units, Σ value and Σ value². */
function handTotals(): Array<MetricTotals & { variants: Array<{ key: string; units: number; total: number; sumOfSquares: number }> }> {
  return METRICS.map((m, i) => ({
    id: m.id,
    kind: m.kind,
    variants: (['control', 'treatment'] as const).map((key) => {
      const xs = Object.values(UNITS).filter((u) => u.variant === key).map((u) => u.values[i]);
      return { key, units: xs.length, total: xs.reduce((s, x) => s + x, 0), sumOfSquares: xs.reduce((s, x) => s + x * x, 0) };
    }),
  }));
}

/** Every number of `got` equals `want`'s to 1e-9 relative (nulls, booleans and strings exactly). */
function assertClose(got: unknown, want: unknown, path = '$'): void {
  if (typeof want === 'number' && typeof got === 'number') {
    assert.ok(Math.abs(got - want) <= 1e-9 * Math.max(1, Math.abs(want)), `${path}: ${got} ≠ ${want}`);
    return;
  }
  if (want && typeof want === 'object') {
    assert.ok(got && typeof got === 'object', `${path}: ${JSON.stringify(got)} is not an object`);
    assert.deepEqual(Object.keys(got as object).sort(), Object.keys(want).sort(), `${path}: keys`);
    for (const k of Object.keys(want)) assertClose((got as Record<string, unknown>)[k], (want as Record<string, unknown>)[k], `${path}.${k}`);
    return;
  }
  assert.equal(got, want, path);
}

forEachBackend('experiments API', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  let owner: Client;
  let pid: number;
  const machine: Record<'member' | 'viewer', string> = { member: '', viewer: '' };

  const body = (extra: Record<string, unknown> = {}) => ({
    projectId: pid, key: 'checkout-exp', name: 'New checkout', flagKey: 'checkout', metrics: METRICS, startAt: START, endAt: END, ...extra,
  });

  before(async function () {
    this.timeout(120_000);
    t = await startTestService(backend, { OPERATOR_KEY: 'exp-operator-key' });
    tenant = await createTenant(t, 'exp');
    other = await createTenant(t, 'exp-other');
    owner = tenant.owner;
    pid = tenant.project.id;
    for (const role of ['member', 'viewer'] as const) {
      const minted = await owner.post('/api/org/tokens', { name: `${role} bot`, role });
      assert.equal(minted.status, 201, minted.text);
      machine[role] = minted.body.token;
    }
    for (const [key, variants] of [
      ['checkout', [{ key: 'control', rolloutPct: 50 }, { key: 'treatment', rolloutPct: 50 }]],
      ['split', [{ key: 'control', rolloutPct: 50 }, { key: 'b', rolloutPct: 50 }]],
      ['plain', []],
    ] as const) {
      const flag = await owner.post('/api/flags', { projectId: pid, key, name: key, variants });
      assert.equal(flag.status, 201, flag.text);
    }
    const sender = ingest(t, tenant.project.token);
    const sent = await sender.post('/track', EVENTS);
    assert.equal(sent.status, 200, sent.text);
    // A broken split on `split`: 40 exposures of the control, 5 of b.
    const srm = [...Array.from({ length: 40 }, (_, i) => called(`s${i}`, at(1), 'control', 'split')), ...Array.from({ length: 5 }, (_, i) => called(`sb${i}`, at(1), 'b', 'split'))];
    assert.equal((await sender.post('/track', srm)).status, 200);
    await drained(t);
    // Links after the events: an anonymous id joins its user's cluster retroactively.
    assert.equal((await sender.post('/alias', { alias: '$device:c3', distinct_id: 'user-c3' })).status, 200);
    assert.equal((await sender.post('/alias', { alias: '$device:m2', distinct_id: 'user-m2' })).status, 200);
    assert.equal((await sender.post('/track', [ev('$identify', 'user-t3', { time: at(9), $anon_distinct_id: '$device:t3' })])).status, 200);
    await drained(t);
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('results equal the hand-computed units, totals, means and variances, and the statistics on them', async function () {
    this.timeout(60_000);
    // Its key is the `Experiment name` most exposures carry; the others carry the flag's key or are $feature_flag_called.
    const created = await owner.post('/api/experiments', body());
    assert.equal(created.status, 201, created.text);
    const e = created.body;
    assert.equal(e.control, 'control');
    assert.equal(e.engine, 'bayesian');
    assert.equal(e.confidenceLevel, 0.95);
    assert.equal(e.primaryMetricId, 'converted');

    const res = await owner.get(`/api/experiments/${e.id}/results`);
    assert.equal(res.status, 200, res.text);
    const r = res.body;
    const totals = handTotals();
    const units = (v: string) => Object.values(UNITS).filter((u) => u.variant === v).length;
    assert.deepEqual(r.exposures, { control: units('control'), treatment: units('treatment') });
    assert.equal(r.excludedMultipleVariants, EXCLUDED);
    assert.equal(r.experimentId, e.id);
    // Exposures over time, by hand: every first exposure on 2024-01-10 (startAt's day) but t6's at endAt, ten days later.
    const days = Array.from({ length: 11 }, (_, i) => new Date(T0 + i * 24 * H).toISOString().slice(0, 10));
    const fresh = { control: [6, ...Array(10).fill(0)], treatment: [4, ...Array(9).fill(0), 1] };
    const running = (xs: number[]) => xs.map((_, i) => xs.slice(0, i + 1).reduce((a, b) => a + b, 0));
    assert.deepEqual(r.exposuresOverTime, {
      days,
      variants: (['control', 'treatment'] as const).map((key) => ({ key, new: fresh[key], cumulative: running(fresh[key]) })),
    });
    assert.equal(r.engine, 'bayesian');
    // Each variant's numbers from the definitions: mean = total/units; conversion mean(1−mean), else (Σx² − total·mean)/(n − 1).
    for (const [i, m] of METRICS.entries()) {
      const got = r.metrics[i];
      assert.equal(got.id, m.id);
      assert.equal(got.kind, m.kind);
      for (const want of totals[i].variants) {
        const v = got.variants.find((x: { key: string }) => x.key === want.key);
        assert.equal(v.units, want.units, `${m.id}/${want.key} units`);
        assertClose(v.total, want.total, `${m.id}/${want.key} total`);
        const mean = want.total / want.units;
        assertClose(v.mean, mean, `${m.id}/${want.key} mean`);
        const variance = m.kind === 'conversion' ? mean * (1 - mean) : (want.sumOfSquares - want.total * mean) / (want.units - 1);
        assertClose(v.variance, variance, `${m.id}/${want.key} variance`);
      }
    }
    // The whole answer is the statistics module's on the hand totals.
    const settings: AnalysisSettings = { engine: 'bayesian', confidenceLevel: 0.95, sequential: false, correction: 'none' };
    assertClose(r.metrics, analyzeMetrics(totals, 'control', settings));
    const srm = sampleRatioMismatch([units('control'), units('treatment')], [50, 50]);
    assertClose(r.srm, { pValue: srm.pValue, ok: srm.ok });
    // Lift by the contract's formula, for one pair, written out: revenue, treatment against control.
    const c = totals[2].variants[0];
    const tv = totals[2].variants[1];
    const [mc, mv] = [c.total / c.units, tv.total / tv.units];
    const [vc, vv] = [(c.sumOfSquares - c.total * mc) / (c.units - 1), (tv.sumOfSquares - tv.total * mv) / (tv.units - 1)];
    const lift = mv / mc - 1;
    const varLift = (vc * mv * mv) / (mc ** 4 * c.units) + vv / (mc * mc * tv.units);
    const revenueTreatment = r.metrics[2].variants[1];
    assertClose(revenueTreatment.lift.mean, lift);
    assertClose(revenueTreatment.lift.high - revenueTreatment.lift.mean, 1.959963984540054 * Math.sqrt(varLift));
    assert.equal('lift' in r.metrics[2].variants[0], false, 'the control has no comparison fields');

    // Other settings recompute the statistics over the same totals.
    for (const q of [
      { engine: 'frequentist', correction: 'holm', sequential: false },
      { engine: 'frequentist', correction: 'bh', sequential: true },
    ] as const) {
      const other = await owner.get(`/api/experiments/${e.id}/results?engine=${q.engine}&correction=${q.correction}&sequential=${q.sequential}`);
      assert.equal(other.status, 200, other.text);
      assert.equal(other.body.engine, 'frequentist');
      assertClose(other.body.metrics, analyzeMetrics(totals, 'control', { engine: q.engine, confidenceLevel: 0.95, sequential: q.sequential, correction: q.correction }));
      assert.equal(typeof other.body.metrics[0].variants[1].adjustedPValue, 'number');
    }
  });

  it('serves results from the cache until the project has new events in the span', async function () {
    this.timeout(60_000);
    // Another key: only the exposures naming the flag count (c2, user-c3, t2, user-t3), t2 among them.
    const e = (await owner.post('/api/experiments', body({ key: 'cache-exp' }))).body;
    const first = await owner.get(`/api/experiments/${e.id}/results`);
    assert.equal(first.status, 200, first.text);
    const again = await owner.get(`/api/experiments/${e.id}/results`);
    assert.equal(typeof again.body.cached_at, 'number', 'the second read is served from the cache');
    assert.equal(again.body.computedAt, first.body.computedAt);
    const t2Before = first.body.metrics[1].variants.find((v: { key: string }) => v.key === 'treatment').total;
    // t2 buys within the span: the results change.
    assert.equal((await ingest(t, tenant.project.token).post('/track', [purchase('t2', at(12), 4)])).status, 200);
    await drained(t);
    const after = await owner.get(`/api/experiments/${e.id}/results`);
    assert.equal(after.body.cached_at, undefined);
    assert.equal(after.body.metrics[1].variants.find((v: { key: string }) => v.key === 'treatment').total, t2Before + 1);
  });

  it('cost guard: results over more variant-days than QUERY_MAX_CELLS are refused before running, naming what to narrow', async () => {
    // Since 1970 and still running: about 20,000 days × 2 variants.
    const e = (await owner.post('/api/experiments', body({ key: 'forever-exp', startAt: 0, endAt: null }))).body;
    for (const path of ['results', 'analysis']) {
      const res = await owner.get(`/api/experiments/${e.id}/${path}`);
      assert.equal(res.status, 400, res.text);
      assert.match(res.body.error, /^query too large: 2 series × \d+ buckets exceeds 10000: narrow the experiment's dates \(startAt\/endAt\)$/);
    }
    // Narrowed to the data's ten days, the same experiment answers: under its own key only the
    // exposures naming the flag count (c2, user-c3, t2, user-t3), all on startAt's day.
    const narrowed = await owner.put(`/api/experiments/${e.id}`, { startAt: START, endAt: END });
    assert.equal(narrowed.status, 200, narrowed.text);
    const ok = await owner.get(`/api/experiments/${e.id}/results`);
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body.exposuresOverTime, {
      days: ['2024-01-10'],
      variants: [{ key: 'control', new: [2], cumulative: [2] }, { key: 'treatment', new: [2], cumulative: [2] }],
    });
  });

  it('analysis: a broken split is SampleRatioMismatch and not ok; a fine one is ok', async () => {
    const broken = (await owner.post('/api/experiments', { projectId: pid, key: 'split-exp', flagKey: 'split', metrics: [METRICS[0]], startAt: START, endAt: END })).body;
    const a = await owner.get(`/api/experiments/${broken.id}/analysis`);
    assert.equal(a.status, 200, a.text);
    const srm = sampleRatioMismatch([40, 5], [50, 50]);
    assert.ok(!srm.ok);
    assert.deepEqual({ ok: a.body.ok, srmOk: a.body.srmOk, decision: a.body.decision, winner: a.body.winner }, { ok: false, srmOk: false, decision: 'SampleRatioMismatch', winner: null });
    assert.equal(a.body.primary.id, 'converted');
    const fine = (await owner.post('/api/experiments', body({ key: 'fine-exp', primaryMetricId: 'revenue' }))).body;
    const b = await owner.get(`/api/experiments/${fine.id}/analysis`);
    assert.equal(b.status, 200, b.text);
    assert.equal(b.body.srmOk, true);
    assert.equal(b.body.primary.id, 'revenue');
    const worse = b.body.primary.variants.some((v: { significant?: boolean; lift?: { mean: number } }) => v.significant === true && v.lift!.mean < 0);
    assert.equal(b.body.ok, !worse);
  });

  it('the worked AnalysisTemplate asks the analysis route and reads result.ok', async () => {
    const docs = readFileSync('k8s/examples/experiments/analysis-template.yaml', 'utf8').split(/^---$/m).map((d) => parse(d)).filter(Boolean);
    const template = docs.find((d) => d.kind === 'AnalysisTemplate');
    assert.equal(template.apiVersion, 'argoproj.io/v1alpha1');
    const metric = template.spec.metrics[0];
    assert.equal(metric.successCondition, 'result.ok');
    assert.ok(Number(metric.failureLimit) >= 0);
    const url: string = metric.provider.web.url;
    assert.match(url, /\/api\/experiments\/\{\{args\.experiment-id\}\}\/analysis$/);
    assert.ok(template.spec.args.some((a: { name: string }) => a.name === 'experiment-id'));
    assert.ok(metric.provider.web.headers.some((h: { key: string; value: string }) => h.key === 'Authorization' && h.value.includes('{{args.')));
    // The address the template builds answers with `ok`, the field successCondition reads.
    const e = (await owner.post('/api/experiments', body({ key: 'argo-exp' }))).body;
    const path = new URL(url.replace(/\{\{args\.experiment-id\}\}/, String(e.id)).replace(/\{\{args\.[^}]+\}\}/g, 'x')).pathname;
    const answer = await t.client(machine.viewer).get(path);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(typeof answer.body.ok, 'boolean');
  });

  it('bad input: 400 naming the field, nothing stored and no audit row', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [body({ key: 'b1', flagKey: 'nope' }), 'flagKey'],
      [body({ key: 'b2', flagKey: 'plain' }), 'flagKey'],
      [body({ key: 'b3', control: 'treatmentx' }), 'control'],
      [body({ key: 'b4', metrics: [] }), 'metrics'],
      [body({ key: 'b5', metrics: [{ id: 'r', kind: 'sum', event: 'purchase' }] }), 'metrics.0.property'],
      [body({ key: 'b6', confidenceLevel: 0.5 }), 'confidenceLevel'],
      [body({ key: 'b7', confidenceLevel: 1 }), 'confidenceLevel'],
      [body({ key: 'b8', startAt: END, endAt: START }), 'endAt'],
      [body({ key: 'b9', metrics: [METRICS[0], METRICS[0]] }), 'metrics.1.id'],
      [body({ key: 'b10', primaryMetricId: 'nope' }), 'primaryMetricId'],
      [body({ key: 'b11', metrics: [{ id: 'x', kind: 'ratio', event: 'purchase' }] }), 'metrics.0.kind'],
      [body({ key: 'b12', engine: 'magic' }), 'engine'],
    ];
    const before = (await owner.get(`/api/experiments?projectId=${pid}`)).body.length;
    const auditBefore = (await owner.get(`/api/audit-log?targetKind=experiment&limit=${LIMIT}`)).body.entries.length;
    for (const [b, field] of cases) {
      const res = await owner.post('/api/experiments', b);
      assert.equal(res.status, 400, `${field}: ${res.text}`);
      assert.ok(String(res.body.error).startsWith(`${field}:`) || String(res.body.message).startsWith(`${field}:`), `${field}: ${res.text}`);
    }
    const existing = (await owner.post('/api/experiments', body({ key: 'put-target' }))).body;
    for (const [patch, field] of [[{ control: 'nope' }, 'control'], [{ startAt: END + 1 }, 'endAt'], [{ flagKey: 'plain' }, 'flagKey'], [{ confidenceLevel: 2 }, 'confidenceLevel']] as const) {
      const res = await owner.put(`/api/experiments/${existing.id}`, patch);
      assert.equal(res.status, 400, res.text);
      assert.ok(String(res.body.error).startsWith(`${field}:`), res.text);
    }
    assert.deepEqual((await owner.get(`/api/experiments/${existing.id}`)).body, existing);
    assert.equal((await owner.get(`/api/experiments?projectId=${pid}`)).body.length, before + 1);
    assert.equal((await owner.get(`/api/experiments?projectId=${pid}`)).body.length, before + 1);
    assert.equal((await owner.get(`/api/audit-log?targetKind=experiment&limit=${LIMIT}`)).body.entries.length, auditBefore + 1);
    // A duplicate key is a conflict.
    assert.equal((await owner.post('/api/experiments', body({ key: 'put-target' }))).status, 409);
  });

  it('writes leave audit rows: created, updated, stopped, deleted', async () => {
    const member = t.client(tenant.tokens.member);
    const created = await member.post('/api/experiments', body({ key: 'audited' }));
    assert.equal(created.status, 201, created.text);
    const id = created.body.id;
    assert.equal((await member.put(`/api/experiments/${id}`, { name: 'Audited', engine: 'frequentist' })).status, 200);
    const stopped = await member.post(`/api/experiments/${id}/stop`);
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.status, 'stopped');
    assert.equal(stopped.body.endAt, END, 'an end before now stays');
    assert.equal((await member.post(`/api/experiments/${id}/stop`)).status, 200, 'stopping again changes nothing');
    assert.equal((await member.delete(`/api/experiments/${id}`)).status, 200);
    assert.equal((await member.get(`/api/experiments/${id}`)).status, 404);
    const log = (await owner.get(`/api/audit-log?targetKind=experiment&limit=${LIMIT}`)).body.entries.filter((x: { target: { id: number } }) => x.target.id === id);
    assert.deepEqual(log.map((x: { action: string }) => x.action).reverse(), ['experiment.created', 'experiment.updated', 'experiment.stopped', 'experiment.deleted']);
    assert.ok(log.every((x: { actor: { kind: string }; projectId: number }) => x.actor.kind === 'user' && x.projectId === pid));
    const updated = log.find((x: { action: string }) => x.action === 'experiment.updated');
    assert.equal(updated.before.engine, 'bayesian');
    assert.equal(updated.after.engine, 'frequentist');
  });

  it('an open-ended experiment stopped now ends now', async () => {
    const e = (await owner.post('/api/experiments', body({ key: 'open-ended', endAt: null }))).body;
    assert.equal(e.endAt, null);
    const before = Date.now();
    const stopped = (await owner.post(`/api/experiments/${e.id}/stop`)).body;
    assert.ok(stopped.endAt >= before && stopped.endAt <= Date.now(), String(stopped.endAt));
    assert.equal(stopped.stoppedAt, stopped.endAt);
  });

  describe('authorisation matrix', () => {
    type Ids = { id: number; pid: number };
    interface Row { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; path: string; url: (i: Ids) => string; body?: (i: Ids) => unknown; write: boolean; scope: 'id' | 'project'; status?: number; resourceOnly?: boolean }
    let n = 0;
    const ROWS: Row[] = [
      { method: 'GET', path: '/api/experiments', url: (i) => `/api/experiments?projectId=${i.pid}`, write: false, scope: 'project' },
      { method: 'POST', path: '/api/experiments', url: () => '/api/experiments', body: (i) => ({ ...body({ key: `mx-${++n}` }), projectId: i.pid }), write: true, scope: 'project', status: 201 },
      { method: 'GET', path: '/api/experiments/{id}', url: (i) => `/api/experiments/${i.id}`, write: false, scope: 'id' },
      { method: 'PUT', path: '/api/experiments/{id}', url: (i) => `/api/experiments/${i.id}`, body: () => ({ name: 'renamed' }), write: true, scope: 'id' },
      { method: 'DELETE', path: '/api/experiments/{id}', url: (i) => `/api/experiments/${i.id}`, write: true, scope: 'id' },
      { method: 'POST', path: '/api/experiments/{id}/stop', url: (i) => `/api/experiments/${i.id}/stop`, write: true, scope: 'id' },
      { method: 'GET', path: '/api/experiments/{id}/results', url: (i) => `/api/experiments/${i.id}/results`, write: false, scope: 'id' },
      { method: 'GET', path: '/api/experiments/{id}/analysis', url: (i) => `/api/experiments/${i.id}/analysis`, write: false, scope: 'id' },
      // Only an installation key naming the managing resource: without X-Tally-Resource a 400, any other credential 401.
      { method: 'POST', path: '/api/experiments/{id}/release', url: (i) => `/api/experiments/${i.id}/release`, write: true, scope: 'id', resourceOnly: true },
    ];

    it('every Experiments route is in /openapi.json and in the matrix', async () => {
      const doc = (await t.anon.get('/openapi.json')).body;
      const served: string[] = [];
      for (const [path, ops] of Object.entries<any>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(ops)) if (op.tags?.includes('Experiments')) served.push(`${method.toUpperCase()} ${path}`);
      }
      assert.deepEqual(served.sort(), ROWS.map((r) => `${r.method} ${r.path}`).sort());
    });

    it('each role, machine tokens, the superadmin, anonymous, the operator key and another organisation, on every route', async function () {
      this.timeout(180_000);
      const callers: Array<[string, Client, (r: Row) => number]> = [
        ['anonymous', t.anon, () => 401],
        ['superadmin', t.admin, (r) => r.status ?? 200],
        ...(['owner', 'admin', 'member'] as const).map((role): [string, Client, (r: Row) => number] => [role, t.client(tenant.tokens[role]), (r) => r.status ?? 200]),
        ['viewer', t.client(tenant.tokens.viewer), (r) => (r.write ? 403 : r.status ?? 200)],
        ['member machine token', t.client(machine.member), (r) => r.status ?? 200],
        ['viewer machine token', t.client(machine.viewer), (r) => (r.write ? 403 : r.status ?? 200)],
        ['foreign owner', t.client(other.tokens.owner), (r) => (r.scope === 'id' ? 404 : 403)],
        // It reads what an Experiment resource shows; its writes must name a resource (400 without), stop is not its.
        ['operator key', t.client('exp-operator-key'), (r) => (r.path.endsWith('/stop') ? 403 : r.write ? 400 : r.status ?? 200)],
      ];
      const failures: string[] = [];
      for (const row of ROWS) {
        for (const [who, client, expected] of callers) {
          const id = (await t.admin.post('/api/experiments', body({ key: `fixture-${++n}` }))).body.id;
          const ids = { id, pid };
          const res = await client.request(row.method, row.url(ids), row.body?.(ids));
          const want = row.resourceOnly ? (who === 'superadmin' || who === 'operator key' ? 400 : 401) : expected(row);
          if (res.status !== want) failures.push(`${row.method} ${row.path} as ${who}: ${res.status} (expected ${want}) ${res.text.slice(0, 160)}`);
        }
      }
      assert.deepEqual(failures, []);
    });
  });
});
