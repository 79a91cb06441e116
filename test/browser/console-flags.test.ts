import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { axeViolations, ensureConsoleBuilt, launchBrowser, signInWithToken } from '../support/browser.js';

/**
 * The console's Flags page in a real browser (chromium through puppeteer-core) against the real
 * service: create and edit a flag (variants, payloads, rules, rollout), its audit history, an
 * evaluation for a typed distinct id, and a flag a Kubernetes resource manages shown read-only;
 * rules moved up and down by keyboard, on/off saved at once, the history's before and after.
 */
forEachBackend('web console: flags', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let browser: Browser;
  let page: Page;
  let token: string;
  let checkout: number;
  let managed: number;

  before(async function () {
    this.timeout(180_000);
    ensureConsoleBuilt();
    t = await startTestService(backend);
    tenant = await createTenant(t, 'Flags console');
    token = (await tenant.owner.post('/api/org/tokens', { name: 'flags console', role: 'member' })).body.token;
    const pid = tenant.project.id;
    const made = await t.client(token).post('/api/flags', { projectId: pid, key: 'checkout', name: 'New checkout', rules: [{ rolloutPct: 0 }] });
    assert.equal(made.status, 201, made.text);
    checkout = made.body.id;
    // A resource acts only for an organisation whose Organization lists the resource's namespace.
    const org = { headers: { 'x-tally-resource': 'Organization/flags-console' } };
    assert.equal((await t.admin.post(`/admin/orgs/${tenant.org.id}/adopt`, undefined, org)).status, 200);
    assert.equal((await t.admin.patch(`/admin/orgs/${tenant.org.id}`, { namespaces: ['tally'] }, org)).status, 200);
    const gitops = await t.admin.post('/api/flags', { projectId: pid, key: 'banner', name: 'Banner', rules: [{ rolloutPct: 100 }] }, { headers: { 'x-tally-resource': 'FeatureFlag/tally/banner' } });
    assert.equal(gitops.status, 201, gitops.text);
    assert.equal(gitops.body.managed_by, 'FeatureFlag/tally/banner');
    managed = gitops.body.id;
    browser = await launchBrowser();
    page = await browser.newPage();
    page.on('pageerror', (e) => console.error('    page error:', (e as Error).message));
    await page.goto(`${t.url}/projects/${pid}/flags`);
    await signInWithToken(page, token);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const flagsPath = () => `/projects/${tenant.project.id}/flags`;
  /** Types into the control the `<label>` with exactly this text names (fails when no label says so). */
  const fill = async (label: string, value: string) => {
    const id = await page.$$eval('label', (ls, text) => ls.find((l) => l.textContent!.trim() === text)?.htmlFor ?? '', label);
    assert.ok(id, `a control labelled "${label}"`);
    await page.locator(`[id="${id}"]`).fill(value);
  };

  it('lists the flags with their owner; a GitOps-managed flag says so and offers no enabled edit control', async function () {
    this.timeout(60_000);
    await page.waitForSelector('table a');
    const rows = await page.$$eval('.flags-list tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())));
    assert.deepEqual(rows.map((r) => [r[0], r[4]]).sort(), [['banner', 'FeatureFlag/tally/banner'], ['checkout', '']]);
    await page.locator('.flags-list a::-p-text(banner)').click();
    await page.waitForSelector('.flag-detail form[aria-label="Edit flag"]');
    assert.equal(new URL(page.url()).pathname, `${flagsPath()}/${managed}`);
    const note = await page.$eval('.flag-detail [role="note"]', (e) => e.textContent!.trim());
    assert.equal(note, 'Managed by FeatureFlag/tally/banner');
    // Every control that could change the flag is disabled (the fieldset disables what it holds).
    const enabled = await page.$$eval('.flag-detail form[aria-label="Edit flag"] :is(input, select, textarea, button), .flag-detail .lifecycle button',
      (els) => els.filter((e) => !(e as HTMLInputElement).matches(':disabled')).map((e) => e.outerHTML.slice(0, 80)));
    assert.deepEqual(enabled, []);
    assert.ok(await page.$('.flag-detail form[aria-label="Edit flag"] button[type="submit"]'), 'the Save button is there, disabled');
    // Reading is still open: the evaluation of a typed id answers.
    await fill('Distinct id', 'someone');
    await page.locator('::-p-aria([name="Evaluate"][role="button"])').click();
    await page.waitForSelector('dl[aria-label="Evaluation result"]');
    const answer = await page.$eval('dl[aria-label="Evaluation result"]', (e) => e.textContent!);
    assert.match(answer, /Enabledyes/);
    assert.match(answer, /Reasonrule:0/);
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the Flags page');
  });

  it('edits a flag: a variant with a payload, a rule at 100 % serving it; the API and the history show the change', async function () {
    this.timeout(60_000);
    await page.locator(`.flags-list a::-p-text(checkout)`).click();
    await page.waitForFunction((p) => location.pathname === p, {}, `${flagsPath()}/${checkout}`);
    await page.waitForSelector('#flag-name:not(:disabled)');
    await fill('Name', 'Checkout v2');
    await page.locator('::-p-aria([name="Add variant"][role="button"])').click();
    await fill('Variant 1 key', 'blue');
    await fill('Variant 1 payload (JSON)', '{"color":"blue"}');
    await fill('Rule 1 rollout (%)', '100');
    await page.select('#rule-0-variant', 'blue');
    await page.locator('::-p-aria([name="Save"][role="button"])').click();
    await page.waitForFunction(() => document.querySelector('.flag-detail [role="status"]')?.textContent === 'Saved.');
    const stored = (await t.client(token).get(`/api/flags/${checkout}`)).body;
    assert.equal(stored.name, 'Checkout v2');
    assert.deepEqual(stored.variants, [{ key: 'blue', payload: { color: 'blue' }, rolloutPct: 100 }]);
    assert.deepEqual(stored.rules, [{ rolloutPct: 100, variant: 'blue' }]);
    await page.waitForFunction(() => /updated/.test(document.querySelector('ol[aria-label="Flag history"]')?.textContent ?? ''));
    const history = await page.$$eval('ol[aria-label="Flag history"] li', (lis) => lis.map((l) => l.textContent!));
    assert.match(history[0], /^updated .*changed name, variants, rules/);
    assert.match(history[history.length - 1], /^created/);
    // The newest change shows each field before and after (open), older ones on demand.
    assert.equal(await page.$eval('ol[aria-label="Flag history"] li details', (d) => (d as HTMLDetailsElement).open), true);
    const diff = await page.$$eval('ol[aria-label="Flag history"] li:first-child table.field-changes tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())));
    assert.deepEqual(diff.map((r) => r[0]), ['name', 'variants', 'rules']);
    assert.deepEqual(diff[0], ['name', '"New checkout"', '"Checkout v2"']);
    assert.deepEqual(JSON.parse(diff[1][1]), []);
    assert.deepEqual(JSON.parse(diff[1][2]), [{ key: 'blue', payload: { color: 'blue' }, rolloutPct: 100 }]);
    assert.deepEqual([JSON.parse(diff[2][1]), JSON.parse(diff[2][2])], [[{ rolloutPct: 0 }], [{ rolloutPct: 100, variant: 'blue' }]]);
    // The evaluation of a typed id now serves the variant and its payload.
    await fill('Distinct id', 'user-42');
    await page.locator('::-p-aria([name="Evaluate"][role="button"])').click();
    await page.waitForFunction(() => /Variantblue/.test(document.querySelector('dl[aria-label="Evaluation result"]')?.textContent ?? ''));
    assert.match(await page.$eval('dl[aria-label="Evaluation result"]', (e) => e.textContent!), /Payload\{"color":"blue"\}/);
  });

  it("shows the API's words for a change it refuses, and creates a flag from the form", async function () {
    this.timeout(60_000);
    await fill('Variant 1 share (%)', '60');
    await page.locator('::-p-aria([name="Save"][role="button"])').click();
    await page.waitForSelector('.flag-detail [role="alert"]');
    assert.match(await page.$eval('.flag-detail [role="alert"]', (e) => e.textContent!), /rolloutPct must sum to exactly 100 \(got 60\)/);
    assert.equal((await t.client(token).get(`/api/flags/${checkout}`)).body.variants[0].rolloutPct, 100, 'nothing saved');
    await fill('New flag key', 'dark-mode');
    await fill('New flag name', 'Dark mode');
    await page.locator('::-p-aria([name="Create flag"][role="button"])').click();
    await page.waitForFunction(() => document.querySelector('#flag-name') && (document.querySelector('#flag-name') as HTMLInputElement).value === 'Dark mode');
    const list = (await t.client(token).get(`/api/flags?projectId=${tenant.project.id}`)).body;
    const made = list.find((f: any) => f.key === 'dark-mode');
    assert.ok(made, 'created through the API');
    assert.equal(new URL(page.url()).pathname, `${flagsPath()}/${made.id}`);
  });

  const evaluated = async (id: string) => {
    await page.evaluate(() => document.querySelector('dl[aria-label="Evaluation result"]')?.remove());
    await fill('Distinct id', id);
    await page.locator('::-p-aria([name="Evaluate"][role="button"])').click();
    await page.waitForSelector('dl[aria-label="Evaluation result"]');
    return page.$eval('dl[aria-label="Evaluation result"]', (e) => e.textContent!);
  };
  const darkMode = async () => (await t.client(token).get(`/api/flags?projectId=${tenant.project.id}`)).body.find((f: any) => f.key === 'dark-mode');

  it('moves a rule up by keyboard, so an override placed after a catch-all applies once saved', async function () {
    this.timeout(60_000);
    const flag = await darkMode();
    await page.goto(`${t.url}${flagsPath()}/${flag.id}`);
    await page.waitForSelector('#flag-name:not(:disabled)');
    await page.locator('::-p-aria([name="Add variant"][role="button"])').click();
    await page.locator('::-p-aria([name="Add variant"][role="button"])').click();
    await fill('Variant 2 key', 'beta');
    // Rule 1 serves everyone by the variants' shares (all control); rule 2 would give vip-1 beta.
    await page.locator('::-p-aria([name="Add rule"][role="button"])').click();
    await page.locator('::-p-aria([name="Add rule"][role="button"])').click();
    await fill('Rule 2 distinct ids (one a line)', 'vip-1');
    await page.select('#rule-1-variant', 'beta');
    assert.equal(await page.$eval('#rule-0-up', (b) => (b as HTMLButtonElement).disabled), true, 'the first rule cannot move up');
    assert.equal(await page.$eval('#rule-1-down', (b) => (b as HTMLButtonElement).disabled), true, 'the last rule cannot move down');
    await page.locator('::-p-aria([name="Save"][role="button"])').click();
    await page.waitForFunction(() => document.querySelector('.flag-detail [role="status"]')?.textContent === 'Saved.');
    assert.match(await evaluated('vip-1'), /Variantcontrol.*Reasonrule:0/s, 'the catch-all comes first and wins');
    // Keyboard only: focus "Move rule 2 up" and press Enter.
    await page.focus('#rule-1-up');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => (document.querySelector('#rule-0-ids') as HTMLTextAreaElement).value === 'vip-1');
    assert.equal(await page.$eval('#rule-0-variant', (e) => (e as HTMLSelectElement).value), 'beta');
    assert.equal(await page.$eval('#rule-1-ids', (e) => (e as HTMLTextAreaElement).value), '');
    await page.waitForFunction(() => document.activeElement?.id === 'rule-0-down');
    assert.equal((await t.client(token).get(`/api/flags/${flag.id}`)).body.rules[0].variant, undefined, 'nothing stored before Save');
    await page.locator('::-p-aria([name="Save"][role="button"])').click();
    await page.waitForFunction(() => document.querySelector('.flag-detail [role="status"]')?.textContent === 'Saved.');
    assert.deepEqual((await t.client(token).get(`/api/flags/${flag.id}`)).body.rules, [{ rolloutPct: 100, variant: 'beta', distinctIds: ['vip-1'] }, { rolloutPct: 100 }]);
    assert.match(await evaluated('vip-1'), /Variantbeta.*Reasonrule:0/s);
    assert.match(await evaluated('someone-else'), /Variantcontrol.*Reasonrule:1/s);
  });

  it('turns a flag off and on at once, keeping other unsaved edits; a refusal is shown and the switch put back', async function () {
    this.timeout(60_000);
    const flag = await darkMode();
    assert.equal(flag.active, true);
    await fill('Name', 'Dark mode, unsaved');
    await page.locator('::-p-aria([name="Active"][role="checkbox"])').click();
    await page.waitForFunction(() => document.querySelector('.flag-detail [role="status"]')?.textContent === 'Turned off.');
    let stored = (await t.client(token).get(`/api/flags/${flag.id}`)).body;
    assert.equal(stored.active, false, 'saved without Save');
    assert.equal(stored.name, 'Dark mode', 'the other edit is not saved with it');
    assert.equal(await page.$eval('#flag-name', (e) => (e as HTMLInputElement).value), 'Dark mode, unsaved', 'and it is kept in the form');
    await page.waitForFunction(() => /changed active/.test(document.querySelector('ol[aria-label="Flag history"] li')?.textContent ?? ''));
    assert.deepEqual(await page.$$eval('ol[aria-label="Flag history"] li:first-child table.field-changes tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim()))),
      [['active', 'true', 'false']]);
    await page.locator('::-p-aria([name="Active"][role="checkbox"])').click();
    await page.waitForFunction(() => document.querySelector('.flag-detail [role="status"]')?.textContent === 'Turned on.');
    stored = (await t.client(token).get(`/api/flags/${flag.id}`)).body;
    assert.equal(stored.active, true);
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation with the history diff open');
    // On a phone the rules' move buttons and the history's before and after fit the width.
    await page.setViewport({ width: 390, height: 844 });
    await page.waitForFunction(() => document.documentElement.clientWidth === 390);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'nothing wider than a phone');
    await page.setViewport({ width: 1280, height: 800 });
    // Gone behind the page's back: the API refuses, the page says so and shows the flag as it is.
    assert.equal((await t.client(token).post(`/api/flags/${flag.id}/archive`)).status, 200);
    assert.equal((await t.client(token).delete(`/api/flags/${flag.id}`)).status, 200);
    await page.locator('::-p-aria([name="Active"][role="checkbox"])').click();
    await page.waitForSelector('.flag-detail [role="alert"]');
    assert.match(await page.$eval('.flag-detail [role="alert"]', (e) => e.textContent!), /not found/i);
    assert.equal(await page.$eval('::-p-aria([name="Active"][role="checkbox"])', (e) => (e as HTMLInputElement).checked), true, 'the switch is put back');
  });
});
