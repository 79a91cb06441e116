import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, sharedService, type Tenant, type TestService } from '../support/service.js';

/**
 * Input refused at the edge (http/body.ts, query/schema.ts): JSON nested past 64 levels answers
 * 400 before anything walks it (a body ~4,100 levels deep used to overflow the stack: 500), and the
 * v0 query endpoints refuse unknown members instead of dropping them.
 */
forEachBackend('hardening: nesting and unknown members', (backend) => {
  let t: TestService;
  let acme: Tenant;
  let pid: number;
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Edge');
    pid = acme.project.id;
  });

  const raw = (client: TestService['anon'], path: string, text: string, headers: Record<string, string> = {}) =>
    client.request('POST', path, undefined, { raw: text, headers: { 'content-type': 'application/json', ...headers } });

  it('a body nested 5,000 levels (arrays or objects, anywhere in it) answers 400 naming the depth; 64 levels still parse', async () => {
    const range = `"projectId":${pid},"event":"view","from":"2024-01-01","to":"2024-01-02","unit":"day","type":"total"`;
    for (const deep of ['['.repeat(5000) + ']'.repeat(5000), '{"a":'.repeat(5000) + '1' + '}'.repeat(5000)]) {
      const query = await raw(acme.owner, '/api/query/segmentation', `{${range},"x":${deep}}`);
      assert.equal(query.status, 400, query.text);
      assert.deepEqual(query.body, { error: 'invalid json', message: 'nested deeper than 64 levels' });
      const evaluate = await raw(t.anon, '/flags/evaluate', `{"distinct_id":"u","properties":{"a":${deep}}}`, { 'x-service-token': acme.project.token });
      assert.equal(evaluate.status, 400, evaluate.text);
      assert.deepEqual(evaluate.body, { status: 0, error: 'invalid json' });
      const report = await raw(acme.owner, `/api/reports?projectId=${pid}`, `{"name":"r","type":"segmentation","query":${deep}}`);
      assert.equal(report.status, 400, report.text);
    }
    // Brackets inside strings are text, not nesting.
    const inString = await raw(acme.owner, '/api/query/segmentation', `{${range.replace('"view"', JSON.stringify('['.repeat(200)))}}`);
    assert.equal(inString.status, 200, inString.text);
    const flag = await acme.owner.post('/api/flags', { projectId: pid, key: 'f', name: 'F', rules: [{ rolloutPct: 100 }] });
    assert.equal(flag.status, 201, flag.text);
    const nested = '{"a":'.repeat(62) + '1' + '}'.repeat(62);
    const ok = await raw(t.anon, '/flags/evaluate', `{"distinct_id":"u","properties":${nested}}`, { 'x-service-token': acme.project.token });
    assert.notEqual(ok.status, 500, ok.text);
    assert.ok(!/nested deeper/.test(ok.text), ok.text);
  });

  it('the v0 query endpoints and their filters refuse unknown members, naming them', async () => {
    const range = { projectId: pid, from: '2024-01-01', to: '2024-01-02' };
    const bodies: Record<string, Record<string, unknown>> = {
      segmentation: { ...range, event: 'view', unit: 'day', type: 'total' },
      funnel: { ...range, steps: ['a', 'b'] },
      retention: { ...range, bornEvent: 'a', returnEvent: 'b' },
      flows: { ...range, event: 'a', direction: 'after' },
      sessions: { ...range },
    };
    for (const [path, body] of Object.entries(bodies)) {
      const good = await acme.owner.post(`/api/query/${path}`, body);
      assert.equal(good.status, 200, `${path}: ${good.text}`);
      const bad = await acme.owner.post(`/api/query/${path}`, { ...body, segmentBy: 'plan' });
      assert.equal(bad.status, 400, `${path}: ${bad.text}`);
      assert.equal(bad.body.code, 'validation_failed');
      assert.match(bad.body.error, /segmentBy/);
    }
    const filter = await acme.owner.post('/api/query/segmentation', { ...bodies.segmentation, filters: [{ key: 'plan', op: 'eq', value: 'pro', caseSensitive: true }] });
    assert.equal(filter.status, 400, filter.text);
    assert.match(filter.body.error, /^filters\.0: .*caseSensitive/);
  });
});

