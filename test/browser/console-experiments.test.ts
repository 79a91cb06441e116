import assert from 'node:assert/strict';
import type { Browser, Page } from 'puppeteer-core';
import { forEachBackend } from '../support/backends.js';
import { createTenant, startTestService, type Tenant, type TestService } from '../support/service.js';
import { axeViolations, launchBrowser, signInWithToken, ensureConsoleBuilt } from '../support/browser.js';
import { drained, ev, ingest } from '../support/ingestion.js';

/**
 * The console's Experiments page in a real browser (chromium through puppeteer-core) against the
 * real service on both backend sets: exposures sent as `$experiment_started` through /track with
 * purchases after them, an experiment created in the form on a flag with two variants (its metrics
 * picked from the lexicon's events), its results read back cell by cell against
 * `GET /api/experiments/{id}/results` (both engines), a broken split shown as an alert, the
 * decision in the list as `/analysis` gives it, exposures over time drawn and as a table, keyboard reach, axe-core in both themes and at a
 * phone's width, stop and delete.
 */

const H = 3_600_000;

/** A unit exposed at `t0` to `variant` of `flag`, and its purchases (amounts) an hour after. */
function unit(id: string, flag: string, variant: string, t0: number, amounts: number[]) {
  return [
    ev('$experiment_started', id, { time: t0, 'Experiment name': flag, 'Variant name': variant }),
    ...amounts.map((amount, i) => ev('Purchased', id, { time: t0 + H + i * 60_000, amount })),
  ];
}

/** Parses a Table view cell the way the page wrote it (`—` is null). */
const cell = (text: string) => (text === '—' ? null : Number(text));
/** The page's figure and the API's number are the same to the six significant digits the Table view shows. */
function assertSame(got: number | null, want: number | null | undefined, what: string) {
  if (want === null || want === undefined) return assert.equal(got, null, `${what}: the API has none`);
  assert.ok(got !== null && Math.abs(got - want) <= 5e-6 * Math.abs(want) + 1e-300, `${what}: page ${got}, API ${want}`);
}

