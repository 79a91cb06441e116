import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { sharedService, type Tenant, type TestService } from '../support/service.js';
import { reportsWorld } from '../support/reports.js';

const seg = { event: 'view', from: '2024-01-01', to: '2024-01-07', unit: 'day', type: 'total' };
const funnel = { steps: ['view', 'signup'], from: '2024-01-01', to: '2024-01-14', windowDays: 7 };
const retention = { bornEvent: 'view', returnEvent: 'buy', from: '2024-01-01', to: '2024-01-14', unit: 'week', buckets: 2 };
const flows = { event: 'view', direction: 'after', steps: 2, from: '2024-01-01', to: '2024-01-14' };

forEachBackend('saved reports', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  let pid: number;
  reportsWorld(backend, 'rep', (w) => ({ t, tenant, other, pid } = w), sharedService);

  it('CRUD: query stored exactly as sent (minus projectId), created_by is the caller, null for the superadmin or a machine token', async () => {
    const member = t.client(tenant.tokens.member);
    const me = (await member.get('/api/account')).body.user.id;
    const created = await member.post('/api/reports', { projectId: pid, name: 'Views', description: 'How many views a day?', type: 'segmentation', query: { ...seg, projectId: String(pid) } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.query, seg);
    assert.equal(created.body.created_by, me);
    assert.equal(created.body.project_id, pid);
    assert.equal(created.body.description, 'How many views a day?');
    const id = created.body.id;
    const got = await t.client(tenant.tokens.viewer).get(`/api/reports/${id}`);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.query, seg, 'defaults are not filled into the stored query');
    const byAdmin = await t.admin.post('/api/reports', { projectId: pid, name: 'F', type: 'funnel', query: funnel });
    assert.equal(byAdmin.status, 201, byAdmin.text);
    assert.equal(byAdmin.body.created_by, null);
    const bot = await tenant.owner.post('/api/org/tokens', { name: 'reports bot', role: 'member' });
    const byToken = await t.client(bot.body.token).post('/api/reports', { projectId: pid, name: 'by a token', type: 'segmentation', query: seg });
    assert.equal(byToken.status, 201, byToken.text);
    assert.equal(byToken.body.created_by, null, 'a machine-access token is no user');
    await member.delete(`/api/reports/${byToken.body.id}`);
    const list = await t.client(tenant.tokens.viewer).get(`/api/reports?projectId=${pid}`);
    assert.deepEqual(list.body.map((r: any) => [r.name, r.type]), [['Views', 'segmentation'], ['F', 'funnel']]);
    const upd = await member.put(`/api/reports/${id}`, { name: 'Views (fr)', query: { ...seg, filters: [{ key: 'country', op: 'eq', value: 'fr' }] } });
    assert.equal(upd.status, 200, upd.text);
    assert.equal(upd.body.name, 'Views (fr)');
    assert.deepEqual(upd.body.query.filters, [{ key: 'country', op: 'eq', value: 'fr' }]);
    assert.ok(upd.body.updated_at >= created.body.updated_at);
    assert.deepEqual((await member.delete(`/api/reports/${id}`)).body, { ok: true });
    assert.equal((await member.get(`/api/reports/${id}`)).status, 404);
    assert.equal((await member.delete(`/api/reports/${byAdmin.body.id}`)).status, 200);
  });

  it('bad input: type/query mismatch, paths in errors, unknown metric, bad dates: 400 and nothing written', async () => {
    const member = t.client(tenant.tokens.member);
    const before = (await member.get(`/api/reports?projectId=${pid}`)).body.length;
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: 'x', type: 'funnel', query: seg }, /^query: a segmentation query does not fit a report of type funnel/],
      [{ name: 'x', type: 'segmentation', query: funnel }, /^query: a funnel query does not fit a report of type segmentation/],
      [{ name: 'x', type: 'funnel', query: { ...funnel, steps: ['only'] } }, /^query\.steps: /],
      [{ name: 'x', type: 'segmentation', query: { ...seg, unit: 'year' } }, /^query\.unit: /],
      [{ name: 'x', type: 'segmentation', query: { ...seg, from: '2024-02-30' } }, /^query: invalid date range/],
      [{ name: 'x', type: 'metric', query: { definitionId: 999, from: '2024-01-01', to: '2024-01-02', unit: 'day' } }, /^query\.definitionId: /],
      [{ name: 'x', type: 'funnel', query: { v: 2, analysis: { kind: 'trend', unit: 'day' } } }, /^query\.dateRange: /],
      [{ name: 'x', type: 'segmentation' }, /^query: /],
      [{ name: '', type: 'segmentation', query: seg }, /^name: /],
      [{ name: 'x', type: 'pie', query: seg }, /^type: /],
      [{ name: 'x', type: 'segmentation', query: seg, extra: 1 }, /unrecognized|extra/i],
    ];
    for (const [body, re] of cases) {
      const r = await member.post('/api/reports', { projectId: pid, ...body });
      assert.equal(r.status, 400, `${JSON.stringify(body)} -> ${r.text}`);
      assert.match(r.body.error, re, JSON.stringify(body));
    }
    const ok = await member.post('/api/reports', { projectId: pid, name: 'ok', type: 'segmentation', query: seg });
    const put = await member.put(`/api/reports/${ok.body.id}`, { type: 'retention' });
    assert.equal(put.status, 400, 'changing the type alone re-checks the stored query');
    assert.match(put.body.error, /does not fit a report of type retention/);
    assert.equal((await member.get(`/api/reports/${ok.body.id}`)).body.type, 'segmentation');
    assert.equal((await member.get(`/api/reports?projectId=${pid}`)).body.length, before + 1);
    await member.delete(`/api/reports/${ok.body.id}`);
  });

  it('a stored v0 report and a stored older IR report both show queryV1 and the warnings the upgrade made', async () => {
    const member = t.client(tenant.tokens.member);
    const v0 = await member.post('/api/reports', { projectId: pid, name: 'v0', type: 'segmentation', query: { ...seg, breakdown: 'country' } });
    assert.equal(v0.status, 201, v0.text);
    assert.equal(v0.body.queryV1, undefined, 'POST answers the report as stored');
    const got0 = (await member.get(`/api/reports/${v0.body.id}`)).body;
    assert.deepEqual(got0.query, { ...seg, breakdown: 'country' });
    assert.equal(got0.queryV1.v, 2);
    assert.deepEqual(got0.queryV1.dateRange, { kind: 'absolute', from: '2024-01-01', to: '2024-01-07' });
    assert.deepEqual(got0.queryV1.metrics.map((m: any) => [m.id, m.event, m.aggregation.op]), [['A', 'view', 'count']]);
    assert.equal(got0.queryV1.analysis.kind, 'trend');
    assert.equal(got0.queryV1.analysis.unit, 'day');
    assert.equal(got0.queryV1.breakdown.property, 'country');
    assert.deepEqual(got0.queryWarnings, []);

    // A v1 funnel with pairings v2 refuses: a formula on a funnel, windowDays 0 ("no window" in v1).
    const v1Query = {
      v: 1, dateRange: { from: '2024-01-01', to: '2024-01-14' },
      metrics: [{ event: 'view' }, { event: 'signup', math: 'unique' }],
      analysis: { kind: 'funnel', formula: 'A / B', windowDays: 0, steps: [0, 1] },
    };
    const v1 = await member.post('/api/reports', { projectId: pid, name: 'v1', type: 'funnel', query: v1Query });
    assert.equal(v1.status, 201, v1.text);
    const got1 = (await member.get(`/api/reports/${v1.body.id}`)).body;
    assert.deepEqual(got1.query, v1Query, 'stored exactly as sent');
    assert.equal(got1.queryV1.v, 2);
    assert.deepEqual(got1.queryV1.analysis.steps, ['A', 'B']);
    assert.deepEqual(got1.queryV1.analysis.window, { value: 366, unit: 'day' });
    assert.equal(got1.queryV1.analysis.formula, undefined);
    assert.equal(got1.queryWarnings.length, 2, got1.queryWarnings.join('; '));
    assert.ok(got1.queryWarnings.some((w: string) => w.startsWith('analysis.formula')));
    assert.ok(got1.queryWarnings.some((w: string) => w.startsWith('analysis.windowDays')));
    const listed = (await member.get(`/api/reports?projectId=${pid}`)).body.find((r: any) => r.id === v1.body.id);
    assert.deepEqual(listed.queryWarnings, got1.queryWarnings);
    // A board card carries the report as GET shows it.
    const board = (await member.post('/api/boards', { projectId: pid, name: 'v', cards: [{ reportId: v1.body.id }] })).body;
    assert.deepEqual(board.cards[0].report.queryWarnings, got1.queryWarnings);
    await member.delete(`/api/boards/${board.id}`);
    for (const id of [v0.body.id, v1.body.id]) await member.delete(`/api/reports/${id}`);
  });

  it('IR documents: refused with dotted paths under query, one entry per problem; the analysis must fit the type', async () => {
    const member = t.client(tenant.tokens.member);
    const ok = { v: 2, dateRange: { kind: 'preset', preset: '30d' }, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' } };
    assert.equal((await member.post('/api/reports', { projectId: pid, name: 'ir', type: 'segmentation', query: ok })).status, 201);
    const future = await member.post('/api/reports', { projectId: pid, name: 'x', type: 'segmentation', query: { ...ok, v: 9 } });
    assert.equal(future.status, 400);
    assert.match(future.body.error, /^query\.v: unsupported version/);
    const two = await member.post('/api/reports', {
      projectId: pid, name: 'x', type: 'segmentation',
      query: { ...ok, metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'median' }, colour: 'red' }] },
    });
    assert.equal(two.status, 400, two.text);
    assert.deepEqual(two.body.errors.map((e: any) => e.path).sort(), ['query.metrics.0.aggregation.op', 'query.metrics.0.colour']);
    const kind = await member.post('/api/reports', { projectId: pid, name: 'x', type: 'funnel', query: ok });
    assert.equal(kind.status, 400);
    assert.match(kind.body.error, /^query\.analysis\.kind: a report of type funnel holds a funnel analysis \(got trend\)/);
    const put = await member.put(`/api/reports/${(await member.get(`/api/reports?projectId=${pid}`)).body.find((r: any) => r.name === 'ir').id}`, { query: { ...ok, v: 9 } });
    assert.equal(put.status, 400);
    assert.equal((await member.get(`/api/reports?projectId=${pid}`)).body.find((r: any) => r.name === 'ir').query.v, 2, 'nothing written');
  });

  it('run: each v0 type answers what its query endpoint answers, CSV export, annotations on trends', async () => {
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    await member.post('/api/annotations', { projectId: pid, date: '2024-01-03', description: 'launch' });
    await member.post('/api/annotations', { projectId: pid, date: '2024-02-01', description: 'outside' });
    for (const [type, query, path] of [
      ['segmentation', seg, 'segmentation'], ['funnel', funnel, 'funnel'], ['retention', retention, 'retention'], ['flows', flows, 'flows'],
    ] as const) {
      const rep = await member.post('/api/reports', { projectId: pid, name: type, type, query });
      assert.equal(rep.status, 201, rep.text);
      const run = await viewer.post(`/api/reports/${rep.body.id}/run`);
      assert.equal(run.status, 200, run.text);
      const direct = await viewer.post(`/api/query/${path}`, { projectId: pid, ...query });
      assert.equal(direct.status, 200, direct.text);
      assert.deepEqual(run.body.result, direct.body, type);
      assert.equal(run.body.type, type);
      assert.deepEqual(run.body.warnings, []);
      const csv = await viewer.get(`/api/reports/${rep.body.id}/run?format=csv`);
      assert.equal(csv.status, 200, csv.text);
      assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
      assert.match(csv.headers.get('content-disposition') ?? '', /attachment; filename="report-\d+\.csv"/);
      assert.ok(csv.text.endsWith('\r\n'));
      if (type === 'segmentation') {
        assert.deepEqual(run.body.result.annotations.map((a: any) => [a.date, a.description]), [['2024-01-03', 'launch']]);
        const lines = csv.text.trim().split('\r\n');
        assert.equal(lines[0], 'series,2024-01-01,2024-01-02,2024-01-03,2024-01-04,2024-01-05,2024-01-06,2024-01-07');
        assert.equal(lines[1], `view,${direct.body.series[0].data.map((d: any) => d.value).join(',')}`);
        assert.equal(direct.body.series[0].data.reduce((s: number, d: any) => s + d.value, 0), 3);
      }
      if (type === 'funnel') {
        const lines = csv.text.trim().split('\r\n');
        assert.equal(lines.length, 3);
        assert.match(lines[1], /^0,view,3,/);
        assert.match(lines[2], /^1,signup,2,/);
      }
      if (type === 'retention') assert.match(csv.text, /^cohort,size,bucket_0,bucket_1\r\n2024-01-01,3,1,1\r\n/);
      if (type === 'flows') assert.match(csv.text, /^path,count\r\n/);
    }
    const json = await viewer.get(`/api/reports?projectId=${pid}`);
    const segReport = json.body.find((r: any) => r.type === 'segmentation');
    assert.equal((await viewer.get(`/api/reports/${segReport.id}/run?format=xml`)).status, 400);
  });

  it('IR reports run as POST /api/query runs them: a v2 trend, a v1 funnel (warnings kept), a retention analysis answers 501', async () => {
    const member = t.client(tenant.tokens.member);
    const trend = {
      v: 2, dateRange: { kind: 'absolute', from: '2024-01-01', to: '2024-01-14' }, filters: [{ key: 'country', op: 'set' }],
      metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }, { id: 'B', kind: 'event', event: 'view', aggregation: { op: 'unique' } }],
      breakdown: { property: 'country' }, analysis: { kind: 'trend', unit: 'week', formula: 'A / B' },
    };
    const v1 = {
      v: 1, dateRange: { from: '2024-01-01', to: '2024-01-14' }, metrics: [{ event: 'view' }, { event: 'signup' }],
      analysis: { kind: 'funnel', windowDays: 0 },
    };
    const retentionIr = {
      v: 2, dateRange: { kind: 'absolute', from: '2024-01-01', to: '2024-01-14' },
      metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } }, { id: 'B', kind: 'event', event: 'buy', aggregation: { op: 'unique' } }],
      analysis: { kind: 'retention', born: 'A', returning: 'B' },
    };
    for (const [type, query] of [['segmentation', trend], ['funnel', v1]] as const) {
      const rep = await member.post('/api/reports', { projectId: pid, name: `ir ${type}`, type, query });
      assert.equal(rep.status, 201, rep.text);
      const run = await t.client(tenant.tokens.viewer).post(`/api/reports/${rep.body.id}/run`);
      assert.equal(run.status, 200, run.text);
      const direct = await member.post('/api/query', { projectId: pid, query });
      assert.equal(direct.status, 200, direct.text);
      const { warnings = [], ...result } = direct.body;
      assert.deepEqual(run.body.result, result);
      assert.deepEqual(run.body.warnings, warnings);
      if (type === 'funnel') {
        assert.equal(run.body.warnings.length, 1, 'the v1 repair is reported');
        assert.deepEqual(run.body.result.steps.map((x: any) => x.count), [3, 2]);
      } else {
        assert.equal(run.body.result.kind, 'trend');
        assert.ok(run.body.result.series.some((x: any) => x.metricId === 'formula'));
        const csv = await member.get(`/api/reports/${rep.body.id}/run?format=csv`);
        assert.match(csv.text, /^series,2024-01-01,2024-01-08\r\n/);
      }
    }
    const ret = await member.post('/api/reports', { projectId: pid, name: 'ir retention', type: 'retention', query: retentionIr });
    assert.equal(ret.status, 201, ret.text);
    const r = await member.post(`/api/reports/${ret.body.id}/run`);
    assert.equal(r.status, 501, r.text);
  });

  it('a saved v1 report using the members every IR document has is stored, shown upgraded and runs', async () => {
    const member = t.client(tenant.tokens.member);
    const query = {
      v: 1, dateRange: { kind: 'absolute', from: '2024-01-01', to: '2024-01-14' },
      metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } }, { id: 'B', kind: 'event', event: 'signup', aggregation: { op: 'count' } }],
      analysis: { kind: 'trend', unit: 'week', note: 'kept by an old console' },
    };
    const rep = await member.post('/api/reports', { projectId: pid, name: 'v1 spec members', type: 'segmentation', query });
    assert.equal(rep.status, 201, rep.text);
    const got = (await member.get(`/api/reports/${rep.body.id}`)).body;
    assert.deepEqual(got.query, query, 'stored as sent');
    assert.deepEqual(got.queryV1.metrics.map((m: any) => [m.id, m.kind, m.aggregation.op]), [['A', 'event', 'unique'], ['B', 'event', 'count']]);
    assert.deepEqual(got.queryV1.dateRange, query.dateRange);
    assert.deepEqual(got.queryWarnings, ['analysis.note: a trend analysis has no such member; dropped']);
    const run = await member.post(`/api/reports/${rep.body.id}/run`);
    assert.equal(run.status, 200, run.text);
    const direct = await member.post('/api/query', { projectId: pid, query });
    assert.equal(direct.status, 200, direct.text);
    const { warnings, ...result } = direct.body;
    assert.deepEqual(run.body.result, result);
    assert.deepEqual(run.body.warnings, warnings);
    assert.deepEqual(run.body.result.series.map((x: any) => x.metricId), ['A', 'B']);
    await member.delete(`/api/reports/${rep.body.id}`);
  });

  it('a metric report runs its calculated metric; a metric deleted later fails the run with 404, not 5xx', async () => {
    const member = t.client(tenant.tokens.member);
    const def = await member.post('/api/definitions/metrics', {
      projectId: pid, name: 'views per signup',
      metrics: [{ id: 'A', event: 'view', type: 'total' }, { id: 'B', event: 'signup', type: 'total' }], formula: 'A / B',
    });
    assert.equal(def.status, 201, def.text);
    const query = { definitionId: def.body.id, from: '2024-01-01', to: '2024-01-07', unit: 'week' };
    const rep = await member.post('/api/reports', { projectId: pid, name: 'ratio', type: 'metric', query });
    assert.equal(rep.status, 201, rep.text);
    const run = await member.post(`/api/reports/${rep.body.id}/run`);
    const direct = await member.post('/api/query/metric', { projectId: pid, ...query });
    assert.equal(run.status, 200, run.text);
    const { annotations, ...result } = run.body.result;
    assert.deepEqual(result, direct.body);
    assert.ok(Array.isArray(annotations));
    await member.delete(`/api/definitions/metrics/${def.body.id}`);
    const gone = await member.post(`/api/reports/${rep.body.id}/run`);
    assert.equal(gone.status, 404, gone.text);
  });

  it('NUL characters in stored text are a 400 naming the member on both stores (PostgreSQL text cannot hold them)', async () => {
    const member = t.client(tenant.tokens.member);
    // A stored query is refused too: it would reach the engine, which takes no NUL, on every run.
    const inQuery = await member.post('/api/reports', { projectId: pid, name: 'nul', type: 'segmentation', query: { ...seg, event: 'v\u0000' } });
    assert.equal(inQuery.status, 400, inQuery.text);
    assert.match(inQuery.body.error, /^query\.event: must not contain NUL/);
    const rep = await member.post('/api/reports', { projectId: pid, name: 'nul', type: 'segmentation', query: seg });
    assert.equal(rep.status, 201, rep.text);
    const cases: Array<[string, string, unknown, RegExp]> = [
      ['POST', `/api/reports?projectId=${pid}`, { name: 'a\u0000', type: 'segmentation', query: seg }, /^name: must not contain NUL/],
      ['PUT', `/api/reports/${rep.body.id}`, { description: 'd\u0000' }, /^description: must not contain NUL/],
      ['POST', `/api/boards?projectId=${pid}`, { name: 'b', cards: [{ cardType: 'text', text: 'x\u0000' }] }, /^cards\.0\.text: must not contain NUL/],
      ['POST', `/api/annotations?projectId=${pid}`, { date: '2024-01-01', description: 'x\u0000' }, /^description: must not contain NUL/],
      ['PUT', `/api/lexicon/events/a%00b?projectId=${pid}`, {}, /^name: must not contain NUL/],
      ['PUT', `/api/lexicon/properties/p?projectId=${pid}`, { tags: ['t\u0000'] }, /^tags\.0: must not contain NUL/],
    ];
    for (const [method, path, body, re] of cases) {
      const r = await member.request(method, path, body);
      assert.equal(r.status, 400, `${method} ${path}: ${r.text}`);
      assert.match(r.body.error, re);
    }
    await member.delete(`/api/reports/${rep.body.id}`);
  });

  it('ids past a 32-bit column (PostgreSQL integer) are absent, not a 5xx', async () => {
    const member = t.client(tenant.tokens.member);
    for (const path of ['/api/reports/2147483648', '/api/reports/9007199254740991/run', '/api/boards/2147483648', '/api/annotations/9007199254740991']) {
      assert.equal((await member.get(path)).status, 404, path);
    }
    const card = await member.post('/api/boards', { projectId: pid, name: 'x', cards: [{ reportId: 2147483648 }] });
    assert.equal(card.status, 400, card.text);
    assert.match(card.body.error, /^cards\.0\.reportId: no report 2147483648/);
    const metric = await member.post('/api/reports', { projectId: pid, name: 'x', type: 'metric', query: { definitionId: 2147483648, from: '2024-01-01', to: '2024-01-02', unit: 'day' } });
    assert.equal(metric.status, 400, metric.text);
    assert.match(metric.body.error, /^query\.definitionId: /);
  });

  it("tenancy: another organisation's report is 404 everywhere; a foreign projectId is 403", async () => {
    const rep = await t.client(tenant.tokens.member).post('/api/reports', { projectId: pid, name: 'mine', type: 'segmentation', query: seg });
    const foreign = t.client(other.tokens.owner);
    for (const [m, path] of [['get', ''], ['put', ''], ['delete', ''], ['post', '/run'], ['get', '/run?format=csv']] as const) {
      const r = await foreign.request(m.toUpperCase(), `/api/reports/${rep.body.id}${path}`, m === 'put' ? { name: 'stolen' } : undefined);
      assert.equal(r.status, 404, `${m} ${path}`);
    }
    assert.equal((await foreign.get(`/api/reports?projectId=${pid}`)).status, 403);
    assert.equal((await foreign.post('/api/reports', { projectId: pid, name: 'x', type: 'segmentation', query: seg })).status, 403);
    assert.equal((await t.client(tenant.tokens.viewer).get(`/api/reports/${rep.body.id}`)).body.name, 'mine');
  });
});
