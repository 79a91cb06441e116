import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { CONSOLE_DIST } from '../../apps/server/src/console/static.js';
import type { Browser, Page } from 'puppeteer-core';
import { createTenant, startTestService, type Tenant, type TestService } from './service.js';
import type { Backend } from './backends.js';
import { drained, ingest } from './ingestion.js';

/** Shared by the console's browser tests and `npm run console:screenshots`. */
const require = createRequire(import.meta.url);
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const AXE = require.resolve('axe-core/axe.min.js');

export async function launchBrowser(): Promise<Browser> {
  const puppeteer = (await import('puppeteer-core')).default;
  return puppeteer.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--font-render-hinting=none'],
    defaultViewport: { width: 1280, height: 900 },
  });
}

/** Axe-core's violations of impact serious or critical on the page as it is now. */
export async function axeViolations(page: Page): Promise<Array<{ id: string; impact: string; nodes: string[] }>> {
  // The console's CSP allows scripts from its own origin only: the checker goes in through the
  // DevTools protocol instead of a <script> tag.
  if (!(await page.evaluate(() => 'axe' in window))) {
    const source = (await import('node:fs')).readFileSync(AXE, 'utf8');
    await page.evaluate(source);
  }
  const result = await page.evaluate(async () => {
    const r = await (window as any).axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v: any) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')) }));
  });
  return (result as Array<{ id: string; impact: string; nodes: string[] }>).filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export interface Seeded {
  token: string;
  boardId: number;
  reports: { daily: number; byPlan: number; hourly: number; retention: number; flows: number };
  users: { signedUp: number; viewed: number; purchased: number };
}

const DAY = 86400;
const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.now() - n * DAY * 1000).toISOString().slice(0, 10);

/**
 * A project with a small product's traffic (40 sign-ups over ten days, 25 of them view a product,
 * 12 buy), a member machine token, and a board "Growth" with five report cards and a text card.
 * The hourly card asks for 6 months of hours: refused by a service started with
 * QUERY_MAX_CELLS below 4,380.
 */
