import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { axeViolations, signInWithToken, withConsolePage, type Seeded } from '../support/browser.js';
import { drained, ingest } from '../support/ingestion.js';

/**
 * Cohorts made in the console: People > Cohorts > New cohort (criteria, live size preview, save,
 * members), a refused save keeping the edits, edit and delete, viewers read-only, and Save as
 * cohort under a trend point's and a funnel drop-off's people, each compared with the API.
 */
forEachBackend('web console: cohorts', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let seed: Seeded;
  let browser: Browser;
  let page: Page;
  let pid: string;

  withConsolePage(backend, {
    tenant: 'Cohorts console',
    // A profile property for the property criterion: user-30 (who never purchased) is a VIP.
    prepare: async ({ t, tenant }) => {
      const r = await ingest(t, tenant.project.token).post('/engage', { distinct_id: 'user-30', $set: { tier: 'vip' } });
      assert.equal(r.status, 200, r.text);
      await drained(t);
    },
    path: ({ tenant }) => `/projects/${tenant.project.id}/people?tab=cohorts`,
  }, (c) => {
    ({ t, tenant, seed, browser, page } = c);
    pid = String(tenant.project.id);
  });

  const api = () => t.client(seed.token);
  const preview = async (definition: unknown) => {
    const r = await api().post('/api/cohorts/preview', { projectId: pid, definition });
    assert.equal(r.status, 200, r.text);
    return r.body as { count: number; sample: string[] };
  };
  const cohortNamed = async (name: string) => {
    const list = await api().get(`/api/cohorts?projectId=${pid}`);
    return (list.body as Array<{ id: number; name: string; definition: any }>).find((c) => c.name === name);
  };
  const membersOf = async (id: number) => (await api().get(`/api/cohorts/${id}/members`)).body.members as string[];
  const field = (name: string) => page.locator(`::-p-aria([name="${name}"])`);
  const button = (name: string) => page.locator(`::-p-aria([name="${name}"][role="button"])`);
  /** Waits for the builder's preview to say `count` people (after its debounce and the API's answer). */
  const previewSays = (count: number) =>
    page.waitForFunction((n) => document.querySelector('.cohort-preview strong')?.textContent === String(n) && document.querySelector('.cohort-preview')?.getAttribute('aria-busy') === 'false', { timeout: 15_000 }, count);
  const fill = (name: string, value: string) => field(name).fill(value);
  const peopleShown = () => page.$$eval('section[aria-label="People"] li', (lis) => lis.map((l) => l.textContent!.trim()).sort());

  it('New cohort builds a behaviour and property cohort, previews its size live and saves it; its members are listed', async function () {
    this.timeout(90_000);
    await page.goto(`${t.url}/projects/${pid}/people?tab=cohorts`);
    await button('New cohort').click();
    await page.waitForSelector('form[aria-label="New cohort"]');
    await field('Name').fill('Buyers or VIPs');
    await field('Criterion 1 event').fill('Purchased');
    const buyers = { kind: 'behavior', event: 'Purchased', op: 'gte', count: 1, windowDays: 30 };
    const expectBuyers = await preview({ op: 'and', criteria: [buyers] });
    assert.equal(expectBuyers.count, 12);
    await previewSays(expectBuyers.count);
    // did not
    await page.select('select[aria-label="Criterion 1 did or did not"]', 'lt');
    await previewSays((await preview({ op: 'and', criteria: [{ ...buyers, op: 'lt' }] })).count);
    await page.select('select[aria-label="Criterion 1 did or did not"]', 'gte');
    // + a property of the person, matched any
    await button('Add property criterion').click();
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Criterion 2 property');
    await field('Criterion 2 property').fill('tier');
    await field('Criterion 2 value').fill('vip');
    await page.select('#cohort-op', 'or');
    const definition = { op: 'or', criteria: [buyers, { kind: 'property', filter: { key: 'tier', op: 'eq', value: 'vip' } }] };
    const expected = await preview(definition);
    assert.equal(expected.count, 13);
    await previewSays(expected.count);
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the builder (light)');

    await button('Save cohort').click();
    await page.waitForSelector('ul[aria-label="Cohort members"]');
    const saved = await cohortNamed('Buyers or VIPs');
    assert.ok(saved, 'the cohort is saved');
    assert.deepEqual(saved.definition, definition);
    const members = await membersOf(saved.id);
    assert.equal(members.length, 13);
    assert.ok(members.includes('user-30'));
    assert.deepEqual(await page.$$eval('ul[aria-label="Cohort members"] li', (els) => els.map((e) => e.textContent)), members);
    assert.ok(new URL(page.url()).search.includes(`cohort=${saved.id}`));
    assert.match(await page.$eval('ul[aria-label="Cohorts"]', (e) => e.textContent!), /Buyers or VIPs · 13 people/);
  });

  it('a refused save shows the API error and keeps every edit; the cohort is then edited and deleted', async function () {
    this.timeout(90_000);
    await page.goto(`${t.url}/projects/${pid}/people?tab=cohorts&cohort=new`);
    await page.waitForSelector('form[aria-label="New cohort"]');
    await field('Name').fill('Recent viewers');
    await field('Description').fill('kept');
    await field('Criterion 1 event').fill('Viewed product');
    await fill('Criterion 1 days', '400');
    const before = (await api().get(`/api/cohorts?projectId=${pid}`)).body.length;
    await button('Save cohort').click();
    await page.waitForSelector('form[aria-label="New cohort"] [role="alert"]');
    assert.match(await page.$eval('form[aria-label="New cohort"] [role="alert"]', (e) => e.textContent!), /windowDays/);
    const values = await page.$$eval('form[aria-label="New cohort"] input', (els) => els.map((e) => (e as HTMLInputElement).value));
    assert.deepEqual(values, ['Recent viewers', 'kept', 'Viewed product', '1', '400']);
    assert.equal((await api().get(`/api/cohorts?projectId=${pid}`)).body.length, before, 'nothing saved');
    await fill('Criterion 1 days', '30');
    await button('Save cohort').click();
    await page.waitForSelector('form[aria-label="Cohort Recent viewers"]');
    const saved = await cohortNamed('Recent viewers');
    assert.ok(saved);
    assert.equal(saved.definition.criteria[0].windowDays, 30);
    // Edit: at least 2 views is nobody (one view each).
    await fill('Criterion 1 times', '2');
    await previewSays(0);
    await button('Save').click();
    await page.waitForFunction(() => /No member now/.test(document.querySelector('section[aria-labelledby="cohort-title"]')?.textContent ?? ''), { timeout: 15_000 });
    assert.equal((await cohortNamed('Recent viewers'))!.definition.criteria[0].count, 2);
    page.once('dialog', (d) => void d.accept());
    await button('Delete cohort').click();
    await page.waitForFunction(() => !/Recent viewers/.test(document.querySelector('ul[aria-label="Cohorts"]')?.textContent ?? ''), { timeout: 15_000 });
    assert.equal(await cohortNamed('Recent viewers'), undefined);
  });

  it('Save as cohort under a trend point saves exactly its people', async function () {
    this.timeout(90_000);
    await page.goto(`${t.url}/projects/${pid}/insights`);
    await page.waitForSelector('#metric-0');
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] canvas');
    // Yesterday's bucket always has sign-ups (the seed spreads them over the last ten days).
    await page.focus('[role="figure"] .chart-canvas');
    await page.keyboard.press('End');
    await page.keyboard.press('ArrowLeft');
    await page.waitForSelector('[role="tooltip"]');
    await page.keyboard.press('Enter');
    await page.waitForSelector('section[aria-label="People"] li');
    const shown = await peopleShown();
    assert.ok(shown.length > 0);
    await button('Save as cohort').click();
    await fill('Cohort name', 'Signed up yesterday');
    await button(`Save ${shown.length} ${shown.length === 1 ? 'person' : 'people'}`).click();
    await page.waitForFunction(() => /Saved the cohort/.test(document.querySelector('.save-as-cohort [role="status"]')?.textContent ?? ''), { timeout: 15_000 });
    const saved = await cohortNamed('Signed up yesterday');
    assert.ok(saved);
    assert.deepEqual(saved.definition.criteria.map((c: any) => c.kind), ['static']);
    assert.deepEqual(await membersOf(saved.id), shown);
    assert.equal(await page.$('section[aria-label="People"] [role="alert"]'), null);
  });

  it("Save as cohort under a funnel's drop-off saves exactly those who dropped (as the API's drill-down lists them)", async function () {
    this.timeout(90_000);
    await page.goto(`${t.url}/projects/${pid}/insights`);
    await page.waitForSelector('#metric-0');
    await page.locator('.tabs button::-p-text(Funnel)').click();
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Purchased');
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] svg');
    await page.locator('button.link::-p-text(dropped)').click();
    await page.waitForFunction(() => /Dropped before step 2/.test(document.querySelector('section[aria-label="People"] h2')?.textContent ?? ''));
    const q = {
      v: 2, dateRange: { kind: 'preset', preset: '30d' },
      metrics: [{ id: 'A', kind: 'event', event: 'Signed up', aggregation: { op: 'count' } }, { id: 'B', kind: 'event', event: 'Purchased', aggregation: { op: 'count' } }],
      analysis: { kind: 'funnel', steps: ['A', 'B'], window: { value: 30, unit: 'day' }, order: 'ordered', chart: 'steps' },
    };
    const r = await api().post('/api/query/drilldown', { projectId: pid, query: q, selection: { kind: 'funnel', step: 1, mode: 'dropped' }, page: { limit: 500, offset: 0 } });
    assert.equal(r.status, 200, r.text);
    const dropped = (r.body.users as Array<{ distinctId: string }>).map((u) => u.distinctId).sort();
    assert.equal(dropped.length, 28);
    assert.deepEqual(await peopleShown(), dropped);
    await button('Save as cohort').click();
    await fill('Cohort name', 'Signed up, did not buy');
    await button('Save 28 people').click();
    await page.waitForFunction(() => /Saved the cohort/.test(document.querySelector('.save-as-cohort [role="status"]')?.textContent ?? ''), { timeout: 15_000 });
    const saved = await cohortNamed('Signed up, did not buy');
    assert.ok(saved);
    assert.deepEqual(await membersOf(saved.id), dropped);
    // The saved cohort opens from the notice with its list of people in the builder.
    await page.locator('.save-as-cohort a').click();
    await page.waitForSelector('ul[aria-label="Cohort members"]');
    assert.deepEqual(await page.$$eval('ul[aria-label="Cohort members"] li', (els) => els.map((e) => e.textContent)), dropped);
    // The members may come before the cohort's list, which the builder is drawn from: wait for it.
    await page.waitForSelector('.cohort-builder');
    assert.match(await page.$eval('.cohort-builder', (e) => e.textContent!), /28 distinct ids/);
  });

  it('viewers see a cohort read-only; the builder has no serious accessibility violation in dark and fits a phone', async function () {
    this.timeout(90_000);
    const saved = await cohortNamed('Buyers or VIPs');
    assert.ok(saved);
    const viewerToken = (await tenant.owner.post('/api/org/tokens', { name: 'viewer', role: 'viewer' })).body.token as string;
    const ctx = await browser.createBrowserContext();
    const p2 = await ctx.newPage();
    await p2.goto(`${t.url}/projects/${pid}/people?tab=cohorts&cohort=${saved.id}`);
    await signInWithToken(p2, viewerToken);
    await p2.goto(`${t.url}/projects/${pid}/people?tab=cohorts&cohort=${saved.id}`);
    await p2.waitForSelector('form.cohort-builder');
    assert.equal(await p2.$('::-p-aria([name="New cohort"][role="button"])'), null, 'no New cohort for a viewer');
    assert.equal(await p2.$('form.cohort-builder button[type="submit"]'), null, 'no Save for a viewer');
    assert.equal(await p2.$eval('form.cohort-builder fieldset', (f) => (f as HTMLFieldSetElement).disabled), true);
    assert.equal(await p2.$eval('[aria-label="Criterion 1 event"]', (e) => (e as HTMLInputElement).value), 'Purchased');
    await ctx.close();

    await page.goto(`${t.url}/projects/${pid}/people?tab=cohorts&cohort=new`);
    await page.waitForSelector('form[aria-label="New cohort"]');
    await page.locator('header button::-p-text(Theme)').click();
    await button('Add property criterion').click();
    await button('Add list of people').click();
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the builder (dark)');
    await page.locator('header button::-p-text(Theme)').click();
    // Keyboard: Tab from the name reaches the description, then the match select.
    await page.focus('#cohort-name');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'cohort-description');
    await page.setViewport({ width: 390, height: 844 });
    await page.waitForFunction(() => document.documentElement.scrollWidth <= window.innerWidth + 1, { timeout: 10_000 }).catch(() => undefined);
    const widths = await page.evaluate(() => ({ doc: document.documentElement.scrollWidth, view: window.innerWidth }));
    assert.ok(widths.doc <= widths.view + 1, `the builder fits a phone (${widths.doc} px in ${widths.view} px)`);
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the builder (phone)');
    await page.setViewport({ width: 1280, height: 900 });
  });
});
