import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { axeViolations, signInWithToken, withConsolePage, type Seeded } from '../support/browser.js';

/**
 * The reports library in a real browser against the real service: the Reports link, every saved
 * report as a link named by its name, search (kept in the address), delete (the report and its
 * board card go, through the API), a viewer without delete, accessibility and a phone's width.
 */
forEachBackend('web console: reports library', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let seed: Seeded;
  let browser: Browser;
  let page: Page;
  let libraryPath: string;

  withConsolePage(backend, {
    tenant: 'Library',
    path: ({ tenant }) => {
      libraryPath = `/projects/${tenant.project.id}/reports`;
      return `/projects/${tenant.project.id}/boards`;
    },
  }, (c) => ({ t, tenant, seed, browser, page } = c));

  const api = () => t.client(seed.token);
  const links = () => page.$$eval('table[aria-label="Saved reports"] tbody tr td:first-child a', (as) => as.map((a) => [a.textContent, a.getAttribute('href')]));

  it('the Reports link lists every saved report as a link named by its name, newest change first', async function () {
    this.timeout(30_000);
    await page.locator('nav ::-p-aria([name="Reports"][role="link"])').click();
    await page.waitForFunction((p) => location.pathname === p, {}, libraryPath);
    await page.waitForSelector('table[aria-label="Saved reports"]');
    const stored = (await api().get(`/api/reports?projectId=${tenant.project.id}`)).body as any[];
    const expected = [...stored].sort((a, b) => b.updated_at - a.updated_at || b.id - a.id).map((r) => [r.name, `/projects/${tenant.project.id}/reports/${r.id}`]);
    assert.equal(expected.length, 5);
    assert.deepEqual(await links(), expected);
    assert.equal(await page.$eval('nav a[aria-current="page"]', (a) => a.textContent), 'Reports');
    // A link opens the report.
    await page.locator('table[aria-label="Saved reports"] ::-p-aria([name="Daily signups"][role="link"])').click();
    await page.waitForFunction((p) => location.pathname === p, {}, `/projects/${tenant.project.id}/reports/${seed.reports.daily}`);
    await page.goBack();
    await page.waitForSelector('table[aria-label="Saved reports"]');
  });

  it('searches names and descriptions in any case, the search kept in the address', async function () {
    this.timeout(30_000);
    await api().put(`/api/reports/${seed.reports.retention}`, { description: 'Who buys after signing up' });
    await page.reload();
    await page.waitForSelector('table[aria-label="Saved reports"]');
    await page.locator('input#reports-search').fill('SIGNUPS');
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Saved reports"] tbody tr').length === 2);
    assert.deepEqual((await links()).map((l) => l[0]).sort(), ['Daily signups', 'Hourly signups']);
    assert.equal(new URL(page.url()).searchParams.get('q'), 'SIGNUPS');
    await page.locator('input#reports-search').fill('buys after');
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Saved reports"] tbody tr').length === 1);
    assert.deepEqual((await links()).map((l) => l[0]), ['Daily retention']);
    // The address alone gives the same list.
    await page.goto(`${t.url}${libraryPath}?q=plan`);
    await page.waitForSelector('table[aria-label="Saved reports"]');
    assert.deepEqual((await links()).map((l) => l[0]), ['Purchases by plan']);
    assert.equal(await page.$eval('input#reports-search', (i) => (i as HTMLInputElement).value), 'plan');
    await page.locator('input#reports-search').fill('nothing like this');
    await page.waitForSelector('::-p-text(No report matches)');
  });

  it('deletes a report after confirming: gone from the list, the API and its board', async function () {
    this.timeout(30_000);
    await page.goto(t.url + libraryPath);
    await page.waitForSelector('table[aria-label="Saved reports"]');
    // Declining the confirmation changes nothing.
    page.once('dialog', (d) => void d.dismiss());
    await page.locator('::-p-aria([name="Delete Purchases by plan"][role="button"])').click();
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await api().get(`/api/reports/${seed.reports.byPlan}`)).status, 200);
    let message = '';
    page.once('dialog', (d) => { message = d.message(); void d.accept(); });
    await page.locator('::-p-aria([name="Delete Purchases by plan"][role="button"])').click();
    await page.waitForFunction(() => ![...document.querySelectorAll('table[aria-label="Saved reports"] a')].some((a) => a.textContent === 'Purchases by plan'));
    assert.match(message, /Delete the report "Purchases by plan"\? Its cards on boards are removed too/);
    assert.equal((await api().get(`/api/reports/${seed.reports.byPlan}`)).status, 404);
    const board = (await api().get(`/api/boards/${seed.boardId}`)).body;
    assert.ok(!board.cards.some((c: any) => c.report_id === seed.reports.byPlan), 'its card left the board');
    assert.equal((await links()).length, 4);
  });

  it('shows a viewer the library without delete buttons', async function () {
    this.timeout(30_000);
    const ctx = await browser.createBrowserContext();
    try {
      const p = await ctx.newPage();
      await p.goto(t.url + libraryPath);
      await signInWithToken(p, tenant.tokens.viewer);
      await p.waitForSelector('table[aria-label="Saved reports"]');
      assert.equal(await p.$$eval('table[aria-label="Saved reports"] tbody tr', (r) => r.length), 4);
      assert.equal(await p.$('table[aria-label="Saved reports"] button'), null);
    } finally {
      await ctx.close();
    }
  });

  it('has no serious or critical accessibility violation in both themes, and fits a phone', async function () {
    this.timeout(60_000);
    await page.goto(t.url + libraryPath);
    await page.waitForSelector('table[aria-label="Saved reports"]');
    const found: string[] = [];
    for (const theme of ['light', 'dark']) {
      for (const v of await axeViolations(page)) found.push(`reports (${theme}): ${v.id} (${v.impact}) ${v.nodes.join(', ')}`);
      await page.locator('header button::-p-text(Theme)').click();
    }
    assert.deepEqual(found, []);
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    try {
      await page.reload();
      await page.waitForSelector('table[aria-label="Saved reports"]');
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 390);
      const widths = await page.$$eval('table[aria-label="Saved reports"] tbody tr', (rs) => rs.map((r) => Math.round(r.getBoundingClientRect().width)));
      assert.ok(widths.every((w) => w <= 390 && w > 300), `rows ${widths}`);
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });
});