export async function seedConsole(t: TestService, tenant: Tenant): Promise<Seeded> {
  const now = Math.floor(Date.now() / 1000);
  const events: unknown[] = [];
  for (let i = 0; i < 40; i++) {
    const id = `user-${i}`;
    const t0 = now - (i % 10) * DAY - 3600 * 3;
    const plan = i % 3 === 0 ? 'pro' : 'free';
    events.push({ event: 'Signed up', properties: { distinct_id: id, time: t0, plan, $insert_id: `s${i}` } });
    if (i < 25) events.push({ event: 'Viewed product', properties: { distinct_id: id, time: t0 + 300, plan, $insert_id: `v${i}` } });
    if (i < 12) events.push({ event: 'Purchased', properties: { distinct_id: id, time: t0 + 900 + i * 60, plan, amount: 10 + i, $insert_id: `p${i}` } });
  }
  const res = await ingest(t, tenant.project.token).post('/track', events);
  if (res.status !== 200) throw new Error(`seed /track answered ${res.status}: ${JSON.stringify(res.body)}`);
  await drained(t);
  const owner = tenant.owner;
  const token = (await owner.post('/api/org/tokens', { name: 'console test', role: 'member' })).body.token as string;
  const pid = tenant.project.id;
  const ir = (metric: Record<string, unknown>, analysis: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ({ v: 2, dateRange: { kind: 'preset', preset: '30d' }, metrics: [{ id: 'A', kind: 'event', ...metric }], analysis, ...extra });
  const report = async (name: string, type: string, query: unknown) => {
    const r = await owner.post(`/api/reports?projectId=${pid}`, { name, type, query });
    if (r.status !== 201) throw new Error(`seed report ${name}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.id as number;
  };
  const reports = {
    daily: await report('Daily signups', 'segmentation', ir({ event: 'Signed up', aggregation: { op: 'unique' } }, { kind: 'trend', unit: 'day', chart: 'line' })),
    byPlan: await report('Purchases by plan', 'segmentation', ir({ event: 'Purchased', aggregation: { op: 'count' } }, { kind: 'trend', unit: 'day', chart: 'bar' }, { breakdown: { property: 'plan', limit: 10 } })),
    hourly: await report('Hourly signups', 'segmentation', { ...ir({ event: 'Signed up', aggregation: { op: 'count' } }, { kind: 'trend', unit: 'hour', chart: 'line' }), dateRange: { kind: 'preset', preset: '6m' } }),
    retention: await report('Daily retention', 'retention', { bornEvent: 'Signed up', returnEvent: 'Purchased', from: daysAgo(29), to: today(), unit: 'day', buckets: 7 }),
    flows: await report('After sign-up', 'flows', { event: 'Signed up', direction: 'after', steps: 2, from: daysAgo(29), to: today(), limit: 10 }),
  };
  const note = await owner.post(`/api/annotations?projectId=${pid}`, { date: daysAgo(3), description: 'Pricing page launched' });
  if (note.status !== 201) throw new Error(`seed annotation: ${note.status} ${JSON.stringify(note.body)}`);
  const board = await owner.post(`/api/boards?projectId=${pid}`, {
    name: 'Growth',
    cards: [
      { reportId: reports.daily, span: 8, height: 'medium' },
      { cardType: 'text', text: 'Notes\nSign-ups, purchases and retention of the last 30 days.', span: 4, height: 'medium' },
      { reportId: reports.hourly, span: 4, height: 'short' },
      { reportId: reports.byPlan, span: 8, height: 'medium' },
      { reportId: reports.retention, span: 6, height: 'medium' },
      { reportId: reports.flows, span: 6, height: 'medium' },
    ],
  });
  if (board.status !== 201) throw new Error(`seed board: ${board.status} ${JSON.stringify(board.body)}`);
  return { token, boardId: board.body.id, reports, users: { signedUp: 40, viewed: 25, purchased: 12 } };
}

/** Waits until no card of the board is still loading. */
export async function boardSettled(page: Page): Promise<void> {
  await page.waitForFunction(() => document.querySelectorAll('[role="figure"]').length > 0 && !document.querySelector('.card-body [role="status"]'), { timeout: 30_000 });
}

/** Signs in through the access-token form on the page as it is (the sign-in page). */
export async function signInWithToken(page: Page, token: string): Promise<void> {
  await page.waitForSelector('input#access-token');
  await page.locator('input#access-token').fill(token);
  await Promise.all([
    page.waitForFunction(() => location.pathname !== '/sign-in', { timeout: 15_000 }),
    page.locator('button[type="submit"]::-p-text(Sign in)').click(),
  ]);
}

/** What a console browser test works with: the service, the seeded tenant, the browser and its signed-in page. */
export interface ConsolePage {
  t: TestService;
  tenant: Tenant;
  seed: Seeded;
  browser: Browser;
  page: Page;
}

export interface ConsolePageOptions {
  /** The tenant's (organisation's) name. */
  tenant: string;
  /** The service's environment beyond the defaults (e.g. QUERY_MAX_CELLS). */
  env?: Record<string, string>;
  /** More data or objects after seedConsole, before the browser opens. */
  prepare?: (c: Omit<ConsolePage, 'browser' | 'page'>) => Promise<void>;
  /** Listeners on the page before its first load (page errors are printed already). */
  listen?: (page: Page) => void;
  /** The console path opened and signed into, e.g. `/projects/1/insights`. */
  path: (c: Omit<ConsolePage, 'browser' | 'page'>) => string;
  /** Wait for the board's cards to settle after sign-in. */
  settle?: boolean;
}

/**
 * A console browser test's set-up in the suite it is called in: before all, the console built,
 * a service on `backend`, a tenant seeded by seedConsole (then `prepare`), Chromium on
 * `path` signed in with the seed's member token; after all, both closed. `ready` receives them
 * once they exist (mocha runs it before the suite's first test).
 */
export function withConsolePage(backend: Backend, opts: ConsolePageOptions, ready: (c: ConsolePage) => void): void {
  let c: Partial<ConsolePage> = {};
  before(async function () {
    this.timeout(180_000);
    ensureConsoleBuilt();
    const t = await startTestService(backend, opts.env ?? {});
    c.t = t;
    const tenant = await createTenant(t, opts.tenant);
    const seed = await seedConsole(t, tenant);
    const base = { t, tenant, seed };
    await opts.prepare?.(base);
    const browser = await launchBrowser();
    c.browser = browser;
    const page = await browser.newPage();
    page.on('pageerror', (e) => console.error('    page error:', (e as Error).message));
    opts.listen?.(page);
    await page.goto(t.url + opts.path(base));
    await signInWithToken(page, seed.token);
    if (opts.settle) await boardSettled(page);
    c = { ...base, browser, page };
    ready(c as ConsolePage);
  });
  after(async () => {
    await c.browser?.close();
    await c.t?.close();
  });
}

/** Builds the console once for this run when `npm install` has not (a fresh checkout without prepare). */
export function ensureConsoleBuilt(): void {
  if (fs.existsSync(path.join(CONSOLE_DIST, 'index.html'))) return;
  execFileSync('npx', ['vite', 'build', '--config', 'apps/console/vite.config.mjs'], { stdio: 'inherit' });
}

/** Every JS and CSS file the index page loads (and what those import), gzip-compressed. */
export function initialLoadBytes(): { files: string[]; gzip: number; raw: number } {
  const index = fs.readFileSync(path.join(CONSOLE_DIST, 'index.html'), 'utf8');
  const seen = new Set<string>();
  const queue = [...index.matchAll(/(?:src|href)="\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
  while (queue.length) {
    const f = queue.shift()!;
    if (seen.has(f)) continue;
    seen.add(f);
    if (f.endsWith('.js')) {
      const text = fs.readFileSync(path.join(CONSOLE_DIST, f), 'utf8');
      // Static imports of other chunks are part of the first load; dynamic import() ones are not.
      for (const m of text.matchAll(/(?:^|[;\s])import\s*(?:[\w{}*\s,$]+from\s*)?["']\.\/([^"']+\.js)["']/g)) queue.push(`assets/${m[1]}`);
    }
  }
  let gzip = 0;
  let raw = 0;
  for (const f of seen) {
    const body = fs.readFileSync(path.join(CONSOLE_DIST, f));
    raw += body.length;
    gzip += zlib.gzipSync(body, { level: 9 }).length;
  }
  return { files: [...seen], gzip, raw };
}

