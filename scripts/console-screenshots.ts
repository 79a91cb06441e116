/**
 * Screenshots of the web console's main pages for docs/console.md (docs/console/*.png):
 * `npm run console:screenshots`. Starts the whole service on the embedded stores with a seeded
 * project (test/support/browser.ts), drives Debian's chromium (CHROMIUM_PATH) through the pages.
 * Names after `--` take only those shots (`npm run console:screenshots -- audit-log`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { configuredBackends } from '../test/support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../test/support/service.js';
import { boardSettled, launchBrowser, seedConsole, signInWithToken } from '../test/support/browser.js';
import { drained, ingest } from '../test/support/ingestion.js';
import type { Browser, Page } from 'puppeteer-core';

const OUT = path.resolve('docs/console');

/** `npm run console:screenshots -- audit-log board`: only these shots (all when none is named). */
const only = process.argv.slice(2);

async function main() {
  fs.mkdirSync(OUT, { recursive: true });
  const t = await startTestService(configuredBackends()[0], { QUERY_MAX_CELLS: '2000' });
  const tenant = await createTenant(t, 'Console');
  const seed = await seedConsole(t, tenant);
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    page.on('console', (m) => m.type() === 'error' && console.error('page:', m.text()));
    const shot = async (name: string, on: Page = page) => {
      if (only.length && !only.includes(name)) return;
      await new Promise((r) => setTimeout(r, 300));
      await on.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: true });
      console.log(`docs/console/${name}.png`);
    };
    const board = `/projects/${tenant.project.id}/boards/${seed.boardId}`;
    await page.goto(t.url + board);
    await page.waitForSelector('#access-token');
    await shot('sign-in');
    await signInWithToken(page, seed.token);
    await boardSettled(page);
    await shot('board');
    // Report cards shown as numbers (one comparing with the previous period) and as a table.
    const compared = await tenant.owner.post(`/api/reports?projectId=${tenant.project.id}`, {
      name: 'Purchases, last 7 days', type: 'segmentation',
      query: { v: 2, dateRange: { kind: 'preset', preset: '7d' }, metrics: [{ id: 'A', kind: 'event', event: 'Purchased', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day', chart: 'line', compare: { kind: 'previous_period' } } },
    });
    if (compared.status !== 201) throw new Error(`seed report: ${compared.status} ${JSON.stringify(compared.body)}`);
    const numbers = await tenant.owner.post(`/api/boards?projectId=${tenant.project.id}`, {
      name: 'Numbers',
      cards: [
        { reportId: seed.reports.daily, span: 4, height: 'short', display: 'number' },
        { reportId: compared.body.id, span: 4, height: 'short', display: 'number' },
        { reportId: seed.reports.byPlan, span: 4, height: 'short', display: 'number' },
        { reportId: seed.reports.byPlan, span: 12, height: 'medium', display: 'table' },
      ],
    });
    if (numbers.status !== 201) throw new Error(`seed board: ${numbers.status} ${JSON.stringify(numbers.body)}`);
    await page.goto(`${t.url}/projects/${tenant.project.id}/boards/${numbers.body.id}`);
    await boardSettled(page);
    await shot('board-cards');
    await page.goto(`${t.url}/projects/${tenant.project.id}/insights`);
    await page.locator('.tabs button::-p-text(Funnel)').click();
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Viewed product');
    await page.locator('aside button::-p-text(Add step)').click();
    await page.locator('#metric-2').fill('Purchased');
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] svg');
    await page.click('.funnel svg > g.step:nth-of-type(3)');
    await page.waitForSelector('section[aria-label="People"] li');
    await shot('insights-funnel');
    await page.goto(`${t.url}/projects/${tenant.project.id}/reports/${seed.reports.byPlan}`);
    await page.waitForSelector('[role="figure"] canvas');
    await page.locator('[role="figure"] ::-p-aria([name="Table"][role="button"])').click();
    await shot('insights-trend-table');
    await page.goto(t.url + board);
    await boardSettled(page);
    await page.locator('header button::-p-text(Theme)').click();
    await boardSettled(page);
    await shot('board-dark');
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    await page.goto(t.url + board);
    await boardSettled(page);
    await shot('board-phone');
    // The audit log is an admin's page: a fresh browser context (light theme, desktop) signed in as
    // the organisation's admin, after a report's rename so one entry has a change to show.
    const renamed = await tenant.owner.put(`/api/reports/${seed.reports.daily}`, { name: 'Daily sign-ups', description: 'Unique people signing up per day' });
    if (renamed.status !== 200) throw new Error(`rename report: ${renamed.status} ${JSON.stringify(renamed.body)}`);
    const adminContext = await browser.createBrowserContext();
    const admin = await adminContext.newPage();
    await admin.goto(`${t.url}/projects/${tenant.project.id}/audit-log`);
    await signInWithToken(admin, tenant.tokens.admin);
    await admin.waitForSelector('.audit-table');
    const update = (await tenant.owner.get('/api/audit-log?action=report.updated')).body.entries[0];
    if (update) {
      await admin.click(`button[data-entry="${update.id}"]`);
      await admin.waitForSelector('.audit-detail table');
    }
    await shot('audit-log', admin);
    if (!only.length || only.includes('experiments')) await experimentsShot(t, tenant, seed.token, browser, shot);
    if (!only.length || only.includes('cohort-builder')) await cohortBuilderShot(t, tenant, seed.token, browser, shot);
    // After the cohort builder (whose page lists the cohorts) and before the annotations (drawn on the chart).
    if (!only.length || only.includes('insights-cohorts')) await insightsCohortsShot(t, tenant, seed.token, browser, shot);
    if (!only.length || only.includes('lexicon') || only.includes('annotations')) await lexiconShots(t, tenant, seed.token, browser, shot);
  } finally {
    await browser.close();
    await t.close();
  }
}