forEachBackend('hardening: flag preview body', (backend) => {
  let t: TestService;
  let acme: Tenant;
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Preview');
  });

  it('POST /api/flags/{id}/preview refuses unknown members and NUL in distinctId, naming them (found by test/fuzz-openapi.test.ts)', async () => {
    const pid = acme.project.id;
    const cohort = await acme.owner.post('/api/cohorts', { projectId: pid, name: 'buyers', definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'buy', op: 'gte', count: 1, windowDays: 0 }] } });
    assert.equal(cohort.status, 201, cohort.text);
    const flag = await acme.owner.post('/api/flags', { projectId: pid, key: 'p', name: 'P', rules: [{ rolloutPct: 100, cohortId: cohort.body.id }] });
    assert.equal(flag.status, 201, flag.text);
    const preview = (body: unknown) => acme.owner.post(`/api/flags/${flag.body.id}/preview`, body);
    assert.equal((await preview({ distinctId: 'a' })).status, 200);
    const unknown = await preview({ distinctId: 'a', distinct_id: 'a' });
    assert.equal(unknown.status, 400, unknown.text);
    assert.equal(unknown.body.error, 'distinct_id: unknown member');
    const nul = await preview({ distinctId: 'a\u0000b' });
    assert.equal(nul.status, 400, nul.text);
    assert.equal(nul.body.error, 'distinctId: must not contain NUL characters');
  });
});

forEachBackend('hardening: /flags/evaluate body', (backend) => {
  let t: TestService;
  let acme: Tenant;
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'Evaluate');
  });

  it('accepts and ignores members it does not know (SDKs send their own), while a known member of the wrong type is 400', async () => {
    const pid = acme.project.id;
    const flag = await acme.owner.post('/api/flags', { projectId: pid, key: 'half', name: 'Half', rules: [{ rolloutPct: 50 }] });
    assert.equal(flag.status, 201, flag.text);
    const evaluate = (body: Record<string, unknown>) => t.anon.post('/flags/evaluate', { token: acme.project.token, ...body });
    for (let i = 0; i < 20; i++) {
      const plain = await evaluate({ distinct_id: `u${i}` });
      assert.equal(plain.status, 200, plain.text);
      const extra = await evaluate({
        distinct_id: `u${i}`, context: { distinct_id: 'other', device_id: 'd' }, groups: { company: 'c' }, properties: { plan: 'pro' },
        $lib: 'mixpanel-node', mp_lib: 'web', flag_key: 'ignored', __proto__x: 1,
      });
      assert.equal(extra.status, 200, extra.text);
      assert.deepEqual(extra.body, plain.body, 'same answer: the unknown members change nothing');
    }
    const wrong = await evaluate({ distinct_id: 'u', flag_keys: 'half' });
    assert.deepEqual([wrong.status, wrong.body], [400, { status: 0, error: 'flag_keys: must be an array of strings' }]);
    const nul = await evaluate({ distinct_id: 'u', extra: 'a\u0000b' });
    assert.equal(nul.status, 200, 'an ignored member is not read, NUL or not');
  });
});

forEachBackend('hardening: NUL in Query IR documents', (backend) => {
  let t: TestService;
  let acme: Tenant;
  before(async () => {
    t = await sharedService(backend);
    acme = await createTenant(t, 'IrNul');
  });

  it('POST /api/query and drilldown refuse NUL anywhere in the document (any version) with invalid query naming its path', async () => {
    const pid = acme.project.id;
    const range = { kind: 'absolute', from: '2024-01-01', to: '2024-01-09' };
    const docs: Array<[unknown, string]> = [
      [{ steps: ['view', 'buy'], from: '2024-01-01', to: '2024-01-09', breakdown: '\u0000' }, 'breakdown.property'],
      [{ v: 2, dateRange: range, metrics: [{ id: 'A', kind: 'event', event: 'vi\u0000ew', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } }, 'metrics.0.event'],
      [{ v: 2, dateRange: range, filters: [{ key: 'plan', op: 'eq', value: 'p\u0000' }], metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } }, 'filters.0.value'],
    ];
    for (const [query, path] of docs) {
      const r = await acme.owner.post('/api/query', { projectId: pid, query });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error, 'invalid query');
      assert.deepEqual(r.body.errors.map((e: any) => [e.path, e.message]), [[path, 'must not contain NUL characters']]);
    }
    const good = { v: 2, dateRange: range, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' }, breakdown: { property: 'plan' } };
    const drill = await acme.owner.post('/api/query/drilldown', { projectId: pid, query: good, selection: { metric: 'A', bucket: '2024-01-01', segment: 'p\u0000' } });
    assert.ok(drill.status === 400, drill.text);
  });
});
