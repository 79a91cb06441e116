import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { axeViolations, withConsolePage, type Seeded } from '../support/browser.js';

/**
 * Insights offers the project's cohorts (People → Cohorts) in the breakdown and as "in cohort" /
 * "not in cohort" filters: a trend broken down by two cohorts draws one series per cohort, named
 * by it, with the API's numbers; a cohort filter narrows the trend as the API does. The project
 * has 30 cohorts: the breakdown's cohorts are picked from a search box (chips), which keeps the
 * query's controls and the chart on the screen.
 */
forEachBackend('web console: insights by cohort', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let seed: Seeded;
  let page: Page;
  let pid: string;
  const ids: Record<string, number> = {};

  withConsolePage(backend, {
    tenant: 'Cohort insights',
    path: ({ tenant }) => `/projects/${tenant.project.id}/insights`,
    prepare: async ({ tenant }) => {
      // Of the 40 who signed up, 12 bought (Buyers) and 25 viewed a product (Viewers, the 12 among them).
      for (const [name, event] of [['Buyers', 'Purchased'], ['Viewers', 'Viewed product']] as const) {
        const r = await tenant.owner.post('/api/cohorts', { projectId: tenant.project.id, name, definition: { op: 'and', criteria: [{ kind: 'behavior', event, op: 'gte', count: 1, windowDays: 0 }] } });
        assert.equal(r.status, 201, r.text);
        ids[name] = r.body.id;
      }
      // 28 more, so that a list of every cohort would not fit beside the chart.
      for (let i = 1; i <= 28; i++) {
        const r = await tenant.owner.post('/api/cohorts', { projectId: tenant.project.id, name: `Segment ${String(i).padStart(2, '0')}`, definition: { op: 'and', criteria: [{ kind: 'behavior', event: 'Signed up', op: 'gte', count: 1, windowDays: i }] } });
        assert.equal(r.status, 201, r.text);
      }
    },
  }, (c) => {
    ({ t, tenant, seed, page } = c);
    pid = String(tenant.project.id);
  });

  const query = async (q: unknown) => {
    const r = await t.client(seed.token).post('/api/query', { projectId: pid, query: q });
    assert.equal(r.status, 200, r.text);
    return r.body as { series: Array<{ name: string; segment?: string | null; data: number[]; total: number | null }> };
  };
  const trend = (extra: Record<string, unknown>) => ({
    v: 2, dateRange: { kind: 'preset', preset: '30d' }, metrics: [{ id: 'A', kind: 'event', event: 'Signed up', aggregation: { op: 'unique' } }],
    analysis: { kind: 'trend', unit: 'day', chart: 'line' }, ...extra,
  });
  const legend = () => page.$$eval('[role="figure"] ul[aria-label="Series"] button', (bs) => bs.map((b) => b.textContent!.trim()));
  const table = async () => {
    if ((await page.$eval('[role="figure"] button[aria-controls="insight-table"]', (b) => b.getAttribute('aria-expanded'))) !== 'true') {
      await page.locator('[role="figure"] ::-p-aria([name="Table"][role="button"])').click();
    }
    await page.waitForSelector('[role="figure"] table');
    return page.$$eval('[role="figure"] table', ([tb]) => ({
      head: [...tb.querySelectorAll('thead th')].map((c) => c.textContent!.trim()),
      rows: [...tb.querySelectorAll('tbody tr')].map((tr) => [...tr.children].map((c) => c.textContent!.trim())),
      foot: [...tb.querySelectorAll('tfoot td, tfoot th')].map((c) => c.textContent!.trim()),
    }));
  };
  const run = async () => {
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('[role="figure"] svg, [role="figure"] canvas, .result [role="alert"]', { timeout: 20_000 });
    const alert = await page.$eval('.result [role="alert"]', (e) => e.textContent).catch(() => null);
    assert.equal(alert, null, 'the run shows no error');
  };
  const newTrend = async () => {
    await page.goto(`${t.url}/projects/${pid}/insights`);
    await page.waitForSelector('#metric-0');
    await page.locator('#metric-0').fill('Signed up');
    await page.select('#agg-0', 'unique');
  };
  const checkbox = (name: string) => page.locator(`::-p-aria([name="${name}"][role="checkbox"])`);
  const search = '#insight-cohort-breakdown-search';
  /** The breakdown's chips, as shown. */
  const chips = () => page.$$eval('ul[aria-label="Cohorts in the breakdown"] li span', (ss) => ss.map((s) => s.textContent!.trim()));
  /** Picks a cohort into the breakdown by keyboard: its name typed in the search box, Enter on the first match. */
  const pickCohort = async (name: string) => {
    await page.waitForSelector(search);
    await page.focus(search);
    await page.keyboard.type(name);
    await page.waitForFunction((id, n) => {
      const box = document.querySelector(id)!;
      return box.getAttribute('aria-expanded') === 'true' && document.getElementById(box.getAttribute('aria-activedescendant') ?? '')?.textContent === n;
    }, { timeout: 5000 }, search, name);
    await page.keyboard.press('Enter');
    await page.waitForFunction((n) => [...document.querySelectorAll('ul[aria-label="Cohorts in the breakdown"] li span')].some((s) => s.textContent === n), { timeout: 5000 }, name);
  };

  it('a trend broken down by two cohorts: one series per cohort, named by it, with the API\'s numbers', async function () {
    this.timeout(90_000);
    await newTrend();
    await pickCohort('Buyers');
    await pickCohort('Viewers');
    assert.deepEqual(await chips(), ['Buyers', 'Viewers']);
    assert.equal(await page.$('#breakdown'), null, 'a cohort breakdown replaces the property breakdown');
    await run();
    const answer = await query(trend({ breakdown: { cohorts: [ids.Buyers, ids.Viewers], notInAny: false } }));
    assert.deepEqual(answer.series.map((s) => s.segment), ['Buyers', 'Viewers']);
    assert.deepEqual(answer.series.map((s) => s.total), [seed.users.purchased, seed.users.viewed], 'each cohort counts its members only');
    assert.deepEqual(await legend(), ['Signed up · Buyers', 'Signed up · Viewers'], 'one legend entry per cohort');
    const tb = await table();
    assert.deepEqual(tb.head, ['Bucket', 'Signed up · Buyers', 'Signed up · Viewers']);
    assert.deepEqual(tb.rows.map((r) => r.slice(1).map((c) => Number(c.replace(/[^\d.-]/g, '')))), answer.series[0].data.map((_, i) => answer.series.map((s) => s.data[i])));
    assert.deepEqual(tb.foot.slice(1).map((c) => Number(c.replace(/[^\d.-]/g, ''))), answer.series.map((s) => s.total));
    // "Not in any cohort" adds the people in neither.
    await checkbox('Not in any cohort').click();
    await run();
    // The new answer replaces the chart once it arrives.
    await page.waitForFunction(() => document.querySelectorAll('[role="figure"] ul[aria-label="Series"] button').length === 3, { timeout: 20_000 });
    assert.deepEqual(await legend(), ['Signed up · Buyers', 'Signed up · Viewers', 'Signed up · Not in any cohort']);
    const withRest = await query(trend({ breakdown: { cohorts: [ids.Buyers, ids.Viewers], notInAny: true } }));
    assert.equal(withRest.series[2].total, seed.users.signedUp - seed.users.viewed);
    assert.deepEqual((await axeViolations(page)).filter((v) => v.impact === 'serious' || v.impact === 'critical'), []);
  });

  it('a funnel broken down by cohorts: one set of bars per cohort, its table rows the API\'s, a cohort\'s bar drills into its people', async function () {
    this.timeout(90_000);
    await page.goto(`${t.url}/projects/${pid}/insights`);
    await page.waitForSelector('#metric-0');
    await page.locator('.tabs button::-p-text(Funnel)').click();
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Purchased');
    await pickCohort('Buyers');
    await pickCohort('Viewers');
    await run();
    const q = {
      v: 2, dateRange: { kind: 'preset', preset: '30d' },
      metrics: [{ id: 'A', kind: 'event', event: 'Signed up', aggregation: { op: 'count' } }, { id: 'B', kind: 'event', event: 'Purchased', aggregation: { op: 'count' } }],
      breakdown: { cohorts: [ids.Buyers, ids.Viewers], notInAny: false },
      analysis: { kind: 'funnel', steps: ['A', 'B'], window: { value: 30, unit: 'day' }, order: 'ordered', chart: 'steps' },
    };
    const r = await t.client(seed.token).post('/api/query', { projectId: pid, query: q });
    assert.equal(r.status, 200, r.text);
    const steps = r.body.steps as Array<{ name: string; event: string; segments: Array<{ segment: string; count: number }> }>;
    assert.deepEqual(steps.map((s) => s.segments.map((g) => g.count)), [[seed.users.purchased, seed.users.viewed], [seed.users.purchased, seed.users.purchased]]);
    assert.deepEqual(await legend(), ['Buyers', 'Viewers']);
    const tb = await table();
    assert.deepEqual(tb.rows.map((row) => row.slice(0, 3)), steps.flatMap((s, i) => s.segments.map((g) => [`${i + 1}. ${s.name || s.event}`, g.segment, String(g.count)])));
    // Viewers' second bar: the people who viewed a product and bought, as the API's drill-down lists them.
    await page.click('.funnel svg g.step[data-group="1"]:nth-of-type(4)');
    await page.waitForSelector('section[aria-label="People"] li');
    assert.equal(await page.$('.result [role="alert"]'), null, 'no error from the drill-down');
    const d = await t.client(seed.token).post('/api/query/drilldown', { projectId: pid, query: q, selection: { kind: 'funnel', step: 1, mode: 'reached', segment: 'Viewers' }, page: { limit: 100, offset: 0 } });
    assert.equal(d.status, 200, d.text);
    const shown = await page.$$eval('section[aria-label="People"] li', (lis) => lis.map((l) => l.textContent!.trim()).sort());
    assert.deepEqual(shown, d.body.users.map((u: { distinctId: string }) => u.distinctId).sort());
    assert.equal(shown.length, seed.users.purchased);
  });

  it('a "not in cohort" filter narrows the trend as the API does', async function () {
    this.timeout(90_000);
    await newTrend();
    await page.waitForSelector('#insight-cohort-filters-op');
    await page.select('#insight-cohort-filters-op', 'not_in');
    await page.select('#insight-cohort-filters-cohort', String(ids.Viewers));
    await page.locator('::-p-aria([name="Add cohort filter"][role="button"])').click();
    await page.waitForSelector('::-p-aria([name="Remove filter Not in cohort Viewers"])');
    await run();
    const answer = await query(trend({ filters: [{ cohort: ids.Viewers, op: 'not_in' }] }));
    assert.equal(answer.series[0].total, seed.users.signedUp - seed.users.viewed);
    const tb = await table();
    assert.deepEqual(tb.foot.slice(1).map((c) => Number(c.replace(/[^\d.-]/g, ''))), [answer.series[0].total]);
    assert.deepEqual(tb.rows.map((r) => Number(r[1].replace(/[^\d.-]/g, ''))), answer.series[0].data);
  });

  it("with 30 cohorts the breakdown stays small and the chart's top on a 1280x800 screen; cohorts are picked and removed by keyboard, the chart is the API's", async function () {
    this.timeout(90_000);
    const viewport = page.viewport();
    await page.setViewport({ width: 1280, height: 800 });
    try {
      await newTrend();
      await page.waitForSelector(search);
      await page.focus(search);
      // ArrowDown opens the list of every cohort, over what follows the box.
      await page.keyboard.press('ArrowDown');
      await page.waitForSelector('#insight-cohort-breakdown-options:not([hidden]) [role="option"]');
      assert.equal(await page.$$eval('#insight-cohort-breakdown-options [role="option"]', (os) => os.length), 30);
      assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation with the list open');
      // Words narrow it ("er": Buyers, Viewers); ArrowDown to the second, Enter picks it.
      await page.keyboard.type('er');
      await page.waitForFunction(() => document.querySelectorAll('#insight-cohort-breakdown-options [role="option"]').length === 2);
      await page.keyboard.press('ArrowDown');
      const active = () => page.$eval(search, (b) => document.getElementById(b.getAttribute('aria-activedescendant') ?? '')?.textContent ?? null);
      assert.equal(await active(), 'Viewers');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelectorAll('ul[aria-label="Cohorts in the breakdown"] li').length === 1);
      assert.equal(await page.$eval(search, (b) => (b as HTMLInputElement).value), '', 'the words are cleared once a cohort is picked');
      await pickCohort('Buyers');
      assert.deepEqual(await chips(), ['Viewers', 'Buyers']);
      // Escape closes the list; the box keeps the focus.
      await page.keyboard.type('seg');
      await page.waitForFunction((id) => document.querySelector(id)!.getAttribute('aria-expanded') === 'true', {}, search);
      await page.keyboard.press('Escape');
      await page.waitForFunction((id) => document.querySelector(id)!.getAttribute('aria-expanded') === 'false', {}, search);
      await page.keyboard.press('Escape');
      assert.equal(await page.$eval(search, (b) => (b as HTMLInputElement).value), '', 'a second Escape clears the words');
      // Shift+Tab from the box reaches the last chip's remove button; Enter removes it, the focus back in the box.
      await page.keyboard.down('Shift');
      await page.keyboard.press('Tab');
      await page.keyboard.up('Shift');
      assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Remove Buyers');
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => document.querySelectorAll('ul[aria-label="Cohorts in the breakdown"] li').length === 1);
      assert.deepEqual(await chips(), ['Viewers']);
      assert.equal(await page.evaluate(() => document.activeElement?.id), 'insight-cohort-breakdown-search');
      await run();
      const answer = await query(trend({ breakdown: { cohorts: [ids.Viewers], notInAny: false } }));
      assert.deepEqual(answer.series.map((s) => s.total), [seed.users.viewed]);
      // On the screen without scrolling: the chart's top.
      const at = await page.evaluate(() => {
        window.scrollTo(0, 0);
        const breakdown = document.querySelector('fieldset.cohort-breakdown')!.getBoundingClientRect();
        return { chartTop: document.querySelector('[role="figure"]')!.getBoundingClientRect().top, breakdown: breakdown.height, height: innerHeight };
      });
      assert.equal(at.height, 800);
      assert.ok(at.chartTop >= 0 && at.chartTop < at.height, `chart top at ${at.chartTop}px`);
      // The breakdown takes a box and its chips, not a line per cohort (31 lines of checkboxes before).
      assert.ok(at.breakdown < at.height / 3, `the cohort breakdown is ${at.breakdown}px tall`);
      const tb = await table();
      assert.deepEqual(tb.head, ['Bucket', 'Signed up · Viewers']);
      assert.deepEqual(tb.rows.map((r) => Number(r[1].replace(/[^\d.-]/g, ''))), answer.series[0].data);
      assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation with a chip');
    } finally {
      if (viewport) await page.setViewport(viewport);
    }
  });
});
