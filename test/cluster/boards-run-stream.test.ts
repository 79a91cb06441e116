import assert from 'node:assert/strict';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { waitFor } from '../support/processes.js';
import { loadDataset } from '../support/reference/harness.js';
import { REPORT_EVENTS } from '../support/reports.js';
import type { QueryExecutor } from '../../apps/server/src/query/executor.js';

const seg = (event: string, extra: Record<string, unknown> = {}) => ({ event, from: '2024-01-01', to: '2024-01-14', unit: 'day', type: 'total', ...extra });
/** 4,368 hours: refused (400 query too large) by a service started with QUERY_MAX_CELLS 2000. */
const hourly = { event: 'view', from: '2024-01-01', to: '2024-06-30', unit: 'hour', type: 'total' };
const total = (card: any) => card.result.series.reduce((s: number, x: any) => s + x.data.reduce((a: number, d: any) => a + d.value, 0), 0);

interface Streamed {
  status: number;
  type: string | null;
  lines: any[];
}

/** POST /api/boards/{id}/run with Accept: application/x-ndjson, every line parsed (or the refusal's JSON body). */
async function stream(t: TestService, token: string, boardId: number, body: unknown = {}, onLine?: (line: any, abort: () => void) => void): Promise<Streamed> {
  const ctl = new AbortController();
  const res = await fetch(`${t.url}/api/boards/${boardId}/run`, {
    method: 'POST', signal: ctl.signal,
    headers: { authorization: `Bearer ${token}`, accept: 'application/x-ndjson', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const type = res.headers.get('content-type');
  if (!res.ok) return { status: res.status, type, lines: [await res.json()] };
  const lines: any[] = [];
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      rest += value ?? '';
      let nl: number;
      while ((nl = rest.indexOf('\n')) >= 0) {
        const line = JSON.parse(rest.slice(0, nl));
        rest = rest.slice(nl + 1);
        lines.push(line);
        onLine?.(line, () => ctl.abort());
      }
      if (done) break;
    }
  } catch (err) {
    if (!ctl.signal.aborted) throw err;
  }
  assert.equal(rest, '', 'every line ends with a newline');
  return { status: res.status, type, lines };
}

const cardsOf = (s: Streamed) => s.lines.filter((l) => l.kind === 'card').map((l) => l.card);

forEachBackend('board run: one streamed request, computed_at, Refresh', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let other: Tenant;
  let pid: number;
  let board: number;
  let live: number;
  let many: number;
  let manyCards = 0;
  const reports: Record<string, number> = {};

  const track = async (event: string, distinctId: string, time: number) => {
    const r = await t.anon.post('/track', { event, properties: { distinct_id: distinctId, time, $insert_id: `${distinctId}-${time}` } }, { headers: { 'x-service-token': tenant.project.token } });
    assert.equal(r.status, 200, r.text);
    await waitFor(`${distinctId} stored`, async () => (await t.svc.deps.events.idsWithEvents(pid, [distinctId])).size === 1, 20_000);
  };

  before(async function () {
    this.timeout(90_000);
    // The fresh bound is long: an answer reaching today is served from the cache throughout, unless refreshed.
    t = await startTestService(backend, { QUERY_MAX_CELLS: '2000', RESULTS_CACHE_FRESH_MS: '600000' });
    tenant = await createTenant(t, 'stream');
    other = await createTenant(t, 'stream-other');
    pid = tenant.project.id;
    await loadDataset(t.svc.deps, pid, { events: REPORT_EVENTS, links: [] });
    const member = t.client(tenant.tokens.member);
    const save = async (name: string, type: string, query: unknown) => {
      const r = await member.post('/api/reports', { projectId: pid, name, type, query });
      assert.equal(r.status, 201, r.text);
      return (reports[name] = r.body.id as number);
    };
    await save('views', 'segmentation', seg('view'));
    await save('funnel', 'funnel', { steps: ['view', 'signup'], from: '2024-01-01', to: '2024-01-14', windowDays: 7 });
    await save('hourly', 'segmentation', hourly);
    await save('buys', 'segmentation', seg('buy'));
    const b = await member.post('/api/boards', {
      projectId: pid, name: 'Stream',
      cards: [{ reportId: reports.views }, { cardType: 'text', text: 'Notes\nbody' }, { reportId: reports.funnel }, { reportId: reports.hourly }, { reportId: reports.buys }],
    });
    assert.equal(b.status, 201, b.text);
    board = b.body.id;
    const l = await member.post('/api/boards', { projectId: pid, name: 'Live', date_range: { kind: 'preset', preset: '7d' }, cards: [{ reportId: reports.views }] });
    assert.equal(l.status, 201, l.text);
    live = l.body.id;
    // Twelve distinct queries, none shared with another board (a cached one would answer at once), for the disconnect case.
    const ids: number[] = [];
    for (const [i, unit] of (['day', 'week'] as const).entries()) {
      for (const event of ['view', 'signup', 'buy']) {
        for (const type of ['total', 'unique']) ids.push(await save(`many ${event} ${type} ${unit} ${i}`, 'segmentation', seg(event, { unit, type, from: '2023-12-20' })));
      }
    }
    const m = await member.post('/api/boards', { projectId: pid, name: 'Many', cards: ids.map((reportId) => ({ reportId })) });
    assert.equal(m.status, 201, m.text);
    many = m.body.id;
    manyCards = ids.length;
  });
  after(async function () {
    this.timeout(60_000);
    await t?.close();
  });

  it('streams the board first, one line per report card, then a summary; the erroring card fails alone', async function () {
    this.timeout(30_000);
    const s = await stream(t, tenant.tokens.member, board);
    assert.equal(s.status, 200);
    assert.match(s.type ?? '', /^application\/x-ndjson/);
    const [first, ...rest] = s.lines;
    assert.equal(first.kind, 'board');
    assert.equal(first.board.id, board);
    assert.equal(first.board.name, 'Stream');
    assert.deepEqual(first.board.cards.map((c: any) => c.card_type), ['report', 'text', 'report', 'report', 'report'], 'the layout, text cards included');
    const last = rest.at(-1);
    assert.equal(last.kind, 'done');
    assert.deepEqual([last.board_id, last.cards, last.errors], [board, 4, 1]);
    const cards = cardsOf(s);
    assert.equal(cards.length, 4);
    assert.deepEqual(cards.map((c) => c.report_id).sort(), [reports.views, reports.funnel, reports.hourly, reports.buys].sort(), 'each report card once');
    const broken = cards.find((c) => c.report_id === reports.hourly);
    assert.equal(broken.status, 'error');
    assert.equal(broken.error.status, 400);
    assert.match(broken.error.error, /query too large/);
    for (const c of cards.filter((x) => x.report_id !== reports.hourly)) {
      assert.equal(c.status, 'ok', JSON.stringify(c));
      assert.equal(typeof c.computed_at, 'number', 'a fresh answer says when it was computed');
      assert.ok(c.computed_at <= Date.now() && c.computed_at >= first.ran_at - 1000, `${c.computed_at} vs ${first.ran_at}`);
    }
    assert.equal(total(cards.find((c) => c.report_id === reports.views)), 4);
  });

  it('answers cached cards first, each with cached_at equal to its computed_at; the JSON answer is unchanged for other Accept values', async function () {
    this.timeout(30_000);
    // A fresh board over a range no other test used, with one card cached beforehand.
    const member = t.client(tenant.tokens.member);
    const range = { kind: 'absolute', from: '2024-01-02', to: '2024-01-13' };
    const b = await member.post('/api/boards', { projectId: pid, name: 'Order', date_range: range, cards: [{ reportId: reports.views }, { reportId: reports.funnel }, { reportId: reports.buys }] });
    const cards = b.body.cards.map((c: any) => c.id);
    const primed = await member.post(`/api/boards/${b.body.id}/run`, { card_id: cards[2] });
    assert.equal(primed.status, 200, primed.text);
    assert.deepEqual(primed.body.cards.map((c: any) => c.card_id), [cards[2]]);
    assert.equal(primed.body.cards[0].cached_at, undefined);
    const s = await stream(t, tenant.tokens.member, b.body.id);
    const answered = cardsOf(s);
    assert.equal(answered[0].card_id, cards[2], 'the cached card comes first');
    assert.equal(answered[0].cached_at, primed.body.cards[0].computed_at);
    assert.equal(answered[0].computed_at, answered[0].cached_at);
    for (const c of answered.slice(1)) assert.equal(c.cached_at, undefined);
    // The JSON answer: layout order, application/json, for no Accept, JSON, or anything else.
    for (const accept of [undefined, 'application/json', '*/*', 'text/html']) {
      const r = await member.post(`/api/boards/${b.body.id}/run`, {}, accept ? { headers: { accept } } : {});
      assert.equal(r.status, 200, r.text);
      assert.match(r.headers.get('content-type') ?? '', /^application\/json/, String(accept));
      assert.deepEqual(r.body.cards.map((c: any) => c.card_id), cards);
      assert.ok(r.body.cards.every((c: any) => typeof c.cached_at === 'number' && c.computed_at === c.cached_at));
      assert.equal(r.body.refresh, undefined);
    }
  });

  it('Refresh recomputes bypassing the cache (new events today show after it, not before), at most once per 30 s per caller', async function () {
    this.timeout(60_000);
    const member = t.client(tenant.tokens.member);
    const run = async (body: Record<string, unknown> = {}, client = member) => {
      const r = await client.post(`/api/boards/${live}/run`, body);
      assert.equal(r.status, 200, r.text);
      return r.body;
    };
    const first = (await run()).cards[0];
    const cached = (await run()).cards[0];
    assert.equal(typeof cached.cached_at, 'number');
    await track('view', 'stream-today', Date.now());
    const stale = (await run()).cards[0];
    assert.equal(stale.cached_at, cached.cached_at, 'today\'s new event is not read before the fresh bound');
    assert.equal(total(stale), total(first));
    const refreshed = await run({ refresh: true });
    assert.deepEqual(refreshed.refresh.refused, false);
    assert.ok(refreshed.refresh.next_allowed_at >= Date.now() + 25_000, JSON.stringify(refreshed.refresh));
    assert.equal(refreshed.cards[0].cached_at, undefined, 'computed again');
    assert.ok(refreshed.cards[0].computed_at > cached.cached_at);
    assert.equal(total(refreshed.cards[0]), total(first) + 1);
    // The new answer is stored: the next run without refresh serves it.
    const after = (await run()).cards[0];
    assert.equal(after.cached_at, refreshed.cards[0].computed_at);
    // A second refresh at once is refused: answered from the cache, saying when the next is allowed.
    const refused = await run({ refresh: true });
    assert.equal(refused.refresh.refused, true);
    assert.ok(refused.refresh.next_allowed_at > Date.now() && refused.refresh.next_allowed_at <= Date.now() + 30_000, JSON.stringify(refused.refresh));
    assert.equal(refused.cards[0].cached_at, refreshed.cards[0].computed_at);
    // The stream says the same on its first and last lines.
    const s = await stream(t, tenant.tokens.member, live, { refresh: true });
    assert.equal(s.lines[0].refresh.refused, true);
    assert.equal(s.lines.at(-1).refresh.refused, true);
    assert.equal(cardsOf(s)[0].cached_at, refreshed.cards[0].computed_at);
    // Another person's refresh of the same board is theirs to spend.
    await track('view', 'stream-today-2', Date.now());
    const viewer = await run({ refresh: true }, t.client(tenant.tokens.viewer));
    assert.equal(viewer.refresh.refused, false);
    assert.equal(total(viewer.cards[0]), total(first) + 2);
    // One card's refresh is counted apart from the board's.
    const card = viewer.cards[0].card_id;
    const one = await run({ refresh: true, card_id: card });
    assert.equal(one.refresh.refused, false);
    assert.deepEqual(one.cards.map((c: any) => c.card_id), [card]);
  });

  it('a card failing unexpectedly answers 500 in its own line; the stream goes on and the status stays 200', async function () {
    this.timeout(30_000);
    const executor = t.svc.services.executor as QueryExecutor & { analysis: QueryExecutor['analysis'] };
    const analysis = executor.analysis;
    executor.analysis = async function (project, def, body, range, via) {
      if ((body as { event?: string }).event === 'buy') throw new Error('engine went away');
      return analysis.call(this, project, def, body, range, via);
    };
    try {
      // A Refresh (the owner's, not yet spent on this board): every card computes, none is served from
      // the closed days earlier runs kept (results-cache/partials.ts), so the patched analysis runs.
      const s = await stream(t, tenant.tokens.owner, board, { date_range: { kind: 'absolute', from: '2024-01-03', to: '2024-01-12' }, refresh: true });
      assert.equal(s.status, 200);
      const cards = cardsOf(s);
      const buys = cards.find((c) => c.report_id === reports.buys);
      assert.deepEqual(buys.error, { status: 500, error: 'internal error', message: 'the engine failed to run this card' });
      assert.equal(cards.find((c) => c.report_id === reports.views).status, 'ok');
      assert.equal(cards.find((c) => c.report_id === reports.funnel).status, 'ok');
      assert.equal(s.lines.at(-1).kind, 'done');
      assert.equal(s.lines.at(-1).errors, 1, 'the buys card (the hourly card fits this range)');
    } finally {
      executor.analysis = analysis;
    }
  });

  it('a client that goes away mid-stream stops the cards not started yet', async function () {
    this.timeout(60_000);
    const executor = t.svc.services.executor as QueryExecutor & { analysis: QueryExecutor['analysis'] };
    const analysis = executor.analysis;
    let started = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    executor.analysis = async function (...args) {
      started++;
      await held;
      return analysis.apply(this, args);
    };
    try {
      const s = stream(t, tenant.tokens.member, many, {}, (line, abort) => {
        if (line.kind === 'board') void waitFor('4 cards computing', async () => started === 4, 20_000).then(abort);
      });
      const out = await s;
      assert.deepEqual(out.lines.map((l) => l.kind), ['board'], `the client left after the board line: ${JSON.stringify(out.lines.slice(1))}`);
      // The server notices the closed connection; then the four computing cards finish.
      await new Promise((r) => setTimeout(r, 1000));
      release();
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(started, 4, 'no card started after the client left');
    } finally {
      release();
      executor.analysis = analysis;
    }
    // The four answers computed are stored; the others never ran.
    const after = await t.client(tenant.tokens.member).post(`/api/boards/${many}/run`, {});
    assert.equal(after.status, 200, after.text);
    assert.equal(after.body.cards.filter((c: any) => c.cached_at !== undefined).length, 4);
    assert.equal(after.body.cards.length, manyCards);
  });

  it('authorization: any role runs the stream, another organisation gets 404 before any line, no credential 401', async function () {
    this.timeout(30_000);
    const viewer = await stream(t, tenant.tokens.viewer, board);
    assert.equal(viewer.status, 200);
    assert.equal(viewer.lines.at(-1).kind, 'done');
    const foreign = await stream(t, other.tokens.owner, board);
    assert.equal(foreign.status, 404);
    assert.match(foreign.type ?? '', /^application\/json/);
    assert.equal(foreign.lines[0].error, 'not found');
    const gone = await stream(t, tenant.tokens.member, 2_000_000_000);
    assert.equal(gone.status, 404);
    const res = await fetch(`${t.url}/api/boards/${board}/run`, { method: 'POST', headers: { accept: 'application/x-ndjson', 'content-type': 'application/json' }, body: '{}' });
    assert.equal(res.status, 401);
    // Bad input is a 400 naming the field, before any line.
    const bad = await stream(t, tenant.tokens.member, board, { refresh: 'yes' });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.lines[0]), /refresh/);
    const text = await stream(t, tenant.tokens.member, board, { card_id: 2_000_000_000 });
    assert.equal(text.status, 404);
  });
});
