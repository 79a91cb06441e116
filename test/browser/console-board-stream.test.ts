import assert from 'node:assert/strict';
import type { Browser, HTTPRequest, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { boardSettled, withConsolePage, type Seeded } from '../support/browser.js';
import { drained, ingest } from '../support/ingestion.js';

/**
 * The board page in a real browser against the real service: the board and all its cards come in
 * one streamed request (no separate board read, no request per card), on a first visit through
 * the console and on a reload; each card says when its answer was computed; a card's Refresh and
 * the board's recompute (new events today show after it), a second board Refresh at once is
 * answered from the cache and says when the next is allowed; the refused card shows its alert
 * while the others draw.
 */
forEachBackend('web console: a board in one streamed request', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let seed: Seeded;
  let browser: Browser;
  let page: Page;
  let boardPath: string;
  let requests: Array<{ method: string; url: string; body?: string; accept?: string }> = [];

  withConsolePage(backend, {
    tenant: 'Board stream',
    // The hourly card asks for 4,380 hours: refused with QUERY_MAX_CELLS 2000.
    env: { QUERY_MAX_CELLS: '2000' },
    listen: (page) => page.on('request', (r: HTTPRequest) => {
      if (new URL(r.url()).pathname.startsWith('/api/boards')) requests.push({ method: r.method(), url: new URL(r.url()).pathname + new URL(r.url()).search, body: r.postData(), accept: r.headers().accept });
    }),
    path: ({ tenant, seed }) => (boardPath = `/projects/${tenant.project.id}/boards/${seed.boardId}`),
  }, (c) => ({ t, tenant, seed, browser, page } = c));

  const runPath = () => `/api/boards/${seed.boardId}/run`;
  const figure = (title: string) => `[role="figure"][aria-label="${title}"]`;
  /** The Daily signups card's table: the sum of its unique sign-ups per day. */
  const dailyTotal = async () => {
    await page.waitForSelector(`${figure('Daily signups')} button[aria-expanded]:not(:disabled)`);
    if ((await page.$eval(`${figure('Daily signups')} button[aria-expanded]`, (b) => b.getAttribute('aria-expanded'))) !== 'true') {
      await page.locator(`${figure('Daily signups')} ::-p-aria([name="Table"][role="button"])`).click();
    }
    await page.waitForSelector(`${figure('Daily signups')} table`);
    return page.$eval(`${figure('Daily signups')} table`, (tb) => [...tb.querySelectorAll('tbody tr')].reduce((a, tr) => a + Number(tr.children[1].textContent), 0));
  };

  /** The board's requests of one view: exactly one streamed run, no board read, no request per card. */
  const assertOneRequest = () => {
    const runs = requests.filter((r) => r.url.startsWith(runPath()));
    assert.deepEqual(runs.map((r) => [r.method, r.url]), [['POST', runPath()]], JSON.stringify(requests));
    assert.match(runs[0].accept ?? '', /application\/x-ndjson/);
    assert.deepEqual(requests.filter((r) => r.url === `/api/boards/${seed.boardId}`), [], 'the board comes on the run\'s first line');
  };

  it('opens the board after sign-in with one streamed request; every card draws or shows its alert', async function () {
    this.timeout(60_000);
    await boardSettled(page);
    assertOneRequest();
    const titles = await page.$$eval('[role="figure"]', (els) => els.map((e) => e.getAttribute('aria-label')));
    assert.deepEqual(titles, ['Daily signups', 'Notes', 'Hourly signups', 'Purchases by plan', 'Daily retention', 'After sign-up']);
    assert.match(await page.$eval(`${figure('Hourly signups')} [role="alert"]`, (e) => e.textContent!), /query too large/i);
    assert.ok(await page.$(`${figure('Daily signups')} canvas`));
    assert.ok(await page.$(`${figure('Purchases by plan')} canvas`));
    assert.ok(await page.$(`${figure('Daily retention')} svg`));
    assert.ok(await page.$(`${figure('After sign-up')} svg`));
    assert.equal(await dailyTotal(), seed.users.signedUp);
  });

  it('a reload is one streamed request too; each card says when its answer was computed', async function () {
    this.timeout(60_000);
    requests = [];
    await page.goto(t.url + boardPath);
    await boardSettled(page);
    assertOneRequest();
    for (const title of ['Daily signups', 'Purchases by plan', 'Daily retention', 'After sign-up']) {
      await page.waitForFunction((sel) => /updated just now/.test(document.querySelector(sel)?.textContent ?? ''), { timeout: 10_000 }, `${figure(title)} .card-foot`);
      assert.ok(await page.$(`${figure(title)} ::-p-aria([name="Refresh ${title}"][role="button"])`), `${title} has its Refresh`);
    }
    assert.equal(await page.$(`${figure('Notes')} .card-foot`), null, 'a text card has nothing to refresh');
    assert.equal((await page.$eval(`${figure('Hourly signups')} .card-foot`, (e) => e.textContent!)).includes('updated'), false, 'a refused card has no answer time');
  });

  it("a card's Refresh recomputes that card only; the board's Refresh shows today's new sign-up; a second at once is answered from the cache", async function () {
    this.timeout(60_000);
    assert.equal(await dailyTotal(), seed.users.signedUp);
    // A sign-up now: the cached answers (their range reaches today) do not show it before a refresh.
    const res = await ingest(t, tenant.project.token).post('/track', [{ event: 'Signed up', properties: { distinct_id: 'stream-new', time: Math.floor(Date.now() / 1000), plan: 'free', $insert_id: 'stream-new' } }]);
    assert.equal(res.status, 200);
    await drained(t);
    requests = [];
    await page.locator(`${figure('Purchases by plan')} ::-p-aria([name="Refresh Purchases by plan"][role="button"])`).click();
    await page.waitForFunction((sel) => !!document.querySelector(`${sel} canvas`), { timeout: 15_000 }, figure('Purchases by plan'));
    const cardId = Number(await page.$eval(figure('Purchases by plan'), (f) => f.parentElement!.getAttribute('data-card')));
    assert.deepEqual(requests.map((r) => [r.method, r.url, JSON.parse(r.body ?? '{}')]), [['POST', runPath(), { refresh: true, card_id: cardId }]]);
    assert.equal(await dailyTotal(), seed.users.signedUp, 'the other cards kept their answers');

    requests = [];
    await page.locator('.page-head ::-p-aria([name="Refresh"][role="button"])').click();
    await page.waitForFunction((sel, n) => {
      const rows = [...document.querySelectorAll(`${sel} tbody tr`)];
      return rows.reduce((a, tr) => a + Number(tr.children[1].textContent), 0) === n;
    }, { timeout: 20_000 }, figure('Daily signups'), seed.users.signedUp + 1).catch(() => undefined);
    await boardSettled(page);
    assert.equal(await dailyTotal(), seed.users.signedUp + 1, 'the board refresh read the new sign-up');
    assert.deepEqual(requests.map((r) => [r.method, r.url, JSON.parse(r.body ?? '{}')]), [['POST', runPath(), { refresh: true }]]);
    assert.equal(await page.$eval('#board-refresh-status', (e) => e.textContent), '');

    // Again at once: refused by the 30 s allowance, answered from the cache, and said so.
    await page.locator('.page-head ::-p-aria([name="Refresh"][role="button"])').click();
    await page.waitForFunction(() => /refreshing again is allowed at/.test(document.querySelector('#board-refresh-status')?.textContent ?? ''), { timeout: 15_000 });
    await boardSettled(page);
    assert.equal(await dailyTotal(), seed.users.signedUp + 1);
    assert.match(await page.$eval(`${figure('Hourly signups')} [role="alert"]`, (e) => e.textContent!), /query too large/i, 'the refused card still fails alone');
  });
});
