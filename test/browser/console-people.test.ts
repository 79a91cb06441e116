import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, SUPERADMIN_KEY, type Tenant, type TestService } from '../support/service.js';
import { axeViolations, ensureConsoleBuilt, launchBrowser, signInWithToken } from '../support/browser.js';
import { drained, ingest } from '../support/ingestion.js';

/**
 * The console's Events and People pages in a real browser against the real service: events
 * arriving while the page is open, a person's profile, identity cluster and timeline, a cohort's
 * members, and a privacy request (signed in with the superadmin key, which acts as an owner); the
 * people list using the page, a search's exact match first, and Sessions saying it has no Save.
 */
forEachBackend('web console: events and people', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let browser: Browser;
  let page: Page;
  let pid: number;

  before(async function () {
    this.timeout(180_000);
    ensureConsoleBuilt();
    t = await startTestService(backend);
    tenant = await createTenant(t, 'People console');
    pid = tenant.project.id;
    const now = Date.now();
    const send = ingest(t, tenant.project.token);
    let r = await send.post('/track', [
      { event: 'Signed up', properties: { distinct_id: '$device:phone-1', time: now - 3_600_000, $insert_id: 's1' } },
      { event: 'Signed up', properties: { distinct_id: 'user-2', time: now - 3_000_000, $insert_id: 's2' } },
    ]);
    assert.equal(r.status, 200, r.text);
    await drained(t);
    r = await send.post('/alias', { alias: '$device:phone-1', distinct_id: 'user-1' });
    assert.equal(r.status, 200, r.text);
    r = await send.post('/track', { event: 'Purchased', properties: { distinct_id: 'user-1', time: now - 600_000, amount: 12, $insert_id: 'p1' } });
    assert.equal(r.status, 200, r.text);
    r = await send.post('/engage', { distinct_id: 'user-1', $set: { name: 'Ada Lovelace' } });
    assert.equal(r.status, 200, r.text);
    await drained(t);
    const cohort = await tenant.owner.post('/api/cohorts', {
      projectId: pid, name: 'Buyers', definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'Purchased', op: 'gte', count: 1, windowDays: 30 }] },
    });
    assert.equal(cohort.status, 201, cohort.text);
    browser = await launchBrowser();
    page = await browser.newPage();
    page.on('pageerror', (e) => console.error('    page error:', (e as Error).message));
    await page.goto(`${t.url}/projects/${pid}/events`);
    await signInWithToken(page, SUPERADMIN_KEY);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const rowsOf = (label: string) =>
    page.$$eval(`table[aria-label="${label}"] tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())));

  it('shows the newest events and the ones arriving while the page is open, marked as new', async function () {
    this.timeout(60_000);
    await page.waitForSelector('table[aria-label="Latest events"]');
    const first = await rowsOf('Latest events');
    assert.deepEqual(first.map((r) => r[1]), ['Purchased', 'Signed up', 'Signed up']);
    const r = await ingest(t, tenant.project.token).post('/track', { event: 'Live event', properties: { distinct_id: 'user-2', plan: 'pro', $insert_id: 'live1' } });
    assert.equal(r.status, 200, r.text);
    await page.waitForFunction(() => [...document.querySelectorAll('table[aria-label="Latest events"] tbody tr.fresh')].some((tr) => tr.textContent!.includes('Live event')), { timeout: 20_000 });
    const now = await rowsOf('Latest events');
    assert.deepEqual(now[0].slice(1, 3), ['Live event', 'user-2']);
    assert.match(now[0][3], /plan: pro/);
    assert.match(await page.$eval('.events-page [aria-live="polite"]', (e) => e.textContent!), /^1 new event$/);
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the Events page');
  });

  it("opens a person from the list: profile, identity cluster and timeline (a device id leads to its person)", async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}/projects/${pid}/people`);
    await page.waitForSelector('table[aria-label="People"]');
    await page.locator('::-p-aria([name="Search people"])').fill('Ada');
    await page.locator('::-p-aria([name="Search"][role="button"])').click();
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="People"] tbody tr').length === 1);
    await page.locator('table[aria-label="People"] a::-p-text(user-1)').click();
    await page.waitForSelector('ul[aria-label="Identity cluster"]');
    assert.equal(new URL(page.url()).pathname, `/projects/${pid}/people/user-1`);
    const cluster = await page.$$eval('ul[aria-label="Identity cluster"] code', (els) => els.map((e) => e.textContent));
    assert.deepEqual([cluster[0], [...cluster].sort()], ['user-1', ['$device:phone-1', 'user-1']]);
    assert.match(await page.$eval('table[aria-label="Profile properties"]', (e) => e.textContent!), /nameAda Lovelace/);
    assert.deepEqual(await axeViolations(page), [], "no serious or critical accessibility violation on a person's page");
    const timeline = await page.$$eval('.timeline li strong', (els) => els.map((e) => e.textContent));
    assert.deepEqual(timeline, ['Purchased', 'Signed up']);
    // The device id, linked retroactively, leads to the same person.
    await page.goto(`${t.url}/projects/${pid}/people/${encodeURIComponent('$device:phone-1')}`);
    await page.waitForSelector('.person-page h1');
    assert.equal(await page.$eval('.person-page h1', (e) => e.textContent), 'user-1');
  });

  it("lists cohorts with their members, and runs a privacy request to completion", async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}/projects/${pid}/people?tab=cohorts`);
    await page.locator('ul[aria-label="Cohorts"] a::-p-text(Buyers)').click();
    await page.waitForSelector('ul[aria-label="Cohort members"]');
    assert.deepEqual(await page.$$eval('ul[aria-label="Cohort members"] li', (els) => els.map((e) => e.textContent)), ['user-1']);
    await page.locator('nav[aria-label="People sections"] a::-p-text(Privacy requests)').click();
    await page.waitForSelector('form[aria-label="New privacy request"]');
    assert.ok(await page.$('#privacy-type option[value="delete"]'), 'an owner may ask for deletion');
    await page.locator('::-p-aria([name="Distinct ids (one a line; each one\'s whole identity)"])').fill('user-2');
    await page.locator('::-p-aria([name="Create request"][role="button"])').click();
    await page.waitForFunction(() => /completed/.test(document.querySelector('table[aria-label="Privacy requests"] tbody tr')?.textContent ?? ''), { timeout: 30_000 });
    const [row] = await rowsOf('Privacy requests');
    assert.deepEqual(row.slice(1, 3), ['access', 'completed']);
    assert.ok(await page.$('table[aria-label="Privacy requests"] button'), 'a completed access request has its download');
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the privacy tab');
  });

  it('lists people on the page itself (no small scroll box) and puts the exact match of a search first', async function () {
    this.timeout(60_000);
    // user104 is the oldest of those `user104` finds; the newest seen come first otherwise.
    const now = Date.now();
    const ids = ['user104', ...Array.from({ length: 20 }, (_, i) => `user${1040 + i}`)];
    const r = await ingest(t, tenant.project.token).post('/track', ids.map((id, i) => ({ event: 'Visited', properties: { distinct_id: id, time: now - 7_200_000 + i * 60_000, $insert_id: `v-${id}` } })));
    assert.equal(r.status, 200, r.text);
    await drained(t);
    const api = await tenant.owner.get(`/api/data/users?projectId=${pid}&search=USER104`);
    assert.equal(api.status, 200, api.text);
    assert.equal(api.body.total, 11, 'user104 and user1040 to user1049');
    assert.equal(api.body.users[0].distinct_id, 'user104', 'the exact match (but for case) first');
    assert.equal(api.body.users[1].distinct_id, 'user1049', 'then the newest seen');

    await page.setViewport({ width: 1280, height: 800 });
    await page.goto(`${t.url}/projects/${pid}/people`);
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="People"] tbody tr').length === 23);
    const box = await page.$eval('.people-page .table-wrap', (e) => ({ scroll: e.scrollHeight, client: e.clientHeight, table: e.querySelector('table')!.getBoundingClientRect().height }));
    assert.ok(box.table > 400, `23 rows need more than a small box (${box.table} px)`);
    assert.ok(box.scroll <= box.client + 1, `the list has no scroll box of its own (${box.scroll} px in ${box.client} px)`);

    await page.locator('::-p-aria([name="Search people"])').fill('user104');
    await page.locator('::-p-aria([name="Search"][role="button"])').click();
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="People"] tbody tr').length === 11);
    const found = await rowsOf('People');
    assert.deepEqual(found.slice(0, 3).map((row) => row[0]), ['user104', 'user1049', 'user1048']);
  });

  it('says plainly that Sessions cannot be saved', async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}/projects/${pid}/insights`);
    await page.locator('::-p-aria([name="Sessions"][role="button"])').click();
    await page.waitForSelector('[role="note"]#sessions-unsaved');
    assert.match(await page.$eval('#sessions-unsaved', (e) => e.textContent!), /Sessions cannot be saved as a report or put on a board/);
    assert.equal(await page.$('#report-name'), null, 'no Save form that would refuse');
    await page.locator('::-p-aria([name="Trends"][role="button"])').click();
    await page.waitForSelector('#report-name');
    assert.equal(await page.$('#sessions-unsaved'), null, 'the note is about Sessions only');
  });
});