forEachBackend('web console: experiments', (backend) => {
  let t: TestService;
  let tenant: Tenant;
  let browser: Browser;
  let page: Page;
  let token: string;
  let pid: number;
  let srmId: number;
  let createdId: number;

  before(async function () {
    this.timeout(180_000);
    ensureConsoleBuilt();
    t = await startTestService(backend);
    tenant = await createTenant(t, 'Experiments console');
    pid = tenant.project.id;
    token = (await tenant.owner.post('/api/org/tokens', { name: 'experiments console', role: 'member' })).body.token;
    const member = t.client(token);
    for (const [key, variants] of [
      ['checkout', [{ key: 'control', rolloutPct: 50 }, { key: 'treatment', rolloutPct: 50 }]],
      ['layout', [{ key: 'a', rolloutPct: 50 }, { key: 'b', rolloutPct: 50 }]],
      ['plain', []],
    ] as const) {
      const made = await member.post('/api/flags', { projectId: pid, key, name: key, variants });
      assert.equal(made.status, 201, made.text);
    }
    // checkout: 40 people a side, 10 control and 22 treatment buyers (some twice); layout: 100 a, 40 b (a broken split).
    const t0 = Date.now() - 6 * H;
    const events = [
      ...Array.from({ length: 40 }, (_, i) => unit(`c${i}`, 'checkout', 'control', t0 + i * 1000, i < 10 ? (i % 3 === 0 ? [20, 5] : [20]) : [])),
      ...Array.from({ length: 40 }, (_, i) => unit(`t${i}`, 'checkout', 'treatment', t0 + i * 1000, i < 22 ? (i % 2 === 0 ? [25, 10] : [30]) : [])),
      ...Array.from({ length: 100 }, (_, i) => unit(`a${i}`, 'layout', 'a', t0 + i * 1000, i < 30 ? [10] : [])),
      ...Array.from({ length: 40 }, (_, i) => unit(`b${i}`, 'layout', 'b', t0 + i * 1000, i < 12 ? [10] : [])),
    ].flat();
    const sent = await ingest(t, tenant.project.token).post('/track', events);
    assert.equal(sent.status, 200, sent.text);
    await drained(t);
    const srm = await member.post('/api/experiments', { projectId: pid, key: 'layout-exp', name: 'Layout', flagKey: 'layout', control: 'a', metrics: [{ id: 'bought', kind: 'conversion', event: 'Purchased' }] });
    assert.equal(srm.status, 201, srm.text);
    srmId = srm.body.id;
    browser = await launchBrowser();
    page = await browser.newPage();
    page.on('pageerror', (e) => console.error('    page error:', (e as Error).message));
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${t.url}/projects/${pid}/experiments`);
    await signInWithToken(page, token);
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  const expPath = () => `/projects/${pid}/experiments`;
  const fill = async (label: string, value: string) => {
    const id = await page.$$eval('label', (ls, text) => ls.find((l) => l.textContent!.trim() === text)?.htmlFor ?? '', label);
    assert.ok(id, `a control labelled "${label}"`);
    await page.locator(`[id="${id}"]`).fill(value);
  };
  const select = async (label: string, value: string) => {
    const id = await page.$$eval('label', (ls, text) => ls.find((l) => l.textContent!.trim() === text)?.htmlFor ?? '', label);
    assert.ok(id, `a control labelled "${label}"`);
    await page.select(`[id="${id}"]`, value);
  };
  const resultsShown = () => page.waitForSelector('.metric-result', { timeout: 30_000 });
  /** Every row of a metric's Table view: variant → field → figure. */
  const exactTable = async (metricTitle: string) => {
    const sel = `section.metric-result[aria-labelledby="${await page.$$eval('section.metric-result h3', (hs, title) => hs.find((h) => h.firstChild!.textContent === title)?.id ?? '', metricTitle)}"]`;
    await page.waitForSelector(`${sel} table.exact-table`);
    return page.$$eval(`${sel} table.exact-table tbody tr`, (trs) => trs.map((tr) => ({
      variant: tr.getAttribute('data-variant')!,
      cells: Object.fromEntries([...tr.querySelectorAll('td[data-field]')].map((td) => [td.getAttribute('data-field')!, td.textContent!.trim()])),
    })));
  };
  /** The page's Table view of one metric against the API's numbers for it, field by field. */
  const compareWithApi = async (title: string, metricId: string, answer: any, fields: string[]) => {
    const rows = await exactTable(title);
    const metric = answer.metrics.find((m: any) => m.id === metricId);
    assert.deepEqual(rows.map((r) => r.variant), metric.variants.map((v: any) => v.key));
    for (const [i, v] of metric.variants.entries()) {
      for (const f of fields) {
        const want = f.startsWith('lift.') ? v.lift?.[f.slice(5)] : v[f];
        assertSame(cell(rows[i].cells[f]), want, `${metricId} ${v.key} ${f}`);
      }
      const sig = rows[i].cells.significant;
      if (v.significant === true || v.significant === false) assert.equal(sig, v.significant ? 'yes' : 'no', `${metricId} ${v.key} significant`);
      else if (v.reason) assert.equal(sig, v.reason);
    }
  };

  it('creates an experiment in the form on a flag with variants, its metrics from the lexicon', async function () {
    this.timeout(60_000);
    await page.waitForSelector('table a');
    const listed = await page.$$eval('.experiments-list tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-experiment')));
    assert.deepEqual(listed, ['layout-exp']);
    // Only flags with variants are offered; the events come from the lexicon, without the exposure events.
    await page.waitForFunction(() => document.querySelectorAll('#exp-flag option').length > 1 && document.querySelectorAll('#experiment-events option').length > 0);
    const flags = await page.$$eval('#exp-flag option', (os) => os.map((o) => (o as HTMLOptionElement).value).filter(Boolean));
    assert.deepEqual(flags.sort(), ['checkout', 'layout']);
    const events = await page.$$eval('#experiment-events option', (os) => os.map((o) => (o as HTMLOptionElement).value));
    assert.ok(events.includes('Purchased'), `lexicon events offered: ${events.join(', ')}`);
    assert.ok(!events.includes('$experiment_started'));
    await select('Flag', 'checkout');
    assert.equal(await page.$eval('#exp-control', (s) => (s as HTMLSelectElement).value), 'control');
    assert.equal(await page.$eval('#exp-key', (s) => (s as HTMLInputElement).value), 'checkout', 'the key starts as the flag key');
    await fill('Experiment key', 'checkout-exp');
    await fill('Experiment name', 'New checkout');
    await fill('Metric 1 event', 'Purchased');
    await page.locator('::-p-aria([name="Add metric"][role="button"])').click();
    await fill('Metric 2 event', 'Purchased');
    await select('Metric 2 kind', 'sum');
    await fill('Metric 2 property', 'amount');
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the list and the form');
    await page.locator('::-p-aria([name="Create experiment"][role="button"])').click();
    await page.waitForFunction((p) => new RegExp(`^${p}/\\d+$`).test(location.pathname), {}, expPath());
    createdId = Number(new URL(page.url()).pathname.split('/').pop());
    const stored = (await t.client(token).get(`/api/experiments/${createdId}`)).body;
    assert.equal(stored.key, 'checkout-exp');
    assert.equal(stored.flagKey, 'checkout');
    assert.equal(stored.control, 'control');
    assert.equal(stored.engine, 'bayesian');
    assert.deepEqual(stored.metrics.map((m: any) => [m.kind, m.event, m.property ?? null]), [['conversion', 'Purchased', null], ['sum', 'Purchased', 'amount']]);
    assert.equal(stored.primaryMetricId, stored.metrics[0].id);
  });

  it('shows the same numbers as GET /api/experiments/{id}/results: exposures, the Bayesian table and lift, then the frequentist one', async function () {
    this.timeout(90_000);
    const member = t.client(token);
    const exp = (await member.get(`/api/experiments/${createdId}`)).body;
    await resultsShown();
    const bayes = (await member.get(`/api/experiments/${createdId}/results`)).body;
    assert.equal(bayes.exposures.control, 40);
    assert.equal(bayes.exposures.treatment, 40);
    const exposures = await page.$$eval('.exposure-table tbody tr', (trs) => trs.map((tr) => [tr.getAttribute('data-variant'), tr.querySelector('td')!.textContent]));
    assert.deepEqual(exposures, [['control', '40'], ['treatment', '40']]);
    assert.equal(await page.$('.exposures [role="alert"]'), null, 'no SRM alert on an even split');
    // The drawn view: the treatment's chance to win and its interval's name, from the API's numbers.
    const treat = bayes.metrics[0].variants.find((v: any) => v.key === 'treatment');
    const row = await page.$eval('.metric-result .lift-table tbody tr[data-variant="treatment"]', (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent!.trim()));
    assert.match(row[4], new RegExp(`^${(treat.chanceToWin * 100).toFixed(1)} %`), `chance to win ${treat.chanceToWin}: ${row[4]}`);
    const label = await page.$eval('.metric-result .lift-table tr[data-variant="treatment"] svg[role="img"]', (s) => s.getAttribute('aria-label'));
    const signed = (x: number) => `${x > 0 ? '+' : x < 0 ? '−' : ''}${Math.abs(x * 100).toFixed(1)} %`;
    assert.equal(label, `Lift of treatment: ${signed(treat.lift.mean)}, interval ${signed(treat.lift.low)} to ${signed(treat.lift.high)}`);
    // The zero line sits where 0 falls between the interval's ends (both drawn on one scale).
    const geometry = await page.$eval('.metric-result .lift-table tr[data-variant="treatment"] svg', (s) => ({
      zero: Number(s.querySelector('.zero')!.getAttribute('x1')), lo: Number(s.querySelector('.interval')!.getAttribute('x')),
      hi: Number(s.querySelector('.interval')!.getAttribute('x')) + Number(s.querySelector('.interval')!.getAttribute('width')),
      mean: Number(s.querySelector('.estimate')!.getAttribute('x1')),
    }));
    assert.ok(geometry.lo < geometry.mean && geometry.mean < geometry.hi, JSON.stringify(geometry));
    assert.equal(geometry.zero < geometry.lo, treat.lift.low > 0, `zero left of the interval exactly when the low end is positive: ${JSON.stringify(geometry)}`);
    // Every number, through the Table view, for both metrics.
    const [conv, sum] = exp.metrics;
    await page.locator(`::-p-aria([name="Table: ${conv.name}"][role="button"])`).click();
    await page.locator(`::-p-aria([name="Table: ${sum.name}"][role="button"])`).click();
    const bayesFields = ['units', 'total', 'mean', 'variance', 'lift.mean', 'lift.low', 'lift.high', 'chanceToWin'];
    await compareWithApi(conv.name, conv.id, bayes, bayesFields);
    await compareWithApi(sum.name, sum.id, bayes, bayesFields);
    // The decision in the settings and in the list is the canary verdict's.
    const analysis = (await member.get(`/api/experiments/${createdId}/analysis`)).body;
    await page.waitForFunction(() => document.querySelector('[data-decision]')?.getAttribute('data-decision'));
    assert.equal(await page.$eval('[data-decision]', (d) => d.getAttribute('data-decision')), analysis.decision);
    await page.waitForFunction(() => !/…/.test(document.querySelector('tr[data-experiment="checkout-exp"] td:nth-child(4)')?.textContent ?? '…'));
    const listed = await page.$eval('tr[data-experiment="checkout-exp"] td:nth-child(4)', (td) => td.textContent!.trim());
    assert.equal(listed.split(':')[0], { Inconclusive: 'Inconclusive', Winner: 'Winner', Loser: 'Loser', SampleRatioMismatch: 'Sample ratio mismatch' }[analysis.decision as string]);
    // The frequentist engine with sequential testing, for this view: p-values instead of chance to win.
    await page.locator('::-p-aria([name="Frequentist"][role="button"])').click();
    await page.waitForSelector('#results-correction');
    await page.locator('.engine-choice input[type="checkbox"]').click();
    await page.select('#results-correction', 'holm');
    await page.waitForSelector('.experiment-results[data-settings="frequentist sequential holm"] .metric-result');
    const freq = (await member.get(`/api/experiments/${createdId}/results?engine=frequentist&sequential=true&correction=holm`)).body;
    assert.equal(freq.engine, 'frequentist');
    assert.match(await page.$eval('.lift-table thead', (h) => h.textContent!), /p-value \(sequential\)/);
    for (const m of [conv, sum]) await page.locator(`::-p-aria([name="Table: ${m.name}"][role="button"])`).click();
    const freqFields = ['units', 'total', 'mean', 'variance', 'lift.mean', 'lift.low', 'lift.high', 'pValue', 'sequentialPValue', 'adjustedPValue'];
    await compareWithApi(conv.name, conv.id, freq, freqFields);
    await compareWithApi(sum.name, sum.id, freq, freqFields);
  });

  it('draws exposures over time (cumulative and new per day) with the numbers of GET /api/experiments/{id}/results', async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}${expPath()}/${createdId}`);
    await resultsShown();
    const answer = (await t.client(token).get(`/api/experiments/${createdId}/results`)).body;
    const series = answer.exposuresOverTime;
    // 40 a side, all exposed within the last six hours: one or two UTC days.
    assert.ok(series.days.length >= 1 && series.days.length <= 2, JSON.stringify(series));
    assert.deepEqual(series.variants.map((v: any) => [v.key, v.cumulative.at(-1)]), [['control', 40], ['treatment', 40]]);
    // The shared series chart draws it (a canvas inside the section).
    await page.waitForSelector('.exposures-over-time canvas', { timeout: 30_000 });
    const rowsOf = () => page.$$eval('.exposures-over-time table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => c.textContent!.trim())));
    const want = (field: 'cumulative' | 'new') => series.days.map((d: string, i: number) => [d, ...series.variants.map((v: any) => String(v[field][i]))]);
    await page.locator('::-p-aria([name="Table: exposures over time"][role="button"])').click();
    await page.waitForSelector('.exposures-over-time table');
    assert.deepEqual(await page.$$eval('.exposures-over-time thead th', (ths) => ths.map((th) => th.textContent)), ['Bucket', 'control', 'treatment']);
    assert.deepEqual(await rowsOf(), want('cumulative'));
    await page.locator('::-p-aria([name="New per day"][role="button"])').click();
    await page.waitForFunction(() => document.querySelector('.exposures-over-time caption')?.textContent === 'Newly exposed people per day');
    assert.deepEqual(await rowsOf(), want('new'));
    // Back to the chart: the Table button again.
    await page.locator('::-p-aria([name="Table: exposures over time"][role="button"])').click();
    await page.waitForSelector('.exposures-over-time canvas');
  });

  it('reaches the engine and the Table view from the keyboard', async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}${expPath()}/${createdId}`);
    await resultsShown();
    await page.focus('.engine-choice button[aria-pressed="true"]');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Frequentist');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('.engine-choice button[aria-pressed="true"]')?.textContent === 'Frequentist');
    await resultsShown();
    // Tab on from the engine until the first metric's Table button has the focus, then Space.
    let reached = false;
    for (let i = 0; i < 40 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => /^Table: (?!exposures over time$)/.test(document.activeElement?.getAttribute('aria-label') ?? ''));
    }
    assert.ok(reached, 'a Table button is reachable with Tab');
    await page.keyboard.press('Space');
    await page.waitForSelector('table.exact-table th::-p-text(p-value)');
    assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on the results');
  });

  it('warns of a sample-ratio mismatch with role="alert"', async function () {
    this.timeout(60_000);
    const answer = (await t.client(token).get(`/api/experiments/${srmId}/results`)).body;
    assert.equal(answer.srm.ok, false);
    assert.deepEqual(answer.exposures, { a: 100, b: 40 });
    await page.goto(`${t.url}${expPath()}/${srmId}`);
    await resultsShown();
    const alert = await page.$eval('.exposures [role="alert"]', (a) => a.textContent!);
    assert.match(alert, /Sample ratio mismatch/);
    assert.deepEqual(await page.$$eval('.exposure-table tbody tr', (trs) => trs.map((tr) => tr.querySelector('td')!.textContent)), ['100', '40']);
    await page.waitForFunction(() => document.querySelector('[data-decision]')?.getAttribute('data-decision') === 'SampleRatioMismatch');
  });

  it('fits a phone in the dark theme without a serious accessibility violation', async function () {
    this.timeout(60_000);
    await page.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    try {
      await page.goto(`${t.url}${expPath()}/${createdId}`);
      await resultsShown();
      await page.locator('::-p-aria([name="Menu"][role="button"])').click();
      await page.locator('header button::-p-text(Theme)').click();
      await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(width <= 390, `the page is ${width} px wide on a 390 px screen`);
      assert.deepEqual(await axeViolations(page), [], 'no serious or critical accessibility violation on a phone, dark');
      await page.screenshot({ path: `/tmp/console-experiments-phone-${backend.name}.png`, fullPage: true });
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });

  it('stops and deletes an experiment', async function () {
    this.timeout(60_000);
    await page.goto(`${t.url}${expPath()}/${createdId}`);
    await resultsShown();
    await page.locator('::-p-aria([name="Stop experiment"][role="button"])').click();
    await page.waitForFunction(() => /^Stopped/.test(document.querySelector('.facts')?.textContent?.match(/Status(\w+)/)?.[1] ?? ''));
    assert.equal((await t.client(token).get(`/api/experiments/${createdId}`)).body.status, 'stopped');
    await page.waitForFunction(() => document.querySelector('tr[data-experiment="checkout-exp"] td:nth-child(3)')?.textContent === 'Stopped');
    await page.locator('::-p-aria([name="Delete experiment"][role="button"])').click();
    await page.waitForFunction((p) => location.pathname === p, {}, expPath());
    assert.equal((await t.client(token).get(`/api/experiments/${createdId}`)).status, 404);
    await page.waitForFunction(() => !document.querySelector('tr[data-experiment="checkout-exp"]') && !!document.querySelector('tr[data-experiment="layout-exp"]'));
  });
});