/**
 * An experiment on a flag with two variants: the seeded 40 people exposed eleven days ago
 * (`$experiment_started`, 22 to the treatment, 18 to the control), measured on their purchases; a member's view of its results.
 */
async function experimentsShot(t: TestService, tenant: Tenant, token: string, browser: Browser, shot: (name: string, on: Page) => Promise<void>) {
  const pid = tenant.project.id;
  const flag = await tenant.owner.post('/api/flags', { projectId: pid, key: 'new-checkout', name: 'New checkout', variants: [{ key: 'control', rolloutPct: 50 }, { key: 'treatment', rolloutPct: 50 }] });
  if (flag.status !== 201) throw new Error(`experiment flag: ${flag.status} ${JSON.stringify(flag.body)}`);
  const exposed = Date.now() - 11 * 86_400_000;
  const exposures = Array.from({ length: 40 }, (_, i) => ({
    event: '$experiment_started', properties: { distinct_id: `user-${i}`, time: exposed + i * 1000, 'Experiment name': 'new-checkout', 'Variant name': (i < 12 ? i % 3 !== 0 : i % 2 === 0) ? 'treatment' : 'control', $insert_id: `x${i}` },
  }));
  const sent = await ingest(t, tenant.project.token).post('/track', exposures);
  if (sent.status !== 200) throw new Error(`exposures /track: ${sent.status} ${JSON.stringify(sent.body)}`);
  await drained(t);
  const made = await tenant.owner.post('/api/experiments', {
    projectId: pid, key: 'new-checkout', name: 'New checkout', flagKey: 'new-checkout',
    metrics: [{ id: 'purchased', name: 'Converted: Purchased', kind: 'conversion', event: 'Purchased' }, { id: 'revenue', name: 'Sum of amount: Purchased', kind: 'sum', event: 'Purchased', property: 'amount' }],
  });
  if (made.status !== 201) throw new Error(`experiment: ${made.status} ${JSON.stringify(made.body)}`);
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.goto(`${t.url}/projects/${pid}/experiments/${made.body.id}`);
  await signInWithToken(page, token);
  await page.waitForSelector('.metric-result');
  await page.waitForFunction(() => document.querySelector('[data-decision]')?.getAttribute('data-decision'));
  await shot('experiments', page);
}

/** People > Cohorts > New cohort: two behaviour criteria matched all, with the size preview (a member, light, desktop). */
async function cohortBuilderShot(t: TestService, tenant: Tenant, token: string, browser: Browser, shot: (name: string, on: Page) => Promise<void>) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(`${t.url}/projects/${tenant.project.id}/people?tab=cohorts&cohort=new`);
  await signInWithToken(page, token);
  await page.waitForSelector('form[aria-label="New cohort"]');
  await page.locator('::-p-aria([name="Name"])').fill('Viewers who bought');
  await page.locator('::-p-aria([name="Description"])').fill('Viewed a product and purchased in the last 30 days');
  await page.locator('::-p-aria([name="Criterion 1 event"])').fill('Viewed product');
  await page.locator('::-p-aria([name="Add behaviour criterion"][role="button"])').click();
  await page.locator('::-p-aria([name="Criterion 2 event"])').fill('Purchased');
  await page.waitForFunction(() => document.querySelector('.cohort-preview')?.getAttribute('aria-busy') === 'false' && !!document.querySelector('.cohort-preview strong'), { timeout: 15_000 });
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await shot('cohort-builder', page);
  await context.close();
}

