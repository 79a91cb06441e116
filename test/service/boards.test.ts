import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { sharedService, type Tenant, type TestService } from '../support/service.js';
import { reportsWorld } from '../support/reports.js';

const seg = { event: 'view', from: '2024-01-01', to: '2024-01-14', unit: 'day', type: 'total' };
const funnel = { steps: ['view', 'signup'], from: '2024-01-01', to: '2024-01-14', windowDays: 7 };
const retention = { bornEvent: 'view', returnEvent: 'buy', from: '2024-01-01', to: '2024-01-14', unit: 'week', buckets: 2 };

forEachBackend('boards', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  let pid: number;
  let reports: Record<string, number>;
  let foreignReport: number;
  let otherProjectReport: number;
  reportsWorld(backend, 'brd', (w) => ({ t, tenant, other, pid } = w), sharedService);
  before(async function () {
    this.timeout(60_000);
    const member = t.client(tenant.tokens.member);
    reports = {};
    for (const [name, type, query] of [['views', 'segmentation', seg], ['signup funnel', 'funnel', funnel], ['buyers return', 'retention', retention]] as const) {
      const r = await member.post('/api/reports', { projectId: pid, name, type, query });
      assert.equal(r.status, 201, r.text);
      reports[name] = r.body.id;
    }
    foreignReport = (await t.client(other.tokens.member).post('/api/reports', { projectId: other.project.id, name: 'theirs', type: 'segmentation', query: seg })).body.id;
    const second = await t.client(tenant.tokens.admin).post('/api/projects', { name: 'second' });
    assert.equal(second.status, 201, second.text);
    otherProjectReport = (await member.post('/api/reports', { projectId: second.body.id, name: 'elsewhere', type: 'segmentation', query: seg })).body.id;
  });

  it('create and read: cards in layout order with defaults (span 6, medium), report cards carry their report', async () => {
    const member = t.client(tenant.tokens.member);
    const created = await member.post('/api/boards', {
      projectId: pid, name: 'Growth',
      cards: [
        { reportId: reports.views, span: 12, height: 'tall' },
        { cardType: 'text', text: 'Read me first\nsecond line', position: 0 },
        { cardType: 'report', reportId: reports['signup funnel'], position: 5 },
      ],
    });
    assert.equal(created.status, 201, created.text);
    const b = created.body;
    assert.equal(b.name, 'Growth');
    assert.equal(b.date_range, null);
    assert.deepEqual(b.filters, []);
    assert.equal(b.created_by, (await member.get('/api/account')).body.user.id);
    assert.deepEqual(b.cards.map((c: any) => [c.card_type, c.position, c.span, c.height, c.report_id, c.text]), [
      ['report', 0, 12, 'tall', reports.views, null],
      ['text', 0, 6, 'medium', null, 'Read me first\nsecond line'],
      ['report', 5, 6, 'medium', reports['signup funnel'], null],
    ]);
    assert.equal(b.cards[0].report.name, 'views');
    assert.equal(b.cards[0].report.type, 'segmentation');
    assert.ok(b.cards.every((c: any) => c.board_id === b.id));
    const read = await t.client(tenant.tokens.viewer).get(`/api/boards/${b.id}`);
    assert.deepEqual(read.body.cards.map((c: any) => c.id), b.cards.map((c: any) => c.id));
    const list = await t.client(tenant.tokens.viewer).get(`/api/boards?projectId=${pid}`);
    assert.equal(list.status, 200);
    const item = list.body.find((x: any) => x.id === b.id);
    assert.equal(item.card_count, 3);
    assert.equal(item.cards, undefined);
    assert.deepEqual(item.preview, [
      { card_type: 'report', report_type: 'segmentation', label: 'views' },
      { card_type: 'text', report_type: null, label: 'Read me first' },
      { card_type: 'report', report_type: 'funnel', label: 'signup funnel' },
    ]);
    await member.delete(`/api/boards/${b.id}`);
  });

  it('PUT replaces the card set in one transaction; any bad card (span 5, foreign report) is 400 and nothing changes', async () => {
    const member = t.client(tenant.tokens.member);
    const b = (await member.post('/api/boards', { projectId: pid, name: 'Ops', cards: [{ reportId: reports.views }, { cardType: 'text', text: 'note' }] })).body;
    const snapshot = (await member.get(`/api/boards/${b.id}`)).body;
    const bad: Array<[unknown[], RegExp]> = [
      [[{ reportId: reports.views }, { reportId: reports.views, span: 5 }], /^cards\.1\.span: /],
      [[{ reportId: reports.views }, { reportId: foreignReport }], /^cards\.1\.reportId: no report \d+ in this board's project/],
      [[{ reportId: otherProjectReport }], /^cards\.0\.reportId: no report/],
      [[{ reportId: 987654 }], /^cards\.0\.reportId: no report/],
      [[{ cardType: 'report' }], /^cards\.0\.reportId: required when cardType is report/],
      [[{ cardType: 'text' }], /^cards\.0\.text: required when cardType is text/],
      [[{ cardType: 'text', text: 'x', reportId: reports.views }], /^cards\.0\.reportId: /],
      [[{ reportId: reports.views, height: 'huge' }], /^cards\.0\.height: /],
      [[{ reportId: reports.views, position: -1 }], /^cards\.0\.position: /],
      [[{ reportId: reports.views, colour: 'red' }], /^cards\.0: /],
    ];
    for (const [cards, re] of bad) {
      const r = await member.put(`/api/boards/${b.id}`, { name: 'renamed', cards });
      assert.equal(r.status, 400, `${JSON.stringify(cards)} -> ${r.text}`);
      assert.match(r.body.error, re, JSON.stringify(cards));
      assert.deepEqual((await member.get(`/api/boards/${b.id}`)).body, snapshot, 'nothing written');
    }
    for (const body of [{ date_range: { kind: 'absolute', from: '2024-01-10', to: '2024-01-01' } }, { date_range: { kind: 'preset', preset: '2w' } }, { filters: [{ key: 'k', op: 'eq' }] }]) {
      const r = await member.put(`/api/boards/${b.id}`, body);
      assert.equal(r.status, 400, `${JSON.stringify(body)} -> ${r.text}`);
      assert.match(r.body.error, /^(date_range|filters)\./);
    }
    const spanOnCreate = await member.post('/api/boards', { projectId: pid, name: 'nope', cards: [{ reportId: reports.views, span: 5 }] });
    assert.equal(spanOnCreate.status, 400);
    assert.ok(!(await member.get(`/api/boards?projectId=${pid}`)).body.some((x: any) => x.name === 'nope'));

    const replaced = await member.put(`/api/boards/${b.id}`, { cards: [{ cardType: 'text', text: 'only this', span: 4, height: 'short' }, { reportId: reports['buyers return'], span: 8 }] });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body.cards.map((c: any) => [c.card_type, c.position, c.span, c.height]), [['text', 0, 4, 'short'], ['report', 1, 8, 'medium']]);
    assert.ok(replaced.body.cards.every((c: any) => !snapshot.cards.some((o: any) => o.id === c.id)), 'the old cards are gone');
    const renamed = await member.put(`/api/boards/${b.id}`, { name: 'Ops 2' });
    assert.equal(renamed.body.cards.length, 2, 'a PUT without cards keeps them');
    const cleared = await member.put(`/api/boards/${b.id}`, { cards: [] });
    assert.deepEqual(cleared.body.cards, []);
    await member.delete(`/api/boards/${b.id}`);
  });

  it("a board run's numbers change when the board's date range does, and match the reports run alone over that range", async () => {
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    const b = (await member.post('/api/boards', {
      projectId: pid, name: 'Run me', date_range: { kind: 'absolute', from: '2024-01-01', to: '2024-01-02' },
      cards: [{ cardType: 'text', text: 'intro' }, { reportId: reports.views }, { reportId: reports['signup funnel'] }, { reportId: reports['buyers return'] }],
    })).body;
    const total = (r: any) => r.series.reduce((s: number, x: any) => s + x.data.reduce((a: number, d: any) => a + d.value, 0), 0);
    const alone = async (query: Record<string, unknown>, path: string, from: string, to: string) =>
      (await viewer.post(`/api/query/${path}`, { projectId: pid, ...query, from, to })).body;
    const check = async (from: string, to: string) => {
      const run = await viewer.post(`/api/boards/${b.id}/run`);
      assert.equal(run.status, 200, run.text);
      assert.deepEqual(run.body.range, { from, to });
      assert.equal(run.body.cards.length, 3, 'text cards do not run');
      const [s, f, r] = run.body.cards;
      assert.deepEqual([s.status, f.status, r.status], ['ok', 'ok', 'ok']);
      const { annotations, ...segResult } = s.result;
      assert.ok(Array.isArray(annotations));
      const { annotations: _a, ...segAlone } = await alone(seg, 'segmentation', from, to);
      assert.deepEqual(segResult, segAlone);
      assert.deepEqual(f.result, await alone(funnel, 'funnel', from, to));
      assert.deepEqual(r.result, await alone(retention, 'retention', from, to));
      return { views: total(segResult), funnel0: f.result[0].count, cohorts: r.result.length };
    };
    const narrow = await check('2024-01-01', '2024-01-02');
    await member.put(`/api/boards/${b.id}`, { date_range: { kind: 'absolute', from: '2024-01-01', to: '2024-01-14' } });
    const wide = await check('2024-01-01', '2024-01-14');
    assert.deepEqual(narrow, { views: 2, funnel0: 2, cohorts: 1 });
    assert.deepEqual(wide, { views: 4, funnel0: 3, cohorts: 2 });
    // The reports' own ranges are untouched by the board.
    assert.deepEqual((await viewer.get(`/api/reports/${reports.views}`)).body.query, seg);
    await member.delete(`/api/boards/${b.id}`);
  });

  it('IR report cards take the board range as their dateRange and the board filters in their global filters', async () => {
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    const trend = {
      v: 2, dateRange: { kind: 'preset', preset: '7d' },
      metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day' },
    };
    const irFunnel = {
      v: 2, dateRange: { kind: 'preset', preset: '7d' }, filters: [{ key: 'country', op: 'neq', value: 'xx' }],
      metrics: [{ id: 'A', kind: 'event', event: 'view', aggregation: { op: 'unique' } }, { id: 'B', kind: 'event', event: 'buy', aggregation: { op: 'unique' } }],
      analysis: { kind: 'funnel', steps: ['A', 'B'] },
    };
    const tr = (await member.post('/api/reports', { projectId: pid, name: 'ir trend', type: 'segmentation', query: trend })).body.id;
    const fu = (await member.post('/api/reports', { projectId: pid, name: 'ir funnel', type: 'funnel', query: irFunnel })).body.id;
    const filters = [{ key: 'country', op: 'eq', value: 'fr' }];
    const b = (await member.post('/api/boards', { projectId: pid, name: 'IR', filters, cards: [{ reportId: tr }, { reportId: fu }] })).body;
    const sum = (r: any) => r.series[0].data.reduce((a: number, v: number) => a + v, 0);
    for (const [from, to, views] of [['2024-01-01', '2024-01-07', 2], ['2024-01-01', '2024-01-14', 3]] as const) {
      const dateRange = { kind: 'absolute', from, to };
      await member.put(`/api/boards/${b.id}`, { date_range: dateRange });
      const run = await viewer.post(`/api/boards/${b.id}/run`);
      assert.equal(run.status, 200, run.text);
      const [c1, c2] = run.body.cards;
      assert.deepEqual([c1.status, c2.status], ['ok', 'ok'], run.text);
      const alone1 = (await viewer.post('/api/query', { projectId: pid, query: { ...trend, dateRange, filters } })).body;
      const alone2 = (await viewer.post('/api/query', { projectId: pid, query: { ...irFunnel, dateRange, filters: [...irFunnel.filters, ...filters] } })).body;
      assert.deepEqual(c1.result, alone1);
      assert.deepEqual(c2.result, alone2);
      assert.deepEqual(c1.result.range, { from, to });
      assert.equal(sum(c1.result), views, `fr views ${from}..${to}`);
    }
    await member.delete(`/api/boards/${b.id}`);
    for (const id of [tr, fu]) await member.delete(`/api/reports/${id}`);
  });

  it('a run may replace the range and add filters for that run only (a viewer explores, nothing is saved)', async () => {
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    const b = (await member.post('/api/boards', {
      projectId: pid, name: 'Explore', date_range: { kind: 'absolute', from: '2024-01-01', to: '2024-01-14' }, cards: [{ reportId: reports.views }],
    })).body;
    const views = (run: any) => run.body.cards[0].result.series.reduce((a: number, x: any) => a + x.data.reduce((c: number, d: any) => c + d.value, 0), 0);
    const saved = await viewer.post(`/api/boards/${b.id}/run`);
    const narrow = await viewer.post(`/api/boards/${b.id}/run`, { date_range: { kind: 'absolute', from: '2024-01-01', to: '2024-01-02' } });
    const fr = await viewer.post(`/api/boards/${b.id}/run`, { filters: [{ key: 'country', op: 'eq', value: 'fr' }] });
    const own = await viewer.post(`/api/boards/${b.id}/run`, { date_range: null });
    assert.equal(narrow.status, 200, narrow.text);
    assert.deepEqual([views(saved), views(narrow), views(fr), views(own)], [4, 2, 3, 4]);
    assert.deepEqual(narrow.body.range, { from: '2024-01-01', to: '2024-01-02' });
    assert.equal(own.body.range, null, "null runs each report over its own range");
    const bad = await viewer.post(`/api/boards/${b.id}/run`, { date_range: { kind: 'absolute', from: '2024-01-03', to: '2024-01-01' } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error, /^date_range\.to: /);
    const after = (await viewer.get(`/api/boards/${b.id}`)).body;
    assert.deepEqual([after.date_range, after.filters, after.updated_at], [b.date_range, [], b.updated_at], 'nothing saved');
    await member.delete(`/api/boards/${b.id}`);
  });

  it('board filters join each report; a card the board cannot run answers its own error; CSV per card', async () => {
    const member = t.client(tenant.tokens.member);
    const viewer = t.client(tenant.tokens.viewer);
    const tooWide = (await member.post('/api/reports', {
      projectId: pid, name: 'every filter', type: 'segmentation', query: { ...seg, filters: Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, op: 'not_set' })) },
    })).body.id;
    const b = (await member.post('/api/boards', {
      projectId: pid, name: 'France', filters: [{ key: 'country', op: 'eq', value: 'fr' }],
      cards: [{ reportId: reports.views }, { reportId: tooWide }, { reportId: reports['buyers return'] }, { cardType: 'text', text: 'x' }],
    })).body;
    const run = await viewer.post(`/api/boards/${b.id}/run`);
    assert.equal(run.status, 200, run.text);
    assert.equal(run.body.range, null);
    const [s, wideCard, r] = run.body.cards;
    assert.equal(s.status, 'ok');
    const { annotations: _x, ...fr } = (await viewer.post('/api/query/segmentation', { projectId: pid, ...seg, filters: [{ key: 'country', op: 'eq', value: 'fr' }] })).body;
    const { annotations: _y, ...result } = s.result;
    assert.deepEqual(result, fr);
    assert.equal(wideCard.status, 'error');
    assert.equal(wideCard.error.status, 400);
    assert.match(wideCard.error.message, /exceed 20/);
    assert.equal(r.status, 'ok');
    assert.deepEqual(r.warnings, ['board filters do not apply to retention reports']);

    const csv = await viewer.get(`/api/boards/${b.id}/run?format=csv&cardId=${s.card_id}`);
    assert.equal(csv.status, 200, csv.text);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    assert.match(csv.headers.get('content-disposition') ?? '', new RegExp(`board-${b.id}-card-${s.card_id}\\.csv`));
    const rows = csv.text.trim().split('\r\n');
    assert.equal(rows.length, 2);
    assert.equal(rows[1].split(',').slice(1).reduce((a, v) => a + Number(v), 0), fr.series[0].data.reduce((a: number, d: any) => a + d.value, 0));
    assert.equal((await viewer.get(`/api/boards/${b.id}/run?format=csv`)).status, 400, 'csv needs a card');
    assert.equal((await viewer.get(`/api/boards/${b.id}/run?format=csv&cardId=${wideCard.card_id}`)).status, 400, "the card's own error");
    assert.equal((await viewer.get(`/api/boards/${b.id}/run?format=csv&cardId=999999`)).status, 404);
    const one = await viewer.get(`/api/boards/${b.id}/run?cardId=${r.card_id}`);
    assert.deepEqual(one.body.cards.map((c: any) => c.card_id), [r.card_id]);

    // A report deleted from under a board takes its card with it.
    await member.delete(`/api/reports/${tooWide}`);
    assert.equal((await viewer.get(`/api/boards/${b.id}`)).body.cards.length, 3);
    await member.delete(`/api/boards/${b.id}`);
    assert.equal((await viewer.get(`/api/reports/${reports.views}`)).status, 200, 'deleting a board keeps its reports');
  });

  it("tenancy: another organisation's board is 404 on every id route", async () => {
    const b = (await t.client(tenant.tokens.member).post('/api/boards', { projectId: pid, name: 'private', cards: [{ reportId: reports.views }] })).body;
    const foreign = t.client(other.tokens.owner);
    for (const [m, path, body] of [['GET', '', undefined], ['PUT', '', { name: 'x' }], ['DELETE', '', undefined], ['POST', '/run', undefined], ['GET', '/run?format=csv&cardId=1', undefined]] as const) {
      assert.equal((await foreign.request(m, `/api/boards/${b.id}${path}`, body)).status, 404, `${m} ${path}`);
    }
    const theirs = (await t.client(other.tokens.member).post('/api/boards', { projectId: other.project.id, name: 'theirs' })).body;
    const steal = await t.client(other.tokens.member).put(`/api/boards/${theirs.id}`, { cards: [{ reportId: reports.views }] });
    assert.equal(steal.status, 400, 'a card cannot point at another organisation\'s report');
    assert.equal((await t.client(tenant.tokens.viewer).get(`/api/boards/${b.id}`)).body.name, 'private');
  });
});
