import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { axeViolations, boardSettled, ensureConsoleBuilt, launchBrowser, seedConsole, signInWithToken, type Seeded } from '../support/browser.js';

/**
 * The web console in a real browser (Debian's chromium through puppeteer-core) against the real
 * service, driven through the fixed names of the console: the `Access token` field and `Sign in`
 * button, cards as role=figure named by their title, a `Table` button, failing cards as
 * role=alert. One browser and one page per backend; the steps build on each other.
 */
forEachBackend('web console in a browser', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let seed: Seeded;
  let browser: Browser;
  let page: Page;
  let boardPath: string;

  before(async function () {
    this.timeout(180_000);
    ensureConsoleBuilt();
    // 6 months of hours (4,380 cells) is refused; everything else the board asks for fits.
    t = await startTestService(backend, { QUERY_MAX_CELLS: '2000' });
    tenant = await createTenant(t, 'Console');
    seed = await seedConsole(t, tenant);
    boardPath = `/projects/${tenant.project.id}/boards/${seed.boardId}`;
    browser = await launchBrowser();
    page = await browser.newPage();
    page.on('pageerror', (e) => console.error('    page error:', (e as Error).message));
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const api = () => t.client(seed.token);
  /** Opens the card's table (unless open) and reads its body rows. */
  const openTable = async (title: string) => {
    const button = `[role="figure"][aria-label="${title}"] ::-p-aria([name="Table"][role="button"])`;
    if ((await page.$eval(`[role="figure"][aria-label="${title}"] button[aria-expanded]`, (b) => b.getAttribute('aria-expanded'))) !== 'true') await page.locator(button).click();
    await page.waitForSelector(`[role="figure"][aria-label="${title}"] table`);
  };
  const cardTable = (title: string) =>
    page.$eval(`[role="figure"][aria-label="${title}"] table`, (table) =>
      [...table.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((c) => c.textContent!.trim())));

  it('sends a bookmarked board to sign-in, and back to the board after signing in with a token', async function () {
    this.timeout(60_000);
    await page.goto(t.url + boardPath);
    await page.waitForFunction(() => location.pathname === '/sign-in');
    // A wrong token stays on the form with the reason.
    await page.locator('input#access-token').fill('not-a-token');
    await page.locator('button[type="submit"]::-p-text(Sign in)').click();
    await page.waitForSelector('form [role="alert"]');
    assert.match(await page.$eval('form [role="alert"]', (e) => e.textContent!), /not accepted/);
    await signInWithToken(page, seed.token);
    assert.equal(new URL(page.url()).pathname, boardPath);
  });

  it('draws every card of the board on its own; the refused card shows the API message, the others draw', async function () {
    this.timeout(60_000);
    await boardSettled(page);
    const figures = await page.$$eval('[role="figure"]', (els) => els.map((e) => e.getAttribute('aria-label')));
    assert.deepEqual(figures, ['Daily signups', 'Notes', 'Hourly signups', 'Purchases by plan', 'Daily retention', 'After sign-up']);
    // A text card's first line is its caption, not repeated in its body.
    assert.equal(await page.$eval('[role="figure"][aria-label="Notes"] .text-card', (e) => e.textContent!), 'Sign-ups, purchases and retention of the last 30 days.');
    const alert = await page.$eval('[role="figure"][aria-label="Hourly signups"] [role="alert"]', (e) => e.textContent!);
    assert.match(alert, /query too large/i);
    for (const title of ['Daily signups', 'Purchases by plan']) {
      assert.ok(await page.$(`[role="figure"][aria-label="${title}"] canvas`), `${title} draws on a canvas`);
      assert.equal(await page.$(`[role="figure"][aria-label="${title}"] [role="alert"]`), null);
      assert.equal(await page.$(`[role="figure"][aria-label="${title}"] table`), null, 'the only table of a card is its Table view');
    }
    for (const title of ['Daily retention', 'After sign-up']) {
      assert.ok(await page.$(`[role="figure"][aria-label="${title}"] svg`), `${title} draws an svg: ${await page.$eval(`[role="figure"][aria-label="${title}"]`, (e) => e.outerHTML.slice(0, 600))}`);
    }
    // The cards' widths follow the API's spans (8 + 4 on the first row).
    const widths = await page.$$eval('[role="figure"]', (els) => els.map((e) => e.getBoundingClientRect().width));
    assert.ok(widths[0] > widths[1] * 1.8, `span 8 vs span 4: ${widths}`);
  });

  it("opens a card's table with the numbers the API answers for that card", async function () {
    this.timeout(30_000);
    await openTable('Daily signups');
    const rows = await cardTable('Daily signups');
    const run = await api().get(`/api/boards/${seed.boardId}/run?cardId=${(await boardCardId('Daily signups'))}`);
    const result = run.body.cards[0].result;
    assert.deepEqual(rows.map((r) => r[0]), result.buckets);
    assert.deepEqual(rows.map((r) => Number(r[1])), result.series[0].data);
    assert.equal(rows.reduce((a, r) => a + Number(r[1]), 0), seed.users.signedUp);
  });

  async function boardCardId(title: string): Promise<number> {
    const b = (await api().get(`/api/boards/${seed.boardId}`)).body;
    return b.cards.find((c: any) => c.report?.name === title).id;
  }

  it("changes the board's range: every card runs again over it at once, the board keeps it only with Save to board", async function () {
    this.timeout(30_000);
    await page.select('#board-range', '7d');
    await boardSettled(page);
    await openTable('Daily signups');
    await page.waitForFunction(() => document.querySelectorAll('[role="figure"][aria-label="Daily signups"] tbody tr').length === 7);
    assert.equal((await api().get(`/api/boards/${seed.boardId}`)).body.date_range, null, 'not saved for everyone yet');
    await page.locator('::-p-aria([name="Save to board"][role="button"])').click();
    await page.waitForFunction(() => document.querySelector('#board-save-status')?.textContent === 'Saved', { timeout: 15_000 });
    const saved = (await api().get(`/api/boards/${seed.boardId}`)).body;
    assert.deepEqual(saved.date_range, { kind: 'preset', preset: '7d' });
    const rows = await cardTable('Daily signups');
    assert.equal(rows.length, 7, JSON.stringify(rows));
    const run = (await api().post(`/api/boards/${seed.boardId}/run`, {})).body;
    const daily = run.cards.find((c: any) => c.label === 'Daily signups').result;
    assert.deepEqual(rows.map((r) => Number(r[1])), daily.series[0].data);
    assert.equal(rows.reduce((a, r) => a + Number(r[1]), 0), 28, 'users 0..39 signed up i%10 days ago: days 0-6 hold 28');
  });

  it('reorders cards from the keyboard and saves the order', async function () {
    this.timeout(30_000);
    await page.focus('[data-card] .handle');
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => document.querySelector('[role="figure"]')?.getAttribute('aria-label') === 'Notes');
    await page.waitForFunction(() => document.querySelector('#board-save-status')?.textContent === 'Saved', { timeout: 15_000 });
    const b = (await api().get(`/api/boards/${seed.boardId}`)).body;
    const order = [...b.cards].sort((x: any, y: any) => x.position - y.position).map((c: any) => c.report?.name ?? 'Notes');
    assert.deepEqual(order.slice(0, 2), ['Notes', 'Daily signups']);
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Move Daily signups', { timeout: 5000 }).catch(() => undefined);
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Move Daily signups', 'focus stays on the moved card');
  });

  it('reorders cards by dragging one onto another, and saves the order', async function () {
    this.timeout(30_000);
    const titles = () => page.$$eval('[role="figure"]', (els) => els.map((e) => e.getAttribute('aria-label')));
    const before = await titles();
    const from = await page.$(`[data-card]:nth-child(3)`);
    const to = await page.$(`[data-card]:nth-child(1)`);
    // Chromium's drag events through the DevTools protocol (a synthetic mouse does not start an HTML drag in headless mode).
    await page.setDragInterception(true);
    try {
      await from!.dragAndDrop(to!);
    } finally {
      await page.setDragInterception(false);
    }
    await page.waitForFunction((t) => document.querySelector('[role="figure"]')?.getAttribute('aria-label') === t, { timeout: 10_000 }, before[2]);
    await page.waitForFunction(() => document.querySelector('#board-save-status')?.textContent === 'Saved', { timeout: 15_000 });
    const b = (await api().get(`/api/boards/${seed.boardId}`)).body;
    const order = [...b.cards].sort((x: any, y: any) => x.position - y.position).map((c: any) => c.report?.name ?? 'Notes');
    assert.deepEqual(order, [before[2], before[0], before[1], ...before.slice(3)]);
    assert.deepEqual(await titles(), order);
  });

  it('builds a funnel, drills into a step, saves it and adds it to the board', async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}/projects/${tenant.project.id}/insights`);
    await page.locator('.tabs button::-p-text(Funnel)').click();
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Viewed product');
    await page.locator('::-p-aria([name="Add step"][role="button"])').click();
    await page.locator('#metric-2').fill('Purchased');
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] svg');
    await page.locator('[role="figure"] ::-p-aria([name="Table"][role="button"])').click();
    const rows = await page.$$eval('[role="figure"] table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())));
    assert.deepEqual(rows.map((r) => Number(r[1])), [seed.users.signedUp, seed.users.viewed, seed.users.purchased]);
    assert.deepEqual(rows.map((r) => r[3]), ['100.0%', '62.5%', '30.0%']);
    // Drill-down: the people who reached the last step.
    await page.click('.funnel svg > g.step:nth-of-type(3)');
    await page.waitForSelector('section[aria-label="People"] li');
    const people = await page.$$eval('section[aria-label="People"] li', (lis) => lis.map((l) => l.textContent!.trim()).sort());
    assert.deepEqual(people, Array.from({ length: 12 }, (_, i) => `user-${i}`).sort());
    // Save, then add to the board.
    await page.locator('#report-name').fill('Signup to purchase');
    await page.locator('::-p-aria([name="Save report"][role="button"])').click();
    await page.waitForFunction(() => /\/reports\/\d+$/.test(location.pathname));
    await page.locator('::-p-aria([name="Add to board"][role="button"])').click();
    await page.waitForFunction(() => document.querySelector('.result [role="status"]')?.textContent?.includes('Added to board'));
    const report = (await api().get(`/api/reports/${page.url().split('/').pop()}`)).body;
    assert.equal(report.type, 'funnel');
    assert.deepEqual(report.query.metrics.map((m: any) => m.event), ['Signed up', 'Viewed product', 'Purchased']);
    await page.goto(t.url + boardPath);
    await boardSettled(page);
    assert.ok(await page.$('[role="figure"][aria-label="Signup to purchase"] svg'), 'the funnel card draws on the board');
  });

  it('builds a trend with two metrics, a formula and the previous period; its table is the API answer for the same query', async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}/projects/${tenant.project.id}/insights`);
    await page.waitForSelector('#metric-0');
    await page.locator('#metric-0').fill('Purchased');
    await page.locator('aside button::-p-text(Add metric)').click();
    await page.locator('#metric-1').fill('Signed up');
    await page.select('#agg-1', 'unique');
    await page.locator('#formula').fill('A / B * 100');
    await page.click('aside input[type="checkbox"]');
    await page.select('#insight-range', '7d');
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] canvas');
    await page.locator('[role="figure"] ::-p-aria([name="Table"][role="button"])').click();
    const table = await page.$eval('[role="figure"] table', (tb) => ({
      head: [...tb.querySelectorAll('thead th')].map((th) => th.textContent!.trim()),
      rows: [...tb.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((c) => c.textContent!.trim())),
    }));
    const query = {
      v: 2, dateRange: { kind: 'preset', preset: '7d' },
      metrics: [{ id: 'A', kind: 'event', event: 'Purchased', aggregation: { op: 'count' } }, { id: 'B', kind: 'event', event: 'Signed up', aggregation: { op: 'unique' } }],
      analysis: { kind: 'trend', unit: 'day', chart: 'line', formula: 'A / B * 100', compare: { kind: 'previous_period' } },
    };
    const answer = (await api().post('/api/query', { projectId: String(tenant.project.id), query })).body;
    assert.deepEqual(table.rows.map((r) => r[0]), answer.buckets, JSON.stringify({ head: table.head, rows: table.rows }));
    assert.equal(table.rows.length, 7);
    assert.equal(table.head.length - 1, answer.series.length, table.head.join(' | '));
    assert.ok(table.head.some((h) => /previous period/.test(h)), table.head.join(' | '));
    answer.series.forEach((s: { data: number[] }, i: number) => {
      assert.deepEqual(table.rows.map((r) => Number(r[i + 1])), s.data.map((v) => Number(v.toFixed(4))), table.head[i + 1]);
    });
  });

  it('marks annotations on the time axis of a trend', async function () {
    this.timeout(30_000);
    await page.goto(`${t.url}/projects/${tenant.project.id}/reports/${seed.reports.daily}`);
    await page.waitForSelector('[role="figure"] canvas');
    const notes = await page.$$eval('ul[aria-label="Annotations"] li', (lis) => lis.map((l) => l.textContent!.trim()));
    assert.equal(notes.length, 1);
    assert.match(notes[0], /Pricing page launched/);
  });

  it('has no serious or critical accessibility violation on the sign-in, board and insights pages, in both themes', async function () {
    this.timeout(90_000);
    const found: string[] = [];
    const check = async (what: string) => {
      for (const v of await axeViolations(page)) found.push(`${what}: ${v.id} (${v.impact}) ${v.nodes.join(', ')}`);
    };
    await check('board (light)');
    await page.locator('header button::-p-text(Theme)').click();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
    await check('board (dark)');
    await openTable('Daily signups');
    await check('board with a table (dark)');
    await page.goto(`${t.url}/projects/${tenant.project.id}/reports/${seed.reports.daily}`);
    await page.waitForSelector('[role="figure"] canvas');
    await check('saved insight (dark)');
    await page.locator('header button::-p-text(Theme)').click();
    await check('saved insight (light)');
    const incognito = await browser.createBrowserContext();
    const p2 = await incognito.newPage();
    await p2.goto(t.url + '/sign-in');
    await p2.waitForSelector('#access-token');
    for (const v of await axeViolations(p2)) found.push(`sign-in: ${v.id} (${v.impact}) ${v.nodes.join(', ')}`);
    await incognito.close();
    assert.deepEqual(found, []);
  });

  it('has no serious or critical accessibility violation on every other page of the console, in both themes', async function () {
    this.timeout(240_000);
    const pid = tenant.project.id;
    const found: string[] = [];
    const checked: string[] = [];
    /** Opens `path`, waits for `ready` and for nothing to be loading, then checks the page in the current theme. */
    const visit = async (what: string, path: string, ready: string) => {
      await page.goto(t.url + path);
      await page.waitForSelector(ready, { timeout: 30_000 });
      await page.waitForFunction(() => !document.querySelector('.loading'), { timeout: 30_000 });
      await check(what);
    };
    const check = async (what: string) => {
      const theme = await page.evaluate(() => document.documentElement.dataset.theme ?? 'light');
      checked.push(`${what} (${theme})`);
      for (const v of await axeViolations(page)) found.push(`${what} (${theme}): ${v.id} (${v.impact}) ${v.nodes.join(', ')}`);
    };
    // Each theme chosen as the header's Theme button keeps it (per browser), read again by each page load.
    const before = await page.evaluate(() => localStorage.getItem('tally.theme'));
    for (const theme of ['light', 'dark']) {
      await page.evaluate((v) => localStorage.setItem('tally.theme', v), theme);
      await visit('boards', `/projects/${pid}/boards`, 'main h1');
      await visit('board', boardPath, '[role="figure"]');
      await boardSettled(page);
      // A card's menu open.
      await page.locator('::-p-aria([name="Card actions for Daily signups"][role="button"])').click();
      await page.waitForSelector('[role="menu"]');
      await check('board, card menu open');
      await page.keyboard.press('Escape');
      await page.waitForFunction(() => !document.querySelector('[role="menu"]'));
      await visit('reports library', `/projects/${pid}/reports`, 'main a[href*="/reports/"]');
      await visit('insights', `/projects/${pid}/insights`, 'main h1');
      await visit('flags', `/projects/${pid}/flags`, 'main h1');
      await visit('experiments', `/projects/${pid}/experiments`, 'main h1');
      await visit('people', `/projects/${pid}/people`, 'main table tbody tr');
      await visit('a person', `/projects/${pid}/people/user-1`, 'main h1');
      await visit('cohorts', `/projects/${pid}/people?tab=cohorts`, 'main h1');
      await visit('cohort builder', `/projects/${pid}/people?tab=cohorts&cohort=new`, 'form.cohort-builder');
      await visit('events', `/projects/${pid}/events`, 'main h1');
      await visit('lexicon', `/projects/${pid}/events/lexicon`, 'table[aria-label="Events"] tbody tr');
      await visit('annotations', `/projects/${pid}/events/annotations`, 'main h1');
    }
    await page.evaluate((v) => (v === null ? localStorage.removeItem('tally.theme') : localStorage.setItem('tally.theme', v)), before);
    assert.deepEqual(checked.filter((c) => c.endsWith('(dark)')).length, 14, checked.join(', '));
    assert.equal(checked.length, 2 * 14, checked.join(', '));
    assert.deepEqual(found, []);
  });

  it('fits a phone: one column of cards, nothing wider than the screen', async function () {
    this.timeout(30_000);
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    try {
      await page.goto(t.url + boardPath);
      await boardSettled(page);
      const layout = await page.evaluate(() => ({
        scroll: document.documentElement.scrollWidth,
        lefts: [...document.querySelectorAll('[role="figure"]')].map((f) => Math.round(f.getBoundingClientRect().left)),
        widths: [...document.querySelectorAll('[role="figure"]')].map((f) => Math.round(f.getBoundingClientRect().width)),
      }));
      assert.ok(layout.scroll <= 390, `page ${layout.scroll} px wide on a 390 px screen`);
      assert.equal(new Set(layout.lefts).size, 1, 'one column');
      assert.ok(layout.widths.every((w) => w > 330), `cards span the screen: ${layout.widths}`);
      assert.ok(await page.$('[role="figure"][aria-label="Daily signups"] canvas'));
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });

  it('runs retention and sessions on their endpoints: a heat map and a line', async function () {
    this.timeout(30_000);
    await page.goto(`${t.url}/projects/${tenant.project.id}/insights`);
    await page.locator('.tabs button::-p-text(Retention)').click();
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Purchased');
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] svg.heat');
    await page.locator('[role="figure"] ::-p-aria([name="Table"][role="button"])').click();
    const sizes = await page.$$eval('[role="figure"] table tbody tr', (trs) => trs.map((tr) => Number(tr.children[1].textContent)));
    assert.equal(sizes.reduce((a, b) => a + b, 0), seed.users.signedUp, 'every user is born once');
    await page.locator('.tabs button::-p-text(Sessions)').click();
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] canvas');
    assert.equal(await page.$('#report-name'), null, 'sessions have no report type to save as');
  });

  it("shows a card whose report was deleted meanwhile as the API's answer in place, the others still draw", async function () {
    this.timeout(30_000);
    await page.goto(t.url + boardPath);
    await boardSettled(page);
    assert.equal((await tenant.owner.request('DELETE', `/api/reports/${seed.reports.flows}`)).status, 200);
    await page.locator('button::-p-text(Refresh)').click();
    await boardSettled(page);
    const alert = await page.$eval('[role="figure"][aria-label="After sign-up"] [role="alert"]', (e) => e.textContent!);
    assert.match(alert, /card not found.*deleted/);
    assert.ok(await page.$('[role="figure"][aria-label="Daily signups"] canvas'));
    assert.ok(await page.$('[role="figure"][aria-label="Daily retention"] svg'));
  });

  it('goes back to sign-in when the session is refused, then returns to the page', async function () {
    this.timeout(30_000);
    const insights = `/projects/${tenant.project.id}/reports/${seed.reports.byPlan}`;
    await page.goto(t.url + insights);
    await page.waitForSelector('[role="figure"] canvas');
    // The credential is revoked while the page is open.
    const tokens = (await tenant.owner.get('/api/org/tokens')).body as Array<{ id: number; name: string }>;
    await tenant.owner.request('DELETE', `/api/org/tokens/${tokens.find((x) => x.name === 'console test')!.id}`);
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForFunction(() => location.pathname === '/sign-in');
    const fresh = (await tenant.owner.post('/api/org/tokens', { name: 'console test 2', role: 'member' })).body.token;
    seed.token = fresh;
    await signInWithToken(page, fresh);
    assert.equal(new URL(page.url()).pathname, insights);
    await page.waitForSelector('[role="figure"] canvas');
  });

  it('signs in with the identity provider (code + PKCE) as a viewer: reads the board, no write controls', async function () {
    this.timeout(60_000);
    const ctx = await browser.createBrowserContext();
    const p = await ctx.newPage();
    try {
      t.idp.nextLogin = { sub: `viewer-${tenant.org.id}-Console`, email: `viewer.${tenant.org.id}.Console@example.test` };
      await p.goto(t.url + boardPath);
      await p.waitForFunction(() => location.pathname === '/sign-in');
      await Promise.all([
        p.waitForNavigation(),
        p.locator('::-p-aria([name="Sign in with your identity provider"][role="button"])').click(),
      ]);
      await p.waitForFunction((path) => location.pathname === path, { timeout: 20_000 }, boardPath);
      await boardSettled(p);
      assert.match(await p.$eval('.who', (e) => e.textContent!), /viewer/);
      assert.equal(await p.$('.handle'), null, 'a viewer cannot reorder');
      assert.equal(await p.$('::-p-aria([name="Save to board"][role="button"])'), null, 'a viewer cannot save a range or filters to the board');
      assert.equal(await p.$('::-p-aria([name="Add text"][role="button"])'), null, 'a viewer cannot edit the board');
      // A viewer's range (and filters) apply to this view only; the saved board keeps its own.
      await p.select('#board-range', '30d');
      await boardSettled(p);
      // The card draws again over the new range: wait (up to 10 s) for its chart on a loaded machine.
      await p.waitForSelector('[role="figure"][aria-label="Daily signups"] canvas', { timeout: 10_000 }).catch(() => undefined);
      const rows = await p.$$eval('[role="figure"][aria-label="Daily signups"] canvas', (c) => c.length);
      assert.equal(rows, 1);
      assert.deepEqual((await api().get(`/api/boards/${seed.boardId}`)).body.date_range, { kind: 'preset', preset: '7d' });
      await p.goto(`${t.url}/projects/${tenant.project.id}/boards`);
      await p.waitForSelector('.board-list');
      assert.equal(await p.$('#new-board'), null, 'a viewer cannot create boards');
      // The same person is a member of a second organisation: the switcher moves the tab there.
      const second = (await t.admin.post('/admin/orgs', { name: 'Second' })).body;
      const secondProject = (await t.admin.post(`/admin/orgs/${second.id}/projects`, { name: 'Second web' })).body;
      await t.admin.post(`/admin/orgs/${second.id}/members`, { email: t.idp.nextLogin.email, role: 'member' });
      await p.reload();
      await p.waitForSelector('.board-list');
      const orgSelect = await p.waitForSelector('::-p-aria([name="Organization"][role="combobox"])');
      await orgSelect!.select(String(second.id));
      await p.waitForFunction((path) => location.pathname === path, { timeout: 15_000 }, `/projects/${secondProject.id}/boards`);
      await p.waitForFunction(() => /member/.test(document.querySelector('.who')?.textContent ?? ''));
      assert.ok(await p.$('#new-board'), 'a member of the second organisation can create boards there');
    } finally {
      await ctx.close();
    }
  });
});
