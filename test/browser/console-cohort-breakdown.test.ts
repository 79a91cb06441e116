import assert from 'node:assert/strict';
import type { Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { axeViolations, withConsolePage, type Seeded } from '../support/browser.js';

/**
 * Insights offers the project's cohorts (People → Cohorts) in the breakdown and as "in cohort" /
 * "not in cohort" filters: a trend broken down by two cohorts draws one series per cohort, named
 * by it, with the API's numbers; a cohort filter narrows the trend as the API does.
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

  it('a trend broken down by two cohorts: one series per cohort, named by it, with the API\'s numbers', async function () {
    this.timeout(90_000);
    await newTrend();
    await page.waitForSelector('::-p-aria([name="Buyers"][role="checkbox"])');
    await checkbox('Buyers').click();
    await checkbox('Viewers').click();
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
    await checkbox('Buyers').click();
    await checkbox('Viewers').click();
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
});
