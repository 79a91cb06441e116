import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { axeViolations, boardSettled, signInWithToken, withConsolePage, type Seeded } from '../support/browser.js';

/**
 * A board edited in place in a real browser against the real service: a text card, a card's menu
 * (Resize, Remove from board) by keyboard, rename, duplicate and delete; a range or filter change
 * shown at once but kept for others only by Save to board (with suggestions in the filter's
 * property box); and a second person's change meanwhile refused with a clear message that keeps
 * the first person's edit, without losing the second person's card.
 */
forEachBackend('web console: boards edited in place', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let seed: Seeded;
  let browser: Browser;
  let page: Page;
  let boardPath: string;

  withConsolePage(backend, {
    tenant: 'Boards edit',
    // `amount` hidden in the lexicon: the filter box leaves it out, as the Insights pickers do.
    prepare: async ({ tenant }) => {
      const r = await tenant.owner.put(`/api/lexicon/properties/amount?projectId=${tenant.project.id}`, { hidden: true });
      assert.equal(r.status, 200, JSON.stringify(r.body));
    },
    path: ({ tenant, seed }) => (boardPath = `/projects/${tenant.project.id}/boards/${seed.boardId}`),
    settle: true,
  }, (c) => ({ t, tenant, seed, browser, page } = c));

  const api = () => t.client(seed.token);
  const stored = async () => (await api().get(`/api/boards/${seed.boardId}`)).body;
  const order = (b: any) => [...b.cards].sort((x: any, y: any) => x.position - y.position);
  const titles = () => page.$$eval('[role="figure"]', (els) => els.map((e) => e.getAttribute('aria-label')));
  const button = (name: string) => page.locator(`::-p-aria([name="${name}"][role="button"])`);
  const saved = () => page.waitForFunction(() => document.querySelector('#board-save-status')?.textContent === 'Saved', { timeout: 15_000 });
  /** The Daily signups card's table (the sum of its unique sign-ups per day). */
  const dailyTotal = async () => {
    const fig = '[role="figure"][aria-label="Daily signups"]';
    await page.waitForSelector(`${fig} button[aria-expanded]:not(:disabled)`);
    if ((await page.$eval(`${fig} button[aria-expanded]`, (b) => b.getAttribute('aria-expanded'))) !== 'true') await page.locator(`${fig} ::-p-aria([name="Table"][role="button"])`).click();
    await page.waitForSelector(`${fig} table`);
    return page.$eval(`${fig} table`, (t) => [...t.querySelectorAll('tbody tr')].reduce((a, tr) => a + Number(tr.children[1].textContent), 0));
  };

  it('adds a text card: its first line is the card title, saved through the API', async function () {
    this.timeout(30_000);
    await button('Add text').click();
    await page.waitForSelector('textarea#text-card');
    // The form moves the focus once it is drawn: wait for that (it fails below if the focus never moves).
    await page.waitForFunction(() => document.activeElement?.id === 'text-card', { timeout: 5000 }).catch(() => undefined);
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'text-card', 'the text box takes focus');
    await page.keyboard.type('Launch notes\nPricing changed on the 3rd.');
    await button('Add card').click();
    await saved();
    assert.equal((await titles()).at(-1), 'Launch notes');
    const cards = order(await stored());
    assert.deepEqual([cards.at(-1).card_type, cards.at(-1).text], ['text', 'Launch notes\nPricing changed on the 3rd.']);
    assert.equal(await page.$('textarea#text-card'), null, 'the form closes once saved');
  });

  it("closes a card's menu on an Escape pressed at once, before the menu has the focus, focus back on its button", async function () {
    this.timeout(30_000);
    const label = 'Card actions for Daily signups';
    const menuButton = `::-p-aria([name="${label}"][role="button"])`;
    const closedOnButton = async (how: string) => {
      await page.waitForFunction(() => !document.querySelector('[role="menu"]'), { timeout: 5000 });
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), label, `focus on the button (${how})`);
      assert.equal(await page.$eval(menuButton, (b) => b.getAttribute('aria-expanded')), 'false', how);
    };
    // Opened and Escaped in one task: only microtasks (the render) run in between, no frame, so the
    // menu is open and the focus still on the button when Escape comes.
    const focusAtEscape = await page.evaluate(async (name) => {
      const b = document.querySelector<HTMLButtonElement>(`button[aria-label="${name}"]`)!;
      b.focus();
      b.click();
      for (let i = 0; i < 20 && !document.querySelector('[role="menu"]'); i++) await Promise.resolve();
      if (!document.querySelector('[role="menu"]')) return 'no menu';
      const at = document.activeElement?.getAttribute('role') ?? document.activeElement?.tagName ?? '';
      document.activeElement!.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true, cancelable: true }));
      return at;
    }, label);
    assert.equal(focusAtEscape, 'BUTTON', 'Escape pressed while the menu is open and its button still has the focus');
    await closedOnButton('Escape in the same task as the click');
    // A real key press right after the menu shows, without waiting for the focus to move into it.
    await page.focus(menuButton);
    await page.keyboard.press('Enter');
    await page.waitForSelector('[role="menu"]');
    await page.keyboard.press('Escape');
    await closedOnButton('Escape right after Enter');
  });

  it("opens a card's menu from the keyboard, resizes the card and removes another", async function () {
    this.timeout(30_000);
    const menuButton = '::-p-aria([name="Card actions for Hourly signups"][role="button"])';
    await page.focus(menuButton);
    await page.keyboard.press('Enter');
    await page.waitForSelector('[role="menu"]');
    await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'menuitem', { timeout: 5000 }).catch(() => undefined);
    const items = await page.$$eval('[role="menu"] [role="menuitem"]', (els) => els.map((e) => e.textContent));
    assert.deepEqual([...items].sort(), ['Remove from board', 'Resize', 'Show as number', 'Show as table']);
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('role')), 'menuitem', 'focus moves into the menu');
    assert.equal(await page.$eval(menuButton, (b) => b.getAttribute('aria-expanded')), 'true');
    // Escape closes it and gives focus back to its button.
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('[role="menu"]'));
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Card actions for Hourly signups');
    // Open again, down to Resize, Enter. The menu moves the focus into itself on the next frame:
    // wait for that before pressing keys meant for the menu (it fails if the focus never moves).
    await page.keyboard.press('ArrowDown');
    await page.waitForSelector('[role="menu"]');
    await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'menuitem', { timeout: 5000 });
    const resizeAt = items.indexOf('Resize');
    for (let i = 0; i < resizeAt; i++) await page.keyboard.press('ArrowDown');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Resize');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[role="figure"][aria-label="Hourly signups"] select[name="width"]');
    // The size controls take the focus once drawn (fails if it never comes to the width).
    await page.waitForFunction(() => (document.activeElement as HTMLSelectElement | null)?.name === 'width', { timeout: 5000 }).catch(() => undefined);
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLSelectElement).name), 'width', 'focus on the width');
    await page.select('[role="figure"][aria-label="Hourly signups"] select[name="width"]', '12');
    await saved();
    await page.select('[role="figure"][aria-label="Hourly signups"] select[name="height"]', 'tall');
    let hourly = order(await stored()).find((c: any) => c.report?.name === 'Hourly signups');
    for (let i = 0; i < 20 && hourly.height !== 'tall'; i++) {
      await new Promise((r) => setTimeout(r, 250));
      hourly = order(await stored()).find((c: any) => c.report?.name === 'Hourly signups');
    }
    assert.deepEqual([hourly.span, hourly.height], [12, 'tall']);
    const cell = await page.$eval('[role="figure"][aria-label="Hourly signups"]', (f) => f.parentElement!.className);
    assert.match(cell, /span-12/);
    // Remove the flows card by mouse.
    await button('Card actions for After sign-up').click();
    await page.locator('[role="menu"] ::-p-text(Remove from board)').click();
    await page.waitForFunction(() => !document.querySelector('[role="figure"][aria-label="After sign-up"]'));
    await saved();
    const names = order(await stored()).map((c: any) => c.report?.name ?? c.text.split('\n')[0]);
    assert.ok(!names.includes('After sign-up'), names.join());
    assert.deepEqual(await titles(), names);
    assert.equal((await api().get(`/api/reports/${seed.reports.flows}`)).status, 200, 'the report stays in the library');
  });

  it("applies a filter at once, for this person only, until Save to board; the property box suggests the project's properties but the hidden ones", async function () {
    this.timeout(60_000);
    // The properties are listed once the filters take the focus, not as the board opens (the listing scans the events).
    assert.equal(await page.$$eval('#board-filters-keys option', (os) => os.length), 0, 'no properties asked before the filters are used');
    await page.focus('#board-filters-key');
    await page.waitForFunction(() => document.querySelectorAll('#board-filters-keys option').length > 0, { timeout: 10_000 });
    const keys = await page.$$eval('#board-filters-keys option', (os) => os.map((o) => (o as HTMLOptionElement).value));
    assert.ok(keys.includes('plan'), `suggested: ${keys}`);
    assert.ok(!keys.includes('amount'), 'a property hidden in the lexicon is not offered');
    assert.ok(!keys.includes('$insert_id'), 'no pipeline property offered');
    assert.equal(await dailyTotal(), 40);
    await page.locator('#board-filters-key').fill('plan');
    const values = await page.$$eval('#board-filters-values option', (os) => os.map((o) => (o as HTMLOptionElement).value));
    assert.deepEqual(values.sort(), ['free', 'pro']);
    await page.locator('#board-filters-value').fill('pro');
    await button('Add filter').click();
    // Users 0, 3, …, 39 are on pro: 14 of 40.
    await page.waitForFunction(() => document.querySelectorAll('[role="figure"][aria-label="Daily signups"] canvas, [role="figure"][aria-label="Daily signups"] svg').length > 0);
    await boardSettled(page);
    assert.equal(await dailyTotal(), 14);
    assert.deepEqual((await stored()).filters, [], 'the shared board is unchanged');
    // Someone else opening the board sees it as saved.
    const other = await browser.createBrowserContext();
    try {
      const p2 = await other.newPage();
      await p2.goto(t.url + boardPath);
      await signInWithToken(p2, seed.token);
      await boardSettled(p2);
      assert.equal(await p2.$$eval('#board-filters .chips li', (l) => l.length), 0);
    } finally {
      await other.close();
    }
    assert.match(await page.$eval('.look [role="status"]', (e) => e.textContent!), /only for you until you save/);
    await button('Save to board').click();
    await saved();
    assert.deepEqual((await stored()).filters, [{ key: 'plan', op: 'eq', value: 'pro' }]);
    assert.equal(await page.$eval('::-p-aria([name="Save to board"][role="button"])', (b) => (b as HTMLButtonElement).disabled), true, 'nothing left to save');
    // Removing the saved filter is a look too: all 40 again, the board still filtered until saved.
    await button('Remove filter plan').click();
    await page.waitForFunction(() => !document.querySelector('#board-filters .chips'));
    await boardSettled(page);
    assert.equal(await dailyTotal(), 40);
    assert.equal((await stored()).filters.length, 1);
    await button('Discard changes').click();
    await boardSettled(page);
    assert.equal(await dailyTotal(), 14);
  });

  it("refuses a save made on an older version: a clear message, the edit kept, the other person's card kept", async function () {
    this.timeout(60_000);
    // Someone else adds a card through the API while this page shows the board.
    const current = await stored();
    const theirs = await t.client(tenant.tokens.member).put(`/api/boards/${seed.boardId}`, {
      version: current.version,
      cards: [...order(current).map((c: any, i: number) => (c.card_type === 'report' ? { reportId: c.report_id, position: i, span: c.span, height: c.height } : { cardType: 'text', text: c.text, position: i, span: c.span, height: c.height })),
        { cardType: 'text', text: 'Their card', position: 99 }],
    });
    assert.equal(theirs.status, 200, theirs.text);
    await button('Rename board').click();
    await page.waitForSelector('input#board-name');
    await page.locator('input#board-name').fill('Growth, renamed');
    await button('Save name').click();
    await page.waitForSelector('.board-error[role="alert"]');
    assert.match(await page.$eval('.board-error', (e) => e.textContent!), /someone else changed this board since you opened it/);
    assert.equal(await page.$eval('input#board-name', (i) => (i as HTMLInputElement).value), 'Growth, renamed', 'what was typed is kept');
    const after = await stored();
    assert.equal(after.name, 'Growth');
    assert.ok(order(after).some((c: any) => c.text === 'Their card'), 'their card is kept');
    // Reloading shows their card and keeps the rename form as typed; saving again goes through.
    await button('Reload board').click();
    await page.waitForSelector('[role="figure"][aria-label="Their card"]');
    assert.equal(await page.$eval('input#board-name', (i) => (i as HTMLInputElement).value), 'Growth, renamed');
    await button('Save name').click();
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Growth, renamed');
    assert.equal((await stored()).name, 'Growth, renamed');
    assert.ok(order(await stored()).some((c: any) => c.text === 'Their card'));
  });

  it('has no serious or critical accessibility violation with the menu, the size controls and the forms open, in both themes', async function () {
    this.timeout(60_000);
    await boardSettled(page);
    const found: string[] = [];
    const check = async (what: string) => {
      for (const v of await axeViolations(page)) found.push(`${what}: ${v.id} (${v.impact}) ${v.nodes.join(', ')}`);
    };
    await button('Card actions for Daily signups').click();
    await page.waitForSelector('[role="menu"]');
    await check('card menu (light)');
    await page.locator('[role="menu"] ::-p-text(Resize)').click();
    await button('Add text').click();
    await page.select('#board-range', '30d');
    await check('size controls, text form, unsaved range (light)');
    await page.locator('header button::-p-text(Theme)').click();
    await check('the same (dark)');
    await page.locator('header button::-p-text(Theme)').click();
    await button('Cancel').click();
    await button('Done').click();
    await button('Discard changes').click();
    assert.deepEqual(found, []);
  });

  it('fits a phone with the edit controls: nothing wider than the screen, the menu on screen', async function () {
    this.timeout(30_000);
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    try {
      await page.reload();
      await boardSettled(page);
      await button('Card actions for Daily signups').click();
      await page.waitForSelector('[role="menu"]');
      const box = await page.$eval('[role="menu"]', (m) => { const r = m.getBoundingClientRect(); return { left: r.left, right: r.right }; });
      assert.ok(box.left >= 0 && box.right <= 390, `menu at ${box.left}..${box.right}`);
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 390);
      await page.keyboard.press('Escape');
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });

  it('duplicates the board with its cards, range and filters, then deletes the copy', async function () {
    this.timeout(30_000);
    await page.goto(t.url + boardPath);
    await boardSettled(page);
    const original = await stored();
    await button('Duplicate board').click();
    await page.waitForFunction((p) => location.pathname !== p, {}, boardPath);
    const copyId = Number(new URL(page.url()).pathname.split('/').pop());
    await page.waitForFunction(() => document.querySelector('h1')?.textContent === 'Growth, renamed (copy)');
    const copy = (await api().get(`/api/boards/${copyId}`)).body;
    const shape = (b: any) => order(b).map((c: any) => [c.card_type, c.report_id, c.text, c.span, c.height]);
    assert.deepEqual(shape(copy), shape(original));
    assert.deepEqual([copy.filters, copy.date_range], [original.filters, original.date_range]);
    await boardSettled(page);
    await button('Delete board').click();
    await button('Delete this board').click();
    await page.waitForFunction((p) => location.pathname === p, {}, `/projects/${tenant.project.id}/boards`);
    assert.equal((await api().get(`/api/boards/${copyId}`)).status, 404);
    assert.equal((await api().get(`/api/boards/${seed.boardId}`)).status, 200, 'the original stays');
  });
});
