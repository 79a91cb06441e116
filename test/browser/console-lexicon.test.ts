import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { axeViolations, signInWithToken, withConsolePage, type Seeded } from '../support/browser.js';

const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
/** The Monday starting the week of `day` (UTC), as the API labels weekly buckets. */
const mondayOf = (day: string) => {
  const ms = Date.parse(`${day}T00:00:00Z`);
  return iso(ms - ((new Date(ms).getUTCDay() + 6) % 7) * DAY_MS);
};

/**
 * The Events section's lexicon and annotations pages against the API (what they list, what an edit
 * stores, a refused save keeping the edit, a viewer reading only), the annotation line of a weekly
 * and a monthly trend on the bucket holding its day, and a retention report saved with "Last 30
 * days" reopened with that range. On both backend sets, through the pages' accessible names.
 */
forEachBackend('web console: lexicon, annotations and the annotation line', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let seed: Seeded;
  let browser: Browser;
  let page: Page;
  let pid: string;

  withConsolePage(backend, {
    tenant: 'Lexicon',
    listen: (page) => page.on('dialog', (d) => void d.accept()),
    path: ({ tenant }) => `/projects/${tenant.project.id}/events/lexicon`,
  }, (c) => {
    ({ t, tenant, seed, browser, page } = c);
    pid = String(tenant.project.id);
  });

  const api = () => t.client(seed.token);
  const lexiconPath = () => `/projects/${pid}/events/lexicon`;
  const annotationsPath = () => `/projects/${pid}/events/annotations`;
  const rowNames = (table: string) => page.$$eval(`table[aria-label="${table}"] tbody tr:not(.edit-row) th code`, (cs) => cs.map((c) => c.textContent!.trim()));
  const rowOf = (table: string, name: string) =>
    page.$$eval(`table[aria-label="${table}"] tbody tr:not(.edit-row)`, (trs, n) => {
      const tr = trs.find((r) => r.querySelector('th code')?.textContent === n);
      return tr ? [...tr.children].map((c) => c.textContent!.trim()) : null;
    }, name);

  it('lists the lexicon as the API does, searches it into the address, and the tabs lead through the Events section', async function () {
    this.timeout(60_000);
    await page.waitForSelector('table[aria-label="Events"] tbody tr');
    const events = (await api().get(`/api/lexicon/events?projectId=${pid}`)).body as Array<{ name: string }>;
    assert.deepEqual(await rowNames('Events'), events.map((e) => e.name));
    assert.ok(events.some((e) => e.name === 'Purchased'));
    await page.locator('#lexicon-search').fill('purch');
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Events"] tbody tr').length === 1);
    assert.deepEqual(await rowNames('Events'), ['Purchased']);
    assert.equal(new URL(page.url()).searchParams.get('q'), 'purch');
    await page.locator('::-p-aria([name="Properties"][role="button"])').click();
    await page.waitForFunction(() => document.querySelector('.lexicon-page')?.textContent?.includes('No property matches'), { timeout: 10_000 });
    const props = (await api().get(`/api/lexicon/properties?projectId=${pid}`)).body as Array<{ key: string }>;
    await page.click('#lexicon-search', { clickCount: 3 });
    await page.keyboard.press('Backspace');
    await page.waitForFunction((n) => document.querySelectorAll('table[aria-label="Properties"] tbody tr').length === n, { timeout: 10_000 }, props.length).catch(async (e) => {
      throw new Error(`properties listed: ${JSON.stringify(await rowNames('Properties'))} vs ${JSON.stringify(props.map((p) => p.key))}: ${e}`);
    });
    assert.deepEqual(await rowNames('Properties'), props.map((p) => p.key));
    assert.equal(new URL(page.url()).searchParams.get('kind'), 'properties');
    // The Events entry of the top bar stays current; the section's tabs lead to each page.
    assert.equal(await page.$eval('header nav a[aria-current="page"]', (a) => a.textContent), 'Events');
    await page.locator('nav[aria-label="Events section"] ::-p-text(Annotations)').click();
    await page.waitForSelector('table[aria-label="Annotations by date"]');
    await page.locator('nav[aria-label="Events section"] ::-p-text(Live events)').click();
    await page.waitForFunction((p) => location.pathname === p, {}, `/projects/${pid}/events`);
    await page.locator('nav[aria-label="Events section"] ::-p-text(Lexicon)').click();
    await page.waitForSelector('table[aria-label="Events"] tbody tr');
  });

  it("edits an event's entry from the keyboard: stored through the API, hidden from the Insights pickers", async function () {
    this.timeout(60_000);
    await page.goto(t.url + lexiconPath());
    await page.waitForSelector('table[aria-label="Events"] tbody tr');
    await page.focus('button[aria-label="Edit Purchased"]');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.id === 'form-events-Purchased-display');
    await page.keyboard.type('Purchase');
    await page.locator('#form-events-Purchased-description').fill('A completed checkout.');
    await page.locator('#form-events-Purchased-tags').fill('revenue, core, revenue');
    await page.locator('form[aria-label="Edit Purchased"] input[type="checkbox"]').click();
    await page.locator('form[aria-label="Edit Purchased"] button[type="submit"]').click();
    await page.waitForFunction(() => !document.querySelector('form[aria-label="Edit Purchased"]'));
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Edit Purchased', { timeout: 5_000 });
    const stored = ((await api().get(`/api/lexicon/events?projectId=${pid}`)).body as any[]).find((e) => e.name === 'Purchased');
    assert.deepEqual([stored.displayName, stored.description, stored.tags, stored.hidden], ['Purchase', 'A completed checkout.', ['revenue', 'core'], true]);
    const row = (await rowOf('Events', 'Purchased'))!;
    assert.match(row[0], /^Purchase\s*Purchased$/);
    assert.equal(row[1], 'A completed checkout.');
    assert.match(row[2], /revenue\s*core/);
    assert.match(row[4], /^Hidden/);
    // Insights' event picker is fed by the lexicon without the hidden names.
    await page.goto(`${t.url}/projects/${pid}/insights`);
    await page.waitForFunction(() => document.querySelectorAll('#event-names option').length > 0);
    const offered = await page.$$eval('#event-names option', (os) => os.map((o) => (o as HTMLOptionElement).value));
    assert.ok(offered.includes('Signed up') && !offered.includes('Purchased'), offered.join(', '));
    // Still a known name: typed (or in a saved report) it runs, with no "unknown event" hint.
    await page.locator('#metric-0').fill('Purchased');
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] canvas, .result [role="alert"]', { timeout: 20_000 });
    assert.equal(await page.$('#metric-0-hint'), null);
    assert.equal(await page.$('.result [role="alert"]'), null);
    await api().put(`/api/lexicon/events/Purchased?projectId=${pid}`, { hidden: false });
  });

  it('shows a refused save in its words and keeps the edit; nothing is stored', async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}${lexiconPath()}?kind=properties`);
    await page.waitForSelector('table[aria-label="Properties"] tbody tr');
    const before = ((await api().get(`/api/lexicon/properties?projectId=${pid}`)).body as any[]).find((p) => p.key === 'plan');
    await page.locator('button[aria-label="Edit plan"]').click();
    await page.locator('#form-properties-plan-description').fill('Pricing plan at sign-up');
    const long = 'x'.repeat(60);
    await page.locator('#form-properties-plan-tags').fill(`billing, ${long}`);
    await page.locator('form[aria-label="Edit plan"] button[type="submit"]').click();
    await page.waitForSelector('form[aria-label="Edit plan"] [role="alert"]');
    assert.match(await page.$eval('form[aria-label="Edit plan"] [role="alert"]', (e) => e.textContent!), /tags/);
    assert.equal(await page.$eval('#form-properties-plan-description', (e) => (e as HTMLTextAreaElement).value), 'Pricing plan at sign-up');
    assert.equal(await page.$eval('#form-properties-plan-tags', (e) => (e as HTMLInputElement).value), `billing, ${long}`);
    const after = ((await api().get(`/api/lexicon/properties?projectId=${pid}`)).body as any[]).find((p) => p.key === 'plan');
    assert.deepEqual(after, before);
    // Corrected, it saves.
    await page.locator('#form-properties-plan-tags').fill('billing');
    await page.locator('form[aria-label="Edit plan"] button[type="submit"]').click();
    await page.waitForFunction(() => !document.querySelector('form[aria-label="Edit plan"]'));
    const saved = ((await api().get(`/api/lexicon/properties?projectId=${pid}`)).body as any[]).find((p) => p.key === 'plan');
    assert.deepEqual([saved.description, saved.tags], ['Pricing plan at sign-up', ['billing']]);
  });

  it('lists annotations newest first, adds, edits (a refused edit keeps the text) and deletes them through the API', async function () {
    this.timeout(60_000);
    await page.goto(t.url + annotationsPath());
    await page.waitForSelector('table[aria-label="Annotations by date"] tbody tr');
    const listed = () => page.$$eval('table[aria-label="Annotations by date"] tbody tr', (trs) => trs.map((tr) => [...tr.children].slice(0, 2).map((c) => c.textContent!.trim())));
    const fromApi = async () => ((await api().get(`/api/annotations?projectId=${pid}`)).body as any[]).map((a) => [a.date, a.description]).reverse();
    assert.deepEqual(await listed(), await fromApi());
    const day = iso(Date.now() - 5 * DAY_MS);
    await page.$eval('#annotation-date', (e, v) => {
      const input = e as HTMLInputElement;
      input.value = v;
      input.dispatchEvent(new Event('input', { bubbles: true }));
    }, day);
    // An empty note is refused by the API: its words, nothing added.
    await page.locator('button::-p-text(Add annotation)').click();
    await page.waitForSelector('form[aria-label="New annotation"] [role="alert"]');
    assert.equal((await fromApi()).length, 1);
    await page.locator('#annotation-text').fill('Email campaign sent');
    await page.locator('button::-p-text(Add annotation)').click();
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Annotations by date"] tbody tr').length === 2);
    assert.deepEqual(await fromApi(), [[iso(Date.now() - 3 * DAY_MS), 'Pricing page launched'], [day, 'Email campaign sent']]);
    assert.deepEqual(await listed(), await fromApi());
    // Search.
    await page.locator('#annotations-search').fill('email');
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Annotations by date"] tbody tr').length === 1);
    assert.equal(new URL(page.url()).searchParams.get('q'), 'email');
    // Edit: a refused change keeps what was typed; a valid one is stored.
    await page.locator(`button[aria-label="Edit the note of ${day}: Email campaign sent"]`).click();
    const form = `form[aria-label="Edit the note of ${day}"]`;
    await page.waitForSelector(form);
    await page.locator(`${form} input:not([type="date"])`).fill('x'.repeat(2001));
    await page.locator(`${form} button[type="submit"]`).click();
    await page.waitForSelector(`${form} [role="alert"]`);
    assert.equal((await page.$eval(`${form} input:not([type="date"])`, (e) => (e as HTMLInputElement).value)).length, 2001);
    await page.locator(`${form} input:not([type="date"])`).fill('Spring email campaign sent');
    await page.locator(`${form} button[type="submit"]`).click();
    await page.waitForFunction((f) => !document.querySelector(f), {}, form);
    assert.deepEqual((await fromApi())[1], [day, 'Spring email campaign sent']);
    // Delete after the confirmation.
    await page.locator(`button[aria-label="Delete the note of ${day}: Spring email campaign sent"]`).click();
    await page.waitForFunction(() => document.querySelectorAll('table[aria-label="Annotations by date"] tbody tr').length === 0);
    assert.deepEqual(await fromApi(), [[iso(Date.now() - 3 * DAY_MS), 'Pricing page launched']]);
  });

  it('shows a viewer the lexicon and annotations without any write control', async function () {
    this.timeout(60_000);
    const ctx = await browser.createBrowserContext();
    try {
      const p = await ctx.newPage();
      await p.goto(t.url + lexiconPath());
      await signInWithToken(p, tenant.tokens.viewer);
      await p.waitForSelector('table[aria-label="Events"] tbody tr');
      assert.equal(await p.$('table[aria-label="Events"] button'), null);
      assert.ok((await p.$$('table[aria-label="Events"] tbody tr')).length >= 3);
      await p.goto(t.url + annotationsPath());
      await p.waitForSelector('table[aria-label="Annotations by date"] tbody tr');
      assert.equal(await p.$('form[aria-label="New annotation"]'), null);
      assert.equal(await p.$('table[aria-label="Annotations by date"] button'), null);
    } finally {
      await ctx.close();
    }
  });

  /** A day in the last 30 that is neither a Monday nor the 1st: its week's and month's buckets start on another day. */
  const midWeek = () => {
    for (let n = 2; ; n++) {
      const d = iso(Date.now() - n * DAY_MS);
      if (new Date(`${d}T00:00:00Z`).getUTCDay() !== 1 && !d.endsWith('-01')) return d;
    }
  };

  it('draws the annotation line of a weekly and a monthly trend on the bucket that holds its day', async function () {
    this.timeout(90_000);
    const day = midWeek();
    const note = await api().post(`/api/annotations?projectId=${pid}`, { date: day, description: 'Mid-week release' });
    assert.equal(note.status, 201, note.text);
    try {
      for (const [unit, bucket] of [['week', mondayOf(day)], ['month', `${day.slice(0, 8)}01`]] as const) {
        await page.goto(`${t.url}/projects/${pid}/insights`);
        await page.waitForSelector('#metric-0');
        await page.locator('#metric-0').fill('Signed up');
        await page.select('#unit', unit);
        await page.locator('button.primary::-p-text(Run)').click();
        await page.waitForSelector('[role="figure"] canvas');
        const item = await page.waitForSelector('ul[aria-label="Annotations"] li[data-bucket] ::-p-text(Mid-week release)', { timeout: 10_000 });
        assert.ok(item, `${unit}: the note is placed on a bucket`);
        const placed = await page.$$eval('ul[aria-label="Annotations"] li', (lis) => lis.map((l) => [l.getAttribute('data-bucket'), l.textContent!.trim()]));
        assert.deepEqual(placed.find(([, text]) => text?.includes('Mid-week release'))?.[0], bucket, `${unit}: ${JSON.stringify(placed)}`);
        // The dashed line is on the canvas: the accent colour down the column the chart reports.
        await page.waitForFunction(() => !!(document.querySelector('[role="figure"] .chart-canvas') as HTMLElement | null)?.dataset.annotationX, { timeout: 10_000 });
        const marks = await page.$eval('[role="figure"] .chart-canvas', (el) => {
          const canvas = el.querySelector('canvas')!;
          const ctx = canvas.getContext('2d')!;
          const xs = (el as HTMLElement).dataset.annotationX!.split(' ').map(Number);
          // Pixels of the accent blue in the two columns around each line (inline: no named helper inside evaluate).
          const counts: number[] = [];
          for (const x of xs) {
            const px = ctx.getImageData(x - 1, 0, 2, canvas.height).data;
            let n = 0;
            for (let i = 0; i < px.length; i += 4) if (px[i + 3] > 60 && px[i + 2] > px[i] + 60 && px[i + 2] > px[i + 1] + 40) n++;
            counts.push(n);
          }
          return { xs, counts, height: canvas.height };
        });
        assert.equal(marks.xs.length, 2, `${unit}: both notes inside the range are drawn (${JSON.stringify(marks)})`);
        assert.ok(marks.counts.every((n) => n > marks.height / 8), `${unit}: a dashed line down each column: ${JSON.stringify(marks)}`);
      }
    } finally {
      await api().delete(`/api/annotations/${note.body.id}`);
    }
  });

  it('saves retention with Last 30 days and reopens it with Last 30 days; a fixed-dates report reopens with its dates', async function () {
    this.timeout(90_000);
    await page.goto(`${t.url}/projects/${pid}/insights`);
    await page.waitForSelector('#metric-0');
    await page.locator('.tabs button::-p-text(Retention)').click();
    await page.waitForSelector('#ret-unit');
    assert.equal(await page.$eval('#insight-range', (s) => (s as HTMLSelectElement).value), '30d');
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Purchased');
    await page.select('#ret-unit', 'day');
    await page.locator('#report-name').fill('Rolling retention');
    await page.locator('button::-p-text(Save report)').click();
    await page.waitForFunction(() => /\/reports\/\d+$/.test(location.pathname), { timeout: 15_000 });
    const id = Number(new URL(page.url()).pathname.split('/').pop());
    const stored = (await api().get(`/api/reports/${id}`)).body;
    assert.deepEqual(stored.query.dateRange, { kind: 'preset', preset: '30d' });
    assert.equal(stored.query.from, undefined, 'no fixed days stored');
    await page.goto(`${t.url}/projects/${pid}/reports/${id}`);
    await page.waitForSelector('[role="figure"] svg, .result [role="alert"]', { timeout: 20_000 });
    assert.equal(await page.$('.result [role="alert"]'), null);
    assert.equal(await page.$eval('#insight-range', (s) => (s as HTMLSelectElement).value), '30d');
    assert.equal(await page.$eval('#insight-range', (s) => (s as HTMLSelectElement).selectedOptions[0].textContent), 'Last 30 days');
    assert.equal(await page.$eval('#ret-unit', (s) => (s as HTMLSelectElement).value), 'day', 'the cohort unit comes back too');
    // The seeded retention report keeps fixed days: reopened, its fields show them.
    const fixed = (await api().get(`/api/reports/${seed.reports.retention}`)).body.query;
    await page.goto(`${t.url}/projects/${pid}/reports/${seed.reports.retention}`);
    await page.waitForFunction(() => (document.querySelector('#insight-range') as HTMLSelectElement | null)?.value === 'absolute');
    await page.waitForFunction((f) => (document.querySelector('#insight-range-from') as HTMLInputElement | null)?.value === f, { timeout: 5_000 }, fixed.from);
    assert.equal(await page.$eval('#insight-range-to', (e) => (e as HTMLInputElement).value), fixed.to);
    await api().delete(`/api/reports/${id}`);
  });

  it('has no serious or critical accessibility violation on the lexicon and annotations pages in both themes, and fits a phone', async function () {
    this.timeout(90_000);
    const found: string[] = [];
    for (const [path, ready] of [[lexiconPath(), 'table[aria-label="Events"] tbody tr'], [annotationsPath(), 'table[aria-label="Annotations by date"] tbody tr']] as const) {
      await page.goto(t.url + path);
      await page.waitForSelector(ready);
      if (path === lexiconPath()) {
        await page.locator('button[aria-label="Edit Signed up"]').click();
        await page.waitForSelector('form[aria-label="Edit Signed up"]');
      }
      for (const theme of ['first', 'second']) {
        for (const v of await axeViolations(page)) found.push(`${path} (${theme} theme): ${v.id} (${v.impact}) ${v.nodes.join(', ')}`);
        await page.locator('header button::-p-text(Theme)').click();
      }
    }
    assert.deepEqual(found, []);
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    try {
      for (const [path, table] of [[lexiconPath(), 'Events'], [annotationsPath(), 'Annotations by date']] as const) {
        await page.goto(t.url + path);
        await page.waitForSelector(`table[aria-label="${table}"] tbody tr`);
        assert.ok(await page.evaluate(() => document.documentElement.scrollWidth) <= 390, `${path} fits 390 px`);
        const widths = await page.$$eval(`table[aria-label="${table}"] tbody tr`, (rs) => rs.map((r) => Math.round(r.getBoundingClientRect().width)));
        assert.ok(widths.every((w) => w <= 390 && w > 300), `${path} rows ${widths}`);
      }
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });
});
