import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { TestService } from '../support/service.js';
import { axeViolations, boardSettled, withConsolePage, type Seeded } from '../support/browser.js';
import { drained, ingest } from '../support/ingestion.js';

const DAY = 86_400;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY * 1000).toISOString().slice(0, 10);

/**
 * A board's report cards shown as a number (each series' total, with the change from the previous
 * period when the report compares) or as a table (series by bucket), stored per card (`display`)
 * through the API and switched from the card's menu; a card left at `chart` shows an IR report
 * saved as a number or a table that way; a saved v0 unique segmentation's number is its exact
 * total (a person once), not the sum of its days. The figures on the page are the ones the board's
 * run answers, on both backends.
 */
forEachBackend('web console: number and table cards', (backend) => {
  let t: TestService;
  let seed: Seeded;
  let page: Page;
  let boardId: number;
  let compared: number;
  let v0Unique: number;
  let savedAsTable: number;

  withConsolePage(backend, {
    tenant: 'Cards display',
    prepare: async ({ t, tenant, seed }) => {
      const pid = tenant.project.id;
      // Three people open the app on three days each: 9 people-days, 3 people.
      const opened = [0, 1, 2].flatMap((u) => [1, 2, 3].map((d) => ({ event: 'Opened app', properties: { distinct_id: `opener-${u}`, time: Math.floor(Date.now() / 1000) - d * DAY, $insert_id: `o${u}-${d}` } })));
      const tracked = await ingest(t, tenant.project.token).post('/track', opened);
      assert.equal(tracked.status, 200, tracked.text);
      await drained(t);
      const report = async (name: string, type: string, query: unknown) => {
        const r = await tenant.owner.post(`/api/reports?projectId=${pid}`, { name, type, query });
        assert.equal(r.status, 201, JSON.stringify(r.body));
        return r.body.id as number;
      };
      compared = await report('Purchases vs before', 'segmentation',
        { v: 2, dateRange: { kind: 'preset', preset: '7d' }, metrics: [{ id: 'A', kind: 'event', event: 'Purchased', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day', chart: 'line', compare: { kind: 'previous_period' } } });
      v0Unique = await report('App openers', 'segmentation', { event: 'Opened app', type: 'unique', unit: 'day', from: daysAgo(9), to: daysAgo(0) });
      savedAsTable = await report('Sign-ups as a table', 'segmentation',
        { v: 2, dateRange: { kind: 'preset', preset: '30d' }, metrics: [{ id: 'A', kind: 'event', event: 'Signed up', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'week', chart: 'table' } });
      const board = await tenant.owner.post(`/api/boards?projectId=${pid}`, {
        name: 'Numbers',
        cards: [
          { reportId: seed.reports.daily, span: 4, height: 'short', display: 'number' },
          { reportId: compared, span: 4, height: 'short', display: 'number' },
          { reportId: seed.reports.byPlan, span: 8, height: 'medium', display: 'table' },
          { reportId: seed.reports.hourly, span: 4, height: 'short' },
          { cardType: 'text', text: 'About\nNumbers over each report\'s own range.', span: 4, height: 'short' },
          { reportId: seed.reports.retention, span: 8, height: 'medium' },
          { reportId: v0Unique, span: 4, height: 'short', display: 'number' },
          { reportId: savedAsTable, span: 8, height: 'medium' },
        ],
      });
      assert.equal(board.status, 201, JSON.stringify(board.body));
      boardId = board.body.id;
    },
    path: ({ tenant }) => `/projects/${tenant.project.id}/boards/${boardId}`,
    settle: true,
  }, (c) => ({ t, seed, page } = c));

  const api = () => t.client(seed.token);
  const cardsOf = async () => [...(await api().get(`/api/boards/${boardId}`)).body.cards].sort((a: any, b: any) => a.position - b.position);
  const runOf = async (reportId: number) => {
    const run = await api().post(`/api/boards/${boardId}/run`, {});
    assert.equal(run.status, 200, JSON.stringify(run.body));
    return run.body.cards.find((c: any) => c.report_id === reportId);
  };
  const fig = (title: string) => `[role="figure"][aria-label="${title}"]`;

  it('keeps each card\'s display through the API (chart by default; text cards cannot be a number)', async () => {
    const cards = await cardsOf();
    assert.deepEqual(cards.map((c: any) => c.display), ['number', 'number', 'table', 'chart', 'chart', 'chart', 'number', 'chart']);
    const bad = await api().put(`/api/boards/${boardId}`, { cards: [{ cardType: 'text', text: 'x', display: 'number' }] });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /display/);
    const odd = await api().put(`/api/boards/${boardId}`, { cards: [{ reportId: seed.reports.daily, display: 'pie' }] });
    assert.equal(odd.status, 400);
    assert.equal((await cardsOf()).length, 8, 'a refused write changes nothing');
  });

  it("shows a number card's total as the board's run answers it, with the previous period's change", async function () {
    this.timeout(30_000);
    const daily = await runOf(seed.reports.daily);
    const total = daily.result.series[0].total;
    assert.equal(total, seed.users.signedUp, 'every seeded sign-up is in the last 30 days');
    await page.waitForSelector(`${fig('Daily signups')} .number-card`);
    assert.equal(await page.$eval(`${fig('Daily signups')} .figure-value`, (e) => e.textContent), total.toLocaleString('en-US'));
    assert.equal(await page.$(`${fig('Daily signups')} canvas`), null, 'no chart on a number card');

    const cmp = await runOf(compared);
    const now = cmp.result.series.find((s: any) => s.range !== 'comparison');
    const before = cmp.result.series.find((s: any) => s.range === 'comparison');
    assert.ok(now && before, 'the report compares');
    // Purchases fall on the last ten days: the seven days and the seven before hold all of them.
    assert.equal(now.total + before.total, seed.users.purchased);
    assert.ok(now.total > 0 && before.total > 0, `${now.total} and ${before.total}`);
    const shown = await page.$eval(`${fig('Purchases vs before')} .number-card li`, (li) => ({
      value: li.querySelector('.figure-value')?.textContent, change: li.querySelector('.figure-change')?.textContent,
    }));
    assert.equal(shown.value, String(now.total));
    const pct = ((now.total - before.total) / before.total) * 100;
    assert.equal(shown.change, `${pct >= 0 ? '+' : '−'}${Math.abs(pct).toFixed(1)}% vs previous period ${before.total}`);
  });

  it("shows a saved v0 unique segmentation's number as its exact total, each person once", async function () {
    this.timeout(30_000);
    const run = await runOf(v0Unique);
    const series = run.result.series[0];
    // The API's whole-range figure: three people, though the days hold nine people-days.
    assert.equal(series.total, 3);
    assert.equal(series.data.reduce((a: number, d: { value: number }) => a + d.value, 0), 9);
    await page.waitForSelector(`${fig('App openers')} .number-card`);
    const shown = await page.$eval(`${fig('App openers')} .number-card li`, (li) => ({ value: li.querySelector('.figure-value')?.textContent, name: li.querySelector('.figure-name')?.textContent }));
    assert.deepEqual(shown, { value: String(series.total), name: 'Opened app' });
  });

  it("shows a card left at chart as its report's own table, until the card's own choice overrides it", async function () {
    this.timeout(60_000);
    const run = await runOf(savedAsTable);
    await page.waitForSelector(`${fig('Sign-ups as a table')} table`);
    const cells = await page.$eval(`${fig('Sign-ups as a table')} table`, (el) => [...el.querySelectorAll('tbody tr')].map((tr) => Number(tr.children[1].textContent)));
    assert.deepEqual(cells, run.result.series[0].data);
    assert.equal(await page.$(`${fig('Sign-ups as a table')} canvas`), null, 'the report is a table: no chart');
    await page.locator('::-p-aria([name="Card actions for Sign-ups as a table"][role="button"])').click();
    await page.waitForSelector('[role="menu"]');
    assert.deepEqual(await page.$$eval('[role="menu"] [role="menuitem"]', (els) => els.map((e) => e.textContent)), ['Show as number', 'Resize', 'Remove from board']);
    await page.locator('[role="menu"] ::-p-text(Show as number)').click();
    await page.waitForSelector(`${fig('Sign-ups as a table')} .number-card`);
    await page.waitForFunction(() => document.querySelector('#board-save-status')?.textContent === 'Saved', { timeout: 15_000 });
    assert.equal((await cardsOf())[7].display, 'number');
    assert.equal(await page.$eval(`${fig('Sign-ups as a table')} .figure-value`, (e) => e.textContent), String(run.result.series[0].total));
    await page.locator('::-p-aria([name="Card actions for Sign-ups as a table"][role="button"])').click();
    await page.waitForSelector('[role="menu"]');
    assert.deepEqual(await page.$$eval('[role="menu"] [role="menuitem"]', (els) => els.map((e) => e.textContent)), ['Show as table', 'Show as the report does (table)', 'Resize', 'Remove from board']);
    await page.locator('[role="menu"] ::-p-text(Show as the report does)').click();
    await page.waitForSelector(`${fig('Sign-ups as a table')} table`);
    for (let i = 0; i < 40 && (await cardsOf())[7].display !== 'chart'; i++) await new Promise((r) => setTimeout(r, 250));
    assert.equal((await cardsOf())[7].display, 'chart');
  });

  it("shows a table card's cells and totals as the board's run answers them", async function () {
    this.timeout(30_000);
    const run = await runOf(seed.reports.byPlan);
    await page.waitForSelector(`${fig('Purchases by plan')} table`);
    const table = await page.$eval(`${fig('Purchases by plan')} table`, (el) => ({
      head: [...el.querySelectorAll('thead th')].map((th) => th.textContent),
      rows: [...el.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((c) => c.textContent)),
      foot: [...el.querySelectorAll('tfoot tr > *')].map((c) => c.textContent),
    }));
    const series = run.result.series as Array<{ segment: string; data: number[]; total: number }>;
    assert.ok(series.length >= 2, 'a series per plan');
    assert.deepEqual(table.rows.map((r) => r[0]), run.result.buckets);
    series.forEach((s, k) => {
      assert.ok(table.head[k + 1]!.includes(s.segment), `column ${table.head[k + 1]} is ${s.segment}`);
      assert.deepEqual(table.rows.map((r) => Number(r[k + 1])), s.data);
      assert.equal(Number(table.foot[k + 1]), s.total);
    });
    assert.equal(series.reduce((a, s) => a + s.total, 0), seed.users.purchased);
    assert.equal(await page.$(`${fig('Purchases by plan')} canvas`), null, 'no chart on a table card');
  });

  it("switches a card to a number and back to a chart from its menu, saved for everyone", async function () {
    this.timeout(60_000);
    const menu = async (title: string) => {
      await page.locator(`::-p-aria([name="Card actions for ${title}"][role="button"])`).click();
      await page.waitForSelector('[role="menu"]');
      return page.$$eval('[role="menu"] [role="menuitem"]', (els) => els.map((e) => e.textContent));
    };
    assert.deepEqual(await menu('Hourly signups'), ['Show as number', 'Show as table', 'Resize', 'Remove from board']);
    await page.locator('[role="menu"] ::-p-text(Show as number)').click();
    await page.waitForSelector(`${fig('Hourly signups')} .number-card`);
    await page.waitForFunction(() => document.querySelector('#board-save-status')?.textContent === 'Saved', { timeout: 15_000 });
    assert.equal((await cardsOf())[3].display, 'number');
    const hourly = await runOf(seed.reports.hourly);
    await boardSettled(page);
    assert.equal(await page.$eval(`${fig('Hourly signups')} .figure-value`, (e) => e.textContent), String(hourly.result.series[0].total));
    assert.equal(hourly.result.series[0].total, seed.users.signedUp);

    assert.deepEqual(await menu('Hourly signups'), ['Show as table', 'Show as chart', 'Resize', 'Remove from board']);
    await page.locator('[role="menu"] ::-p-text(Show as chart)').click();
    await page.waitForFunction((sel) => document.querySelector(`${sel} canvas`) !== null, { timeout: 15_000 }, fig('Hourly signups'));
    for (let i = 0; i < 40 && (await cardsOf())[3].display !== 'chart'; i++) await new Promise((r) => setTimeout(r, 250));
    assert.equal((await cardsOf())[3].display, 'chart');
    // Retention has no single number: its menu offers the table only.
    assert.deepEqual(await menu('Daily retention'), ['Show as table', 'Resize', 'Remove from board']);
    // The menu takes the focus on its next frame (board-menu.tsx); Escape is the menu's key from then on.
    await page.waitForFunction(() => !!document.activeElement?.closest('[role="menu"]'));
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('[role="menu"]'));
  });

  it('has no serious accessibility violation with number and table cards', async function () {
    this.timeout(60_000);
    await boardSettled(page);
    const violations = await axeViolations(page);
    assert.deepEqual(violations, [], JSON.stringify(violations, null, 1));
  });
});
