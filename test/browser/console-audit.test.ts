import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { axeViolations, ensureConsoleBuilt, launchBrowser, signInWithToken } from '../support/browser.js';
import { ACTOR_KINDS as SERVER_ACTOR_KINDS, TARGET_KINDS as SERVER_TARGET_KINDS } from '../../apps/server/src/audit/schema.js';
import { ACTOR_KINDS, TARGET_KINDS } from '../../apps/console/src/pages/audit/kinds.js';

/**
 * The console's Audit log page in a real browser (chromium through puppeteer-core) against the
 * real service: changes made through the API by a person, a machine-access token and the
 * superadmin key are listed as `GET /api/audit-log` answers them, filtered through the address,
 * paged with "Load older", and a row's details show exactly the fields its change changed. A
 * member neither sees the page in the navigation nor gets the log by opening its address.
 */
describe('web console: audit log filter lists', () => {
  it("offers exactly the server's actor and target kinds", () => {
    assert.deepEqual([...ACTOR_KINDS], [...SERVER_ACTOR_KINDS]);
    assert.deepEqual([...TARGET_KINDS], [...SERVER_TARGET_KINDS]);
  });
});

interface Entry {
  id: number;
  at: number;
  actor: { kind: string; id: number | null; resource?: string };
  projectId?: number;
  action: string;
  target: { kind: string; id: number | null };
  before: any;
  after: any;
}