/**
 * Insights' breakdown by cohort: eight behaviour cohorts, a trend of unique sign-ups broken down by
 * two of them picked through the search box (chips), then a search open on "buy" over the chart
 * (a member, light, 1280x800).
 */
async function insightsCohortsShot(t: TestService, tenant: Tenant, token: string, browser: Browser, shot: (name: string, on: Page) => Promise<void>) {
  const pid = tenant.project.id;
  const cohorts: Array<[string, string, number, number]> = [
    ['Buyers', 'Purchased', 1, 0], ['Viewers', 'Viewed product', 1, 0], ['Repeat buyers', 'Purchased', 2, 0],
    ['Signed up this week', 'Signed up', 1, 7], ['Recent viewers', 'Viewed product', 1, 7], ['Buyers this week', 'Purchased', 1, 7],
    ['Browsers, 3+ views', 'Viewed product', 3, 0], ['Signed up, last 3 days', 'Signed up', 1, 3],
  ];
  for (const [name, event, count, windowDays] of cohorts) {
    const r = await tenant.owner.post('/api/cohorts', { projectId: pid, name, definition: { op: 'and', criteria: [{ kind: 'behavior', event, op: 'gte', count, windowDays }] } });
    if (r.status !== 201) throw new Error(`cohort ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(`${t.url}/projects/${pid}/insights`);
  await signInWithToken(page, token);
  await page.waitForSelector('#metric-0');
  await page.locator('#metric-0').fill('Signed up');
  await page.select('#agg-0', 'unique');
  const box = '#insight-cohort-breakdown-search';
  for (const name of ['Buyers', 'Viewers']) {
    await page.focus(box);
    await page.keyboard.type(name);
    await page.waitForFunction((id, n) => document.getElementById(document.querySelector(id)!.getAttribute('aria-activedescendant') ?? '')?.textContent === n, {}, box, name);
    await page.keyboard.press('Enter');
  }
  await page.locator('button.primary::-p-text(Run)').click();
  await page.waitForSelector('[role="figure"] canvas, [role="figure"] svg');
  await page.focus(box);
  await page.keyboard.type('buy');
  await page.waitForSelector('#insight-cohort-breakdown-options:not([hidden]) [role="option"]');
  await shot('insights-cohorts', page);
  await context.close();
}

/** Events > Lexicon with entries written and one open for editing, and Events > Annotations (a member, light, desktop). */
async function lexiconShots(t: TestService, tenant: Tenant, token: string, browser: Browser, shot: (name: string, on: Page) => Promise<void>) {
  const pid = tenant.project.id;
  const entries: Array<[string, string, Record<string, unknown>]> = [
    ['events', 'Signed up', { displayName: 'Sign-up', description: 'An account was created (web or app).', tags: ['acquisition', 'core'] }],
    ['events', 'Purchased', { displayName: 'Purchase', description: 'A checkout completed; amount is in euros.', tags: ['revenue', 'core'] }],
    ['events', 'Viewed product', { description: 'A product page was opened.', tags: ['engagement'] }],
    ['properties', 'plan', { displayName: 'Plan', description: 'The pricing plan at the time of the event.', tags: ['billing'] }],
    ['properties', '$payload_size', { hidden: true, description: 'Added by ingestion.' }],
  ];
  for (const [kind, name, body] of entries) {
    const r = await tenant.owner.put(`/api/lexicon/${kind}/${encodeURIComponent(name)}?projectId=${pid}`, body);
    if (r.status !== 200) throw new Error(`lexicon ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const day = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
  for (const [n, description] of [[9, 'Spring email campaign sent'], [16, 'Mobile app 2.4 released']] as const) {
    const r = await tenant.owner.post(`/api/annotations?projectId=${pid}`, { date: day(n), description });
    if (r.status !== 201) throw new Error(`annotation: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  await page.goto(`${t.url}/projects/${pid}/events/lexicon`);
  await signInWithToken(page, token);
  await page.waitForSelector('table[aria-label="Events"] tbody tr');
  await page.locator('button[aria-label="Edit Viewed product"]').click();
  await page.waitForSelector('form[aria-label="Edit Viewed product"]');
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await shot('lexicon', page);
  await page.goto(`${t.url}/projects/${pid}/events/annotations`);
  await page.waitForSelector('table[aria-label="Annotations by date"] tbody tr');
  await shot('annotations', page);
  await context.close();
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
