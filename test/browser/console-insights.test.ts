import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import type { Tenant, TestService } from '../support/service.js';
import { axeViolations, withConsolePage, type Seeded } from '../support/browser.js';

/**
 * The Insights page shows all that the API answers: a funnel's breakdown segments and previous
 * period (chart, table, drill-down), a person's link, retention periods not reached yet, chart
 * tooltips, legend buttons, totals, a formula's own axis and keyboard reach, rolling ranges of
 * retention and flows reports, flows that fit their card, names checked against the lexicon. Each
 * value the page shows is compared with the API's answer to the same query.
 */
forEachBackend('web console: insights show what the API returns', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let seed: Seeded;
  let browser: Browser;
  let page: Page;
  let pid: string;

  withConsolePage(backend, {
    tenant: 'Insights',
    path: ({ tenant }) => `/projects/${tenant.project.id}/insights`,
  }, (c) => {
    ({ t, tenant, seed, browser, page } = c);
    pid = String(tenant.project.id);
  });

  const api = () => t.client(seed.token);
  const query = async (q: unknown) => {
    const r = await api().post('/api/query', { projectId: pid, query: q });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  const drill = async (q: unknown, selection: unknown) => {
    const r = await api().post('/api/query/drilldown', { projectId: pid, query: q, selection, page: { limit: 100, offset: 0 } });
    assert.equal(r.status, 200, r.text);
    return (r.body.users as Array<{ distinctId: string }>).map((u) => u.distinctId).sort();
  };
  const tableRows = () => page.$$eval('[role="figure"] table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent!.trim())));
  const openTable = async () => {
    if ((await page.$eval('[role="figure"] button[aria-controls="insight-table"]', (b) => b.getAttribute('aria-expanded'))) !== 'true') {
      await page.locator('[role="figure"] ::-p-aria([name="Table"][role="button"])').click();
    }
    await page.waitForSelector('[role="figure"] table');
  };
  const button = (name: string) => page.locator(`::-p-aria([name="${name}"][role="button"])`);
  const legend = () => page.$$eval('[role="figure"] ul[aria-label="Series"] button', (bs) => bs.map((b) => ({ name: b.textContent!.trim(), pressed: b.getAttribute('aria-pressed') })));
  const peopleShown = () => page.$$eval('section[aria-label="People"] li', (lis) => lis.map((l) => l.textContent!.trim()).sort());
  const newInsight = async (kind: string) => {
    await page.goto(`${t.url}/projects/${pid}/insights`);
    await page.waitForSelector('#metric-0');
    await page.locator(`.tabs button::-p-text(${kind})`).click();
  };
  const run = async (selector: string) => {
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector(`${selector}, .result [role="alert"]`, { timeout: 20_000 });
    const alert = await page.$eval('.result [role="alert"]', (e) => e.textContent).catch(() => null);
    assert.equal(alert, null, 'the run shows no error');
  };
  const funnelQuery = (extra: Record<string, unknown>, analysis: Record<string, unknown> = {}) => ({
    v: 2, dateRange: { kind: 'preset', preset: '30d' },
    metrics: [{ id: 'A', kind: 'event', event: 'Signed up', aggregation: { op: 'count' } }, { id: 'B', kind: 'event', event: 'Purchased', aggregation: { op: 'count' } }],
    analysis: { kind: 'funnel', steps: ['A', 'B'], window: { value: 30, unit: 'day' }, order: 'ordered', chart: 'steps', ...analysis }, ...extra,
  });

  it('draws a funnel with a breakdown as one set of bars per segment, its table per segment, and drills into a segment', async function () {
    this.timeout(60_000);
    await newInsight('Funnel');
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Purchased');
    await page.locator('#breakdown').fill('plan');
    await run('[role="figure"] svg');
    const answer = await query(funnelQuery({ breakdown: { property: 'plan', limit: 10 } }));
    const segments: string[] = answer.steps[0].segments.map((s: { segment: string }) => s.segment);
    assert.deepEqual([...segments].sort(), ['free', 'pro']);
    assert.deepEqual((await legend()).map((l) => l.name), segments, 'one legend entry per segment, named by it');
    assert.equal((await page.$$('.funnel svg g.step')).length, 2 * segments.length, 'a bar per step and segment');
    await openTable();
    const rows = await tableRows();
    const expected = answer.steps.flatMap((s: any, i: number) => segments.map((seg) => [`${i + 1}. ${s.name || s.event}`, seg, String(s.segments.find((g: any) => g.segment === seg).count)]));
    assert.deepEqual(rows.map((r) => r.slice(0, 3)), expected);
    // The second step's bar of "pro": the people the API lists for that segment.
    const pro = segments.indexOf('pro');
    await page.click(`.funnel svg g.step[data-group="${pro}"]:nth-of-type(${segments.length + pro + 1})`);
    await page.waitForSelector('section[aria-label="People"] li');
    assert.equal(await page.$('.result [role="alert"]'), null, 'no error from the drill-down');
    const q = funnelQuery({ breakdown: { property: 'plan', limit: 10 } });
    assert.deepEqual(await peopleShown(), await drill(q, { kind: 'funnel', step: 1, mode: 'reached', segment: 'pro' }));
    // "N dropped" of "free": those who signed up on the free plan and did not buy.
    const free = segments.indexOf('free');
    const dropped = answer.steps[0].segments[free].count - answer.steps[1].segments.find((g: any) => g.segment === 'free').count;
    await page.locator(`::-p-aria([name="${dropped} dropped before step 2, free"][role="button"])`).click();
    await page.waitForFunction(() => /Dropped before step 2.*free/.test(document.querySelector('section[aria-label="People"] h2')?.textContent ?? ''));
    assert.equal(await page.$('.result [role="alert"]'), null);
    const droppedPeople = await drill(q, { kind: 'funnel', step: 1, mode: 'dropped', segment: 'free' });
    assert.equal(droppedPeople.length, dropped);
    assert.deepEqual(await peopleShown(), droppedPeople);
    // A legend button hides its segment's bars.
    await page.locator('[role="figure"] ::-p-aria([name="free"][role="button"])').click();
    assert.deepEqual((await legend()).map((l) => l.pressed), segments.map((s) => String(s !== 'free')));
    assert.equal((await page.$$('.funnel svg g.step')).length, 2);
  });

  it("shows a funnel's previous period in the chart and the table, as the API answers it", async function () {
    this.timeout(60_000);
    await newInsight('Funnel');
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Purchased');
    await page.click('aside input[type="checkbox"]');
    await run('[role="figure"] svg');
    const answer = await query(funnelQuery({}, { compare: { kind: 'previous_period' } }));
    assert.ok(answer.comparison, 'the API answers a comparison');
    assert.deepEqual((await legend()).map((l) => l.name), ['This period', 'Previous period']);
    assert.equal((await page.$$('.funnel svg g.step')).length, 4);
    await openTable();
    const rows = await tableRows();
    assert.deepEqual(rows.map((r) => [r[1], Number(r[2])]), [
      ['This period', answer.steps[0].count], ['Previous period', answer.comparison.steps[0].count],
      ['This period', answer.steps[1].count], ['Previous period', answer.comparison.steps[1].count],
    ]);
  });

  it("opens a person's own page from a trend's drill-down", async function () {
    this.timeout(60_000);
    await newInsight('Trends');
    await page.locator('#metric-0').fill('Purchased');
    await run('[role="figure"] canvas');
    // The keyboard reaches the points: focus the chart, move to the last bucket, Enter drills down.
    // A key pressed before the chart has drawn its answer moves nothing: press End until a point
    // shows its tooltip (the wait below still fails if none ever does).
    for (let i = 0; i < 20 && !(await page.$('[role="tooltip"]')); i++) {
      await page.focus('[role="figure"] .chart-canvas');
      await page.keyboard.press('End');
      await new Promise((r) => setTimeout(r, 250));
    }
    await page.waitForSelector('[role="tooltip"]');
    await page.keyboard.press('Enter');
    await page.waitForSelector('section[aria-label="People"] li a');
    const link = await page.$eval('section[aria-label="People"] li a', (a) => ({ href: a.getAttribute('href'), text: a.textContent }));
    assert.equal(link.href, `/projects/${pid}/people/${encodeURIComponent(link.text!)}`);
    await page.click('section[aria-label="People"] li a');
    await page.waitForFunction((id) => document.querySelector('h1')?.textContent === id, { timeout: 15_000 }, link.text);
    assert.equal(new URL(page.url()).pathname, link.href);
    assert.ok(await page.$('::-p-aria([name="Identity cluster"])'));
  });

  it('shows the exact value and series name on hover, hides a series from its legend, and totals as the API', async function () {
    this.timeout(60_000);
    await newInsight('Trends');
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#breakdown').fill('plan');
    await page.select('#insight-range', '7d');
    await run('[role="figure"] canvas');
    const q = {
      v: 2, dateRange: { kind: 'preset', preset: '7d' }, metrics: [{ id: 'A', kind: 'event', event: 'Signed up', aggregation: { op: 'count' } }],
      breakdown: { property: 'plan', limit: 10 }, analysis: { kind: 'trend', unit: 'day', chart: 'line' },
    };
    const answer = await query(q);
    const names: string[] = answer.series.map((s: any) => `${s.name} · ${s.segment}`);
    assert.deepEqual((await legend()).map((l) => l.name), names);
    // Hover the last bucket: the tooltip holds every series' name and exact value there.
    const last = answer.buckets.length - 1;
    // The chart may start below the fold (the builder grows with the project's cohorts): in view first, as a person scrolls to it.
    await page.$eval('[role="figure"] .u-over', (e) => e.scrollIntoView({ block: 'center' }));
    const box = (await (await page.$('[role="figure"] .u-over'))!.boundingBox())!;
    await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    await page.waitForSelector('[role="tooltip"]');
    const tip = await page.$eval('[role="tooltip"]', (e) => ({ head: e.querySelector('.tip-head')!.textContent, rows: [...e.querySelectorAll('.tip-row')].map((r) => [r.querySelector('.tip-name')!.textContent, r.querySelector('.tip-value')!.textContent]) }));
    assert.equal(tip.head, answer.buckets[last]);
    assert.deepEqual(tip.rows, answer.series.map((s: any, i: number) => [names[i], s.data[last].toLocaleString('en-US')]));
    // Totals: the table's footer is the API's total per series.
    await openTable();
    const footer = await page.$$eval('[role="figure"] table tfoot td', (tds) => tds.map((td) => Number(td.textContent)));
    assert.deepEqual(footer, answer.series.map((s: any) => s.total));
    // Hide the first series: its button is not pressed and the tooltip leaves it out.
    await page.locator(`[role="figure"] ::-p-aria([name="${names[0]}"][role="button"])`).click();
    assert.deepEqual((await legend()).map((l) => l.pressed), names.map((_, i) => String(i !== 0)));
    await page.mouse.move(box.x + 5, box.y + 5);
    await page.mouse.move(box.x + box.width - 2, box.y + box.height / 2);
    await page.waitForFunction((n) => !!document.querySelector('[role="tooltip"]') && !document.querySelector('[role="tooltip"]')!.textContent!.includes(n), {}, names[0]);
  });

  it('breaks a trend down by two properties: one series per combination, named as the API names it', async function () {
    this.timeout(60_000);
    await newInsight('Trends');
    await page.locator('#metric-0').fill('Purchased');
    await page.locator('#breakdown').fill('plan');
    await button('Add breakdown').click();
    await page.waitForSelector('#then-by-0');
    await page.locator('#then-by-0').fill('amount');
    await run('[role="figure"] canvas');
    const answer = await query({
      v: 2, dateRange: { kind: 'preset', preset: '30d' }, metrics: [{ id: 'A', kind: 'event', event: 'Purchased', aggregation: { op: 'count' } }],
      breakdown: { property: 'plan', thenBy: ['amount'], limit: 10 }, analysis: { kind: 'trend', unit: 'day', chart: 'line' },
    });
    // Twelve purchases with twelve amounts: ten segments kept (the limit), each "plan / amount".
    assert.equal(answer.series.length, 10);
    assert.ok(answer.series.every((s: any) => /^(free|pro) \/ \d+$/.test(s.segment)), answer.series.map((s: any) => s.segment).join());
    assert.deepEqual((await legend()).map((l) => l.name), answer.series.map((s: any) => `${s.name} · ${s.segment}`));
    // A third property at most: Add breakdown is gone once two more are there; Remove takes one away.
    await button('Add breakdown').click();
    await page.waitForSelector('#then-by-1');
    assert.equal(await page.$('::-p-aria([name="Add breakdown"][role="button"])'), null);
    await button('Remove breakdown property 3').click();
    await page.waitForFunction(() => !document.querySelector('#then-by-1'));
  });

  it('draws a formula beside counts on its own right axis', async function () {
    this.timeout(60_000);
    await newInsight('Trends');
    await page.locator('#metric-0').fill('Purchased');
    await page.locator('aside button::-p-text(Add metric)').click();
    await page.locator('#metric-1').fill('Signed up');
    await page.locator('#formula').fill('A / B * 100');
    await run('[role="figure"] canvas');
    const items = await page.$$eval('[role="figure"] ul[aria-label="Series"] li', (lis) => lis.map((l) => l.textContent!.trim()));
    assert.equal(items.filter((t) => /right axis/.test(t)).length, 1, items.join(' | '));
    assert.match(items.find((t) => /right axis/.test(t))!, /A \/ B \* 100|formula/i);
    assert.equal((await page.$$('[role="figure"] .u-axis')).length, 3, 'x, left and right axes');
  });

  it('gives 15 series 15 distinguishable styles (colour and dash)', async function () {
    this.timeout(60_000);
    await newInsight('Trends');
    for (let i = 1; i < 10; i++) await page.locator('aside button::-p-text(Add metric)').click();
    assert.equal(await page.$('aside button::-p-text(Add metric)'), null, 'ten metrics at most');
    for (let i = 0; i < 10; i++) await page.locator(`#metric-${i}`).fill(['Signed up', 'Viewed product', 'Purchased'][i % 3]);
    await page.click('aside input[type="checkbox"]');
    await run('[role="figure"] canvas');
    const styles = await page.$$eval('[role="figure"] ul[aria-label="Series"] .swatch', (els) => els.map((e) => {
      const s = getComputedStyle(e);
      return `${s.backgroundColor}|${s.borderTopColor}|${s.borderTopStyle}`;
    }));
    assert.equal(styles.length, 20, 'ten metrics and their previous periods');
    assert.equal(new Set(styles.slice(0, 15)).size, 15, styles.slice(0, 15).join(' '));
  });

  it('leaves retention periods not reached yet empty instead of 0 %', async function () {
    this.timeout(60_000);
    await newInsight('Retention');
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Purchased');
    await page.select('#ret-unit', 'day');
    await page.locator('#ret-buckets').fill('7');
    await run('[role="figure"] svg.heat');
    await openTable();
    const rows = await tableRows();
    const dayMs = 86400_000;
    const today = Math.floor(Date.now() / dayMs) * dayMs;
    assert.ok(rows.length >= 3, JSON.stringify(rows));
    // Bucket i of a cohort is the i-th day after it: empty once that day is after today, a number until then.
    for (const r of rows) {
      const born = Date.parse(`${r[0].slice(0, 10)}T00:00:00Z`);
      assert.deepEqual(r.slice(2).map((c) => c === ''), Array.from({ length: 7 }, (_, i) => born + i * dayMs > today), r.join(' | '));
    }
    const newest = rows[rows.length - 1];
    assert.ok(newest.slice(3).every((c) => c === ''), 'the newest cohort (today) has only its first day');
    const cells = await page.$$eval('svg.heat > g', (gs) => gs.map((g) => g.querySelectorAll('rect').length));
    assert.equal(cells[rows.indexOf(newest)], 1, 'the newest cohort draws its first period only');
  });

  it('has no serious or critical accessibility violation with tooltips, legends and grouped funnels', async function () {
    this.timeout(60_000);
    const found: string[] = [];
    await newInsight('Funnel');
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#metric-1').fill('Purchased');
    await page.locator('#breakdown').fill('plan');
    await run('[role="figure"] svg');
    await page.hover('.funnel svg g.step');
    await page.waitForSelector('[role="tooltip"]');
    for (const v of await axeViolations(page)) found.push(`funnel: ${v.id} (${v.impact}) ${v.nodes.join(', ')}`);
    await newInsight('Trends');
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#breakdown').fill('plan');
    await run('[role="figure"] canvas');
    await page.focus('[role="figure"] .chart-canvas');
    // A key pressed before the chart has taken its answer moves nothing: press again until a point
    // shows its tooltip (at most 20 times; the wait below fails if none ever does).
    for (let i = 0; i < 20 && !(await page.$('[role="tooltip"]')); i++) {
      await page.keyboard.press('ArrowRight');
      await page.waitForSelector('[role="tooltip"]', { timeout: 500 }).catch(() => undefined);
    }
    await page.waitForSelector('[role="tooltip"]', { timeout: 5000 });
    for (const v of await axeViolations(page)) found.push(`trend: ${v.id} (${v.impact}) ${v.nodes.join(', ')}`);
    assert.deepEqual(found, []);
  });

  it('fits flows in a half-width card and on a phone, and shows the people who did nothing after the anchor', async function () {
    this.timeout(60_000);
    const fits = () => page.$$eval('[role="figure"][aria-label="After sign-up"] svg.sankey, .insight-figure svg.sankey', (svgs) => svgs.map((svg) => {
      const box = svg.getBoundingClientRect();
      const figure = svg.closest('[role="figure"]')!.getBoundingClientRect();
      const texts = [...svg.querySelectorAll('text')].map((t) => t.getBoundingClientRect());
      return { svg: box.right <= figure.right + 0.5 && box.left >= figure.left - 0.5, texts: texts.every((t) => t.left >= box.left - 0.5 && t.right <= box.right + 0.5), width: box.width };
    }));
    await page.goto(`${t.url}/projects/${pid}/boards/${seed.boardId}`);
    await page.waitForSelector('[role="figure"][aria-label="After sign-up"] svg.sankey', { timeout: 30_000 });
    assert.deepEqual((await fits()).map((f) => [f.svg, f.texts]), [[true, true]], 'the half-width card holds the chart and every label');
    // Signed up then nothing: a path of the anchor alone, drawn into an end node.
    const flows = (await api().post('/api/query/flows', { projectId: pid, event: 'Signed up', direction: 'after', steps: 2, from: new Date(Date.now() - 29 * 86400_000).toISOString().slice(0, 10), to: new Date().toISOString().slice(0, 10), limit: 10 })).body;
    // One end node per length a path stopped at (after the anchor alone, after one more event, …).
    const longest = Math.max(...flows.paths.map((x: any) => x.path.length));
    const stopped = new Map<number, number>();
    for (const p of flows.paths) if (p.path.length < longest) stopped.set(p.path.length, (stopped.get(p.path.length) ?? 0) + p.count);
    assert.ok((stopped.get(1) ?? 0) > 0, `someone did nothing after signing up: ${JSON.stringify(flows)}`);
    const ends = await page.$$eval('[role="figure"][aria-label="After sign-up"] svg.sankey g.end title', (ts) => ts.map((x) => x.textContent));
    assert.deepEqual(ends.sort(), [...stopped.values()].map((n) => `No further event (${n})`).sort());
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    try {
      await page.reload();
      await page.waitForSelector('[role="figure"][aria-label="After sign-up"] svg.sankey', { timeout: 30_000 });
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'nothing wider than the phone');
      assert.deepEqual((await fits()).map((f) => [f.svg, f.texts]), [[true, true]]);
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });

  it('flags an unknown event or property before Run with the closest known names, hints at case, and hides internal properties', async function () {
    this.timeout(60_000);
    await newInsight('Trends');
    await page.waitForFunction(() => document.querySelectorAll('#event-names option').length > 0 && document.querySelectorAll('#property-keys option').length > 0);
    const keys = await page.$$eval('#property-keys option', (os) => os.map((o) => o.getAttribute('value')));
    for (const internal of ['$insert_id', '$payload_size', '$processed_at', '$received_at']) assert.ok(!keys.includes(internal), `${internal} offered: ${keys}`);
    assert.ok(keys.includes('plan'));
    await page.locator('#metric-0').fill('signed-up');
    await page.waitForSelector('#metric-0-hint');
    assert.match(await page.$eval('#metric-0-hint', (e) => e.textContent!), /Unknown event “signed-up”.*Did you mean “Signed up”/);
    assert.equal(await page.$eval('#metric-0', (e) => e.getAttribute('aria-invalid')), 'true');
    await page.locator('#breakdown').fill('plann');
    await page.waitForSelector('#breakdown-hint');
    assert.match(await page.$eval('#breakdown-hint', (e) => e.textContent!), /Unknown property “plann”.*“plan”/);
    // Run refuses instead of drawing a zero line.
    await page.locator('button.primary::-p-text(Run)').click();
    await page.waitForSelector('.result [role="alert"]');
    assert.match(await page.$eval('.result [role="alert"]', (e) => e.textContent!), /Unknown event “signed-up”/);
    assert.equal(await page.$('[role="figure"] canvas'), null);
    // Filter values: the case hint names the value that matches.
    await page.locator('#insight-filters-key').fill('plan');
    await page.locator('#insight-filters-value').fill('PRO');
    await page.waitForFunction(() => /case-sensitive: “PRO” matches nothing, “pro” does/.test(document.querySelector('fieldset.filters')?.textContent ?? ''));
    await page.locator('#metric-0').fill('Signed up');
    await page.locator('#breakdown').fill('plan');
    await run('[role="figure"] canvas');
  });
});