forEachBackend('web console: audit log', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let browser: Browser;
  let page: Page;
  let machineTokenId: number;
  let reportId: number;
  let ownerEmail: string;

  const auditPath = () => `/projects/${tenant.project.id}/audit-log`;
  /** The organisation's whole log as the API answers an admin, newest first (every page). */
  const apiLog = async (filters: Record<string, string> = {}): Promise<Entry[]> => {
    const all: Entry[] = [];
    let cursor: string | null = null;
    do {
      const q: URLSearchParams = new URLSearchParams({ ...filters, limit: '200', ...(cursor ? { cursor } : {}) });
      const res: { status: number; text: string; body: { entries: Entry[]; nextCursor: string | null } } = await t.client(tenant.tokens.admin).get(`/api/audit-log?${q}`);
      assert.equal(res.status, 200, res.text);
      all.push(...res.body.entries);
      cursor = res.body.nextCursor;
    } while (cursor);
    return all;
  };
  /** The table's rows as the page shows them: [when, who, action, target, project]. */
  const rows = () => page.$$eval('.audit-table > table > tbody > tr:not(.audit-detail)', (trs) =>
    trs.map((tr) => [...tr.children].slice(0, 5).map((c) => c.textContent!.trim())));
  /** The table shows these actions (it may still hold the previous filter's rows when `settled` returns). */
  const rowsShow = (actions: string[]) => page.waitForFunction((want) => {
    const got = [...document.querySelectorAll('.audit-table > table > tbody > tr:not(.audit-detail)')].map((tr) => tr.children[2]?.textContent!.trim());
    return JSON.stringify(got) === JSON.stringify(want);
  }, { timeout: 20_000 }, actions).catch(() => undefined);
  const settled = () => page.waitForFunction(() => !document.querySelector('.audit-page .loading') && !!document.querySelector('.audit-page [role="status"]')?.textContent, { timeout: 20_000 });
  const whoOf = (e: Entry) =>
    e.actor.kind === 'user' ? (e.actor.id === null ? '' : emails.get(e.actor.id) ?? `user #${e.actor.id}`)
      : e.actor.kind === 'token' ? `token #${e.actor.id}`
        : e.actor.resource ? `${e.actor.kind} (${e.actor.resource})` : e.actor.kind;
  const emails = new Map<number, string>();

  before(async function () {
    this.timeout(180_000);
    ensureConsoleBuilt();
    t = await startTestService(backend);
    tenant = await createTenant(t, 'Audit console');
    const pid = tenant.project.id;
    ownerEmail = `owner.${tenant.org.id}.auditconsole@example.test`; // the service keeps emails in lower case
    // Changes by three kinds of actor: the owner (a person), a member machine-access token, the superadmin key.
    const minted = await tenant.owner.post('/api/org/tokens', { name: 'audit console', role: 'member' });
    assert.equal(minted.status, 201, minted.text);
    machineTokenId = minted.body.id;
    const machine = t.client(minted.body.token);
    const board = await tenant.owner.post(`/api/boards?projectId=${pid}`, { name: 'Audit board' });
    assert.equal(board.status, 201, board.text);
    const query = { v: 2, dateRange: { kind: 'preset', preset: '30d' }, metrics: [{ id: 'A', kind: 'event', event: 'Signed up', aggregation: { op: 'count' } }], analysis: { kind: 'trend', unit: 'day', chart: 'line' } };
    const report = await machine.post(`/api/reports?projectId=${pid}`, { name: 'Signups', type: 'segmentation', query });
    assert.equal(report.status, 201, report.text);
    reportId = report.body.id;
    const renamed = await machine.put(`/api/reports/${reportId}`, { name: 'Signups v2', description: 'renamed for the audit test' });
    assert.equal(renamed.status, 200, renamed.text);
    const note = await t.admin.post(`/api/annotations?projectId=${pid}`, { date: new Date().toISOString().slice(0, 10), description: 'Audit launch' });
    assert.equal(note.status, 201, note.text);
    for (const m of (await tenant.owner.get('/api/org/members')).body) if (m.user_id !== null) emails.set(m.user_id, m.email);

    browser = await launchBrowser();
    page = await browser.newPage();
    page.on('pageerror', (e) => console.error('    page error:', (e as Error).message));
    await page.goto(t.url + auditPath());
    // An admin signs in with their identity provider's ID token, so the log names people by email.
    await signInWithToken(page, tenant.tokens.admin);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('lists the changes made through the API newest first, naming who made each', async function () {
    this.timeout(60_000);
    const log = await apiLog();
    // The premise: each change above has its row.
    const actions = log.map((e) => `${e.action} ${e.actor.kind}`);
    for (const a of ['board.created user', 'report.created token', 'report.updated token', 'annotation.created superadmin']) assert.ok(actions.includes(a), `${a} in ${actions.join(', ')}`);
    assert.ok(log.every((e, i) => i === 0 || e.id < log[i - 1].id), 'newest first');
    assert.equal(new URL(page.url()).pathname, auditPath());
    await settled();
    // The members' emails come in their own request, maybe after the rows: wait for the owner's (asserted below).
    await page.waitForFunction((email) => [...document.querySelectorAll('.audit-table td[data-label="Who"]')].some((td) => td.textContent!.trim() === email), { timeout: 20_000 }, ownerEmail).catch(() => undefined);
    const shown = await rows();
    assert.deepEqual(shown.map((r) => r.slice(1)), log.map((e) => [
      whoOf(e), e.action, `${e.target.kind.replace(/_/g, ' ')}${e.target.id === null ? '' : ` #${e.target.id}`}${nameOf(e)}`,
      e.projectId === undefined ? '—' : e.projectId === tenant.project.id ? tenant.project.name : `project #${e.projectId}`,
    ]));
    // People by email, tokens by id, the superadmin by name.
    const who = new Map(log.map((e, i) => [`${e.action} ${e.actor.kind}`, shown[i][1]]));
    assert.equal(who.get('board.created user'), ownerEmail);
    assert.equal(who.get('report.created token'), `token #${machineTokenId}`);
    assert.equal(who.get('annotation.created superadmin'), 'superadmin');
    // The navigation offers the page to an admin, marked as the current one.
    assert.equal(await page.$eval('nav[aria-label="Project"] a[aria-current="page"]', (a) => a.textContent), 'Audit log');
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the Audit log page');
  });

  it('filters by actor kind and target kind through the address, which reopens the same view', async function () {
    this.timeout(60_000);
    await page.select('#audit-actor', 'token');
    await page.waitForFunction(() => new URLSearchParams(location.search).get('actorKind') === 'token');
    await settled();
    const byToken = await apiLog({ actorKind: 'token' });
    await rowsShow(byToken.map((e) => e.action));
    assert.ok(byToken.length >= 2, 'the token made at least two changes');
    assert.deepEqual((await rows()).map((r) => [r[1], r[2]]), byToken.map((e) => [`token #${e.actor.id}`, e.action]));

    await page.select('#audit-target', 'report');
    await page.waitForFunction(() => new URLSearchParams(location.search).get('targetKind') === 'report');
    await settled();
    const reports = await apiLog({ actorKind: 'token', targetKind: 'report' });
    await rowsShow(reports.map((e) => e.action));
    assert.deepEqual((await rows()).map((r) => r[2]), reports.map((e) => e.action));
    assert.ok(reports.some((e) => e.action === 'report.updated'));
    assert.ok(reports.every((e) => e.target.kind === 'report' && e.actor.kind === 'token'));
    const shared = page.url();
    assert.equal(new URL(shared).searchParams.get('actorKind'), 'token');

    // The shared address opened afresh shows the same rows and the same choices in the filters.
    const other = await browser.newPage();
    try {
      await other.goto(t.url + '/sign-in');
      await signInWithToken(other, tenant.tokens.owner);
      await other.goto(shared);
      await other.waitForFunction(() => document.querySelectorAll('.audit-table tbody tr').length > 0);
      assert.deepEqual(
        await other.$$eval('.audit-table > table > tbody > tr', (trs) => trs.map((tr) => tr.children[2].textContent!.trim())),
        reports.map((e) => e.action),
      );
      assert.deepEqual(await other.$eval('#audit-actor', (s) => (s as HTMLSelectElement).value), 'token');
      assert.deepEqual(await other.$eval('#audit-target', (s) => (s as HTMLSelectElement).value), 'report');
    } finally {
      await other.close();
    }

    // Clear filters brings every row back.
    await page.locator('::-p-aria([name="Clear filters"])').click();
    await page.waitForFunction(() => location.search === '');
    await settled();
    const all = await apiLog();
    await rowsShow(all.map((e) => e.action));
    assert.equal((await rows()).length, all.length);
  });

  it('keeps the status line, the rows and the filters in step through a filter change', async function () {
    this.timeout(60_000);
    await page.goto(t.url + auditPath());
    await settled();
    // Every change to the page is sampled as it lands: the address's actor kind, the status line, the rows' "Who".
    await page.evaluate(() => {
      const w = window as unknown as { auditSamples: Array<{ actorKind: string | null; status: string; who: string[] }> };
      w.auditSamples = [];
      new MutationObserver(() => w.auditSamples.push({
        actorKind: new URLSearchParams(location.search).get('actorKind'),
        status: document.querySelector('.audit-page [role="status"]')?.textContent ?? '',
        who: [...document.querySelectorAll('.audit-table > table > tbody > tr:not(.audit-detail)')].map((tr) => tr.children[1]?.textContent!.trim()),
      })).observe(document.querySelector('.audit-page')!, { childList: true, subtree: true, characterData: true, attributes: true });
    });
    await page.select('#audit-actor', 'token');
    const byToken = await apiLog({ actorKind: 'token' });
    await rowsShow(byToken.map((e) => e.action));
    // Read together, in one evaluate: the status line counts the rows the table shows.
    const now = await page.evaluate(() => ({
      status: document.querySelector('.audit-page [role="status"]')?.textContent ?? '',
      rows: document.querySelectorAll('.audit-table > table > tbody > tr:not(.audit-detail)').length,
    }));
    assert.equal(now.rows, byToken.length);
    assert.equal(now.status, `${byToken.length} ${byToken.length === 1 ? 'entry' : 'entries'}.`);
    // And at every change in between: a status line only beside the rows it counts, both for the filter in the address.
    const samples: Array<{ actorKind: string | null; status: string; who: string[] }> = await page.evaluate(() => (window as any).auditSamples);
    assert.ok(samples.some((s) => s.actorKind === 'token'), 'the change was sampled');
    for (const s of samples) {
      if (!s.status) continue;
      assert.equal(Number(/^(\d+)/.exec(s.status)?.[1]), s.who.length, `status "${s.status}" beside ${s.who.length} rows`);
      if (s.actorKind === 'token') assert.ok(s.who.every((w) => w.startsWith('token #')), `rows for actorKind=token: ${s.who.join(', ')}`);
    }
  });

  it('filters by a date range (UTC days) and by project', async function () {
    this.timeout(60_000);
    const today = new Date().toISOString().slice(0, 10);
    await page.goto(`${t.url}${auditPath()}?to=2020-01-01`);
    await page.waitForFunction(() => /No change matches these filters/.test(document.querySelector('.audit-page')?.textContent ?? ''));
    await page.goto(`${t.url}${auditPath()}?from=${today}&to=${today}&projectId=${tenant.project.id}`);
    await settled();
    const inProject = await apiLog({ projectId: String(tenant.project.id) });
    assert.ok(inProject.length > 0);
    assert.deepEqual((await rows()).map((r) => r[2]), inProject.map((e) => e.action));
    assert.equal(await page.$eval('#audit-from', (i) => (i as HTMLInputElement).value), today);
    assert.equal(await page.$eval('#audit-project', (s) => (s as HTMLSelectElement).value), String(tenant.project.id));
    // A filter the API refuses is shown in the API's own words.
    await page.goto(`${t.url}${auditPath()}?actorKind=robot`);
    await page.waitForSelector('.audit-page [role="alert"]');
    assert.match(await page.$eval('.audit-page [role="alert"]', (e) => e.textContent!), /actorKind/);
  });

  it('pages with a small limit through "Load older" until the oldest entry, keeping the keyboard on the new rows', async function () {
    this.timeout(60_000);
    const log = await apiLog();
    assert.ok(log.length > 4, `enough rows to page (${log.length})`);
    await page.goto(`${t.url}${auditPath()}?limit=2`);
    await settled();
    assert.equal((await rows()).length, 2);
    let pages = 1;
    while (await page.$('.audit-more button')) {
      const before = (await rows()).length;
      await page.locator('::-p-aria([name="Load older"][role="button"])').click();
      await page.waitForFunction((n) => document.querySelectorAll('.audit-table > table > tbody > tr').length > n, {}, before);
      pages++;
      // The focus moves to the first row the page added (in the render after the rows appear: wait
      // for it, up to 5 s, rather than read it at once on a loaded machine).
      const focusedFirstNew = await page.waitForFunction((id) => document.activeElement?.getAttribute('data-entry') === String(id), { timeout: 5000 }, log[before].id)
        .then(() => true, () => false);
      const focused = await page.evaluate(() => document.activeElement?.getAttribute('data-entry'));
      assert.ok(focusedFirstNew, `focus on the first new row ${log[before].id}, not ${focused}`);
      assert.ok(pages < 100);
    }
    assert.equal(pages, Math.ceil(log.length / 2));
    const shown = await rows();
    assert.deepEqual(shown.map((r) => r[2]), log.map((e) => e.action));
    assert.match(await page.$eval('.audit-page [role="status"]', (e) => e.textContent!), /the oldest reached/);
  });

  it("opens a row's details from the keyboard: only the fields the change changed, before and after", async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}${auditPath()}?targetKind=report`);
    await settled();
    const updated = (await apiLog({ targetKind: 'report', action: 'report.updated' }))[0];
    assert.ok(updated, 'the rename has its row');
    const expected = Object.keys({ ...updated.before, ...updated.after }).filter((k) => JSON.stringify(updated.before[k]) !== JSON.stringify(updated.after[k]));
    assert.ok(expected.includes('name') && expected.includes('description'));
    assert.ok(!expected.includes('query') && !expected.includes('type'), 'unchanged fields are not part of the change');
    await page.focus(`button[data-entry="${updated.id}"]`);
    await page.keyboard.press('Enter');
    await page.waitForSelector(`#audit-${updated.id}-changes table`);
    assert.equal(await page.$eval(`button[data-entry="${updated.id}"]`, (b) => b.getAttribute('aria-expanded')), 'true');
    const diff = await page.$$eval(`#audit-${updated.id}-changes tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())));
    assert.deepEqual(diff.map((r) => r[0]), expected);
    const name = diff.find((r) => r[0] === 'name')!;
    assert.deepEqual(name.slice(1), ['"Signups"', '"Signups v2"']);
    // The created row lists what it was created with; before is empty.
    const created = (await apiLog({ targetKind: 'report', action: 'report.created' }))[0];
    await page.locator(`::-p-aria([name="Details of entry ${created.id}"][role="button"])`).click();
    await page.waitForSelector(`#audit-${created.id}-changes table`);
    const made = await page.$$eval(`#audit-${created.id}-changes tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())));
    assert.deepEqual(made.find((r) => r[0] === 'name')?.slice(1), ['—', '"Signups"']);
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation with details open');
    // Enter again closes it.
    await page.focus(`button[data-entry="${updated.id}"]`);
    await page.keyboard.press('Enter');
    await page.waitForFunction((id) => !document.getElementById(`audit-${id}-changes`), {}, updated.id);
  });

  it('fits a phone: every entry a card, nothing wider than the screen, in the dark theme too', async function () {
    this.timeout(60_000);
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    try {
      await page.goto(t.url + auditPath());
      await settled();
      const widths = await page.evaluate(() => ({ doc: document.documentElement.scrollWidth, table: document.querySelector('.audit-table')!.scrollWidth }));
      assert.ok(widths.doc <= 390, `page ${widths.doc}px wide`);
      assert.ok(widths.table <= 390, `log ${widths.table}px wide`);
      // The filters and the Menu are reachable; the entries stack.
      const tops = await page.$$eval('.audit-table > table > tbody > tr', (trs) => trs.slice(0, 2).map((tr) => {
        const r = tr.getBoundingClientRect();
        return { top: r.top, bottom: r.bottom, left: r.left, right: r.right };
      }));
      assert.ok(tops[1].top >= tops[0].bottom, `entries one below the other: ${JSON.stringify(tops)}`);
      assert.ok(tops.every((r) => r.left >= 0 && r.right <= 390), 'each entry within the screen');
      await page.locator('::-p-aria([name="Menu"][role="button"])').click();
      await page.locator('header button::-p-text(Theme)').click();
      await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
      const opened = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(opened <= 390, `with the menu open the page is ${opened}px wide`);
      await page.locator(`.audit-table button[data-entry]`).click();
      await page.waitForSelector('.audit-detail table');
      assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on a phone, dark');
      await page.screenshot({ path: `/tmp/console-audit-phone-${backend.name}.png`, fullPage: true });
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });

  it('is not offered to a member, and answers a member who opens its address with a message and no log', async function () {
    this.timeout(60_000);
    const member = await browser.newPage();
    const asked: string[] = [];
    member.on('request', (r) => { if (r.url().includes('audit-log') && r.url().includes('/api/')) asked.push(r.url()); });
    try {
      await member.goto(`${t.url}/projects/${tenant.project.id}/boards`);
      await signInWithToken(member, tenant.tokens.member);
      await member.waitForSelector('nav[aria-label="Project"] a');
      const links = await member.$$eval('nav[aria-label="Project"] a', (as) => as.map((a) => a.textContent!.trim()));
      assert.ok(links.includes('Flags') && !links.includes('Audit log'), links.join(', '));
      await member.goto(t.url + auditPath());
      await member.waitForSelector('main [role="alert"]');
      assert.match(await member.$eval('main [role="alert"]', (e) => e.textContent!), /for the organisation's admins and owners; your role is member/);
      assert.equal(await member.$('.audit-table'), null);
      assert.deepEqual(asked, [], 'the page asks the API for nothing it would refuse');
      // The API refuses the member too (the page's message is not the only guard).
      assert.equal((await t.client(tenant.tokens.member).get('/api/audit-log')).status, 403);
    } finally {
      await member.close();
    }
  });
});

/** The muted name the page shows after a target, from the row's own snapshots. */
function nameOf(e: Entry): string {
  for (const s of [e.after, e.before]) {
    if (typeof s !== 'object' || s === null) continue;
    for (const k of ['name', 'key', 'email', 'description']) if (typeof s[k] === 'string' && s[k]) return ` ${s[k]}`;
  }
  return '';
}
