/**
 * Board benchmark of the web console (not a test). Seeds `--events N` generated events (default
 * 10M; scripts/bench-dataset.ts: 200k identities, 40 event names, 10 properties) over the 30 days
 * ending now into the chosen engine, starts the service on it (a child process, one API + worker),
 * saves 12 reports (segmentations, funnels, retention, flows, IR trends and a funnel) on a board
 * whose range is the last 30 days, and measures
 *
 * - `apiMs`: the API's own time for the same 12 queries, uncached (the v0 and IR query
 *   endpoints, 4 at a time as the console sends its cards), wall time of all 12;
 * - `firstViewMs`: the cold first view, the worst case: the real browser (Debian chromium through
 *   puppeteer-core) loading the board's address until every card shows its chart or its error,
 *   nothing cached (an annotation written before each first view changes every entry's
 *   signature) and no warming (the service runs with BOARD_WARM_INTERVAL_MS=0 for these views);
 * - `cachedViewMs`: the same page loaded again (cards from the results cache), as Node sees it:
 *   from page.goto until its polling (each animation frame) finds every card drawn;
 *   `cachedViewPageMs`: the same views as the page itself sees them, without the harness: from
 *   the navigation's start (performance.timeOrigin) to the first animation frame after the last
 *   card got its chart or its error (a MutationObserver in the page notes it, no polling);
 * - `apiCachedMs`: one POST /api/boards/{id}/run answered from the cache; `apiCachedCardsMs`: the
 *   12 cards from the cache one request each (GET …/run?cardId=, how the board page asked before
 *   it streamed), one after the other; `apiCachedStreamMs`: the streamed run (Accept:
 *   application/x-ndjson) from the cache, until its last line;
 * - `shellMs`: of each view, the part until the board's cards are laid out (the console's files,
 *   the account and projects reads, and the board: the streamed run's first line, its request
 *   started as the script loads; on a cached view the cards' charts are drawn in the same frame,
 *   so this includes them); `cachedCardRequestMs`: the median
 *   duration of the page's board run request in the cached views (one request for all 12 cards),
 *   as the browser's resource timing saw it;
 * - `firstCardViewMs`: of the first view (results cache empty), until the first card shows its
 *   chart or its error;
 * - `streamFirstCardMs` / `streamAllMs`: the API alone, one streamed run with the results cache
 *   empty, until its first card line and until its last line; `cardBytes`: the size of that run's
 *   card lines (bytes of NDJSON, newlines included), what the board's answers weigh on the wire;
 * - then the service is started again on the same stores with the worker's warming every second
 *   (BOARD_WARM_INTERVAL_MS=1000; the board recorded as viewed by a person, so it is warmed; the
 *   bench's browser signs in with the superadmin key, whose runs are not views), and each run writes an
 *   annotation (the data changed), waits for the warming pass that computes the cards (the
 *   service's /metrics) and opens the board: `warmedViewMs`, the first view after a warming pass;
 *   `warmEngineMs`, the cards' compute time of that pass (tally_board_warm_engine_seconds_total),
 *   `warmPassMs` the passes' own time (tally_board_warm_pass_duration_seconds, the cheap
 *   unchanged passes around it included), `warmCpuMs` the service's CPU (all its threads, DuckDB's
 *   included, ClickHouse's server not) from the write to the pass's end;
 *   `warmCoreShare` = warmEngineMs × 12 passes an hour / 3,600 s: the share of one core warming
 *   takes with the default 5-minute interval when the data changes every interval.
 *
 * Medians of `--runs` (default 3). The browser holds the console's files in its cache after the
 * first load, as a person's browser would.
 *
 *   npm run bench:console                                   # DuckDB, 10M events
 *   npm run bench:console -- --events 2000000 --runs 3      # smaller
 *   npm run bench:console -- --engine clickhouse            # ClickHouse at CLICKHOUSE_URL or TEST_CLICKHOUSE_URL (database bench_console)
 *   npm run bench:console -- --json                         # also one final JSON line of figures
 *   npm run bench:console -- --materialize p1,p2            # p1 and p2 in columns of their own (MATERIALIZED_PROPERTIES, seed and service)
 *   npm run bench:console -- --engine clickhouse --reuse    # keep the events an earlier run seeded, if as many
 *   npm run bench:console -- --trace /tmp/cached.json       # also one cached view as a Chrome trace, and its main thread's time by kind
 */
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import puppeteer, { type Page } from 'puppeteer-core';
import { ClickHouseEventStore } from '../apps/server/src/ports/events/clickhouse.js';
import { DuckDbEventStore } from '../apps/server/src/ports/events/duckdb.js';
import type { EventStore } from '../apps/server/src/ports/events/index.js';
import { BENCH_KEY, arg, benchApi, cpuMs, startBenchService } from './bench-support.js';
import { metric } from '../test/support/pipeline.js';
import { openMetadataStore } from '../apps/server/src/ports/metadata/knex.js';
import { BoardViews } from '../apps/server/src/boards/views.js';
import { seedDataset } from './bench-dataset.js';
import { materializedProperties } from '../apps/server/src/ports/events/schema.js';

const N = Number(arg('events', '10000000'));
const RUNS = Number(arg('runs', '3'));
/** Waits grow with the events past 10M: at 100M a cold card takes about ten times as long. */
const SCALE = Math.max(1, N / 10_000_000);
const WAIT_MS = 120_000 * SCALE;
const ENGINE = arg('engine', 'duckdb') as 'duckdb' | 'clickhouse';
const JSON_OUT = process.argv.includes('--json');
/** Where to write a Chrome trace of one more cached view (open it in the browser's Performance panel). */
const TRACE = arg('trace', '');
/** ClickHouse: keep the events of an earlier run when it seeded as many (the range is the same 30 days up to today). */
const REUSE = process.argv.includes('--reuse');
/** Event properties stored in columns of their own (MATERIALIZED_PROPERTIES) in the seeded store and the service. */
const MATERIALIZE = arg('materialize', '').split(',').map((k) => k.trim()).filter(Boolean);
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DAY = 86_400_000;
const PROJECT = 1;

const now = Date.now();
const today = Math.floor(now / DAY) * DAY;
const t0 = today - 29 * DAY;
const iso = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const from = iso(t0);
const to = iso(today);

/** The 12 cards: [name, report type, stored query, the uncached endpoint and body answering the same]. */
function cards(): Array<{ name: string; type: string; query: Record<string, unknown>; endpoint: string; body: Record<string, unknown> }> {
  const v0 = (name: string, type: string, endpoint: string, q: Record<string, unknown>) => ({ name, type, query: { ...q, from, to }, endpoint, body: { ...q, from, to, projectId: String(PROJECT) } });
  const ir = (name: string, type: string, q: Record<string, unknown>) => {
    const query = { v: 2, dateRange: { kind: 'absolute', from, to }, ...q };
    return { name, type, query, endpoint: '/api/query', body: { projectId: String(PROJECT), query } };
  };
  const metric = (id: string, event: string, op: string) => ({ id, kind: 'event', event, aggregation: { op } });
  return [
    v0('e0 per day', 'segmentation', '/api/query/segmentation', { event: 'e0', unit: 'day', type: 'total' }),
    v0('e1 people per day', 'segmentation', '/api/query/segmentation', { event: 'e1', unit: 'day', type: 'unique' }),
    v0('e2 by p1', 'segmentation', '/api/query/segmentation', { event: 'e2', unit: 'day', type: 'total', breakdown: 'p1' }),
    v0('all events where p2 = v1', 'segmentation', '/api/query/segmentation', { event: '$all_events', unit: 'day', type: 'total', filters: [{ key: 'p2', op: 'eq', value: 'v1' }] }),
    v0('e0 → e1 → e2', 'funnel', '/api/query/funnel', { steps: ['e0', 'e1', 'e2'], windowDays: 7 }),
    v0('e3 → e5 by p1', 'funnel', '/api/query/funnel', { steps: ['e3', 'e5'], windowDays: 7, breakdown: 'p1' }),
    v0('e0 then e1, weekly', 'retention', '/api/query/retention', { bornEvent: 'e0', returnEvent: 'e1', unit: 'week', buckets: 4 }),
    v0('after e0', 'flows', '/api/query/flows', { event: 'e0', direction: 'after', steps: 3 }),
    ir('e0 against the previous period', 'segmentation', { metrics: [metric('A', 'e0', 'count')], analysis: { kind: 'trend', unit: 'day', compare: { kind: 'previous_period' } } }),
    ir('e1 and e2 people', 'segmentation', { metrics: [metric('A', 'e1', 'unique'), metric('B', 'e2', 'unique')], analysis: { kind: 'trend', unit: 'day' } }),
    ir('e0 → e4 (IR)', 'funnel', { metrics: [metric('A', 'e0', 'unique'), metric('B', 'e4', 'unique')], analysis: { kind: 'funnel', steps: ['A', 'B'] } }),
    v0('e5 per week where p1 ≠ v0', 'segmentation', '/api/query/segmentation', { event: 'e5', unit: 'week', type: 'unique', filters: [{ key: 'p1', op: 'neq', value: 'v0' }] }),
  ];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function seed(dataDir: string): Promise<Record<string, string>> {
  const shape = { project: PROJECT, t0, spanMs: now - t0, ids: 200_000 };
  let store: EventStore;
  const materialized = materializedProperties(MATERIALIZE);
  let env: Record<string, string> = MATERIALIZE.length ? { MATERIALIZED_PROPERTIES: MATERIALIZE.join(',') } : {};
  if (ENGINE === 'duckdb') {
    store = new DuckDbEventStore(path.join(dataDir, 'events.duckdb'), undefined, materialized);
  } else {
    const url = process.env.CLICKHOUSE_URL ?? process.env.TEST_CLICKHOUSE_URL;
    if (!url) throw new Error('--engine clickhouse needs CLICKHOUSE_URL or TEST_CLICKHOUSE_URL');
    const database = process.env.BENCH_CLICKHOUSE_DATABASE ?? 'bench_console';
    // The seeding's merges and fold rewrite whole months: at 100M events one statement takes minutes.
    store = new ClickHouseEventStore({ url, database, writeTimeoutMs: 3_600_000 }, undefined, materialized);
    env = { ...env, CLICKHOUSE_URL: url, CLICKHOUSE_DATABASE: database };
  }
  await store.migrate();
  // --reuse: a ClickHouse database seeded by an earlier run with the same number of events is kept (100M take minutes to load and fold).
  if (REUSE && ENGINE === 'clickhouse') {
    const [{ n }] = await store.query<{ n: number }>(`SELECT count() AS n FROM events WHERE project_id = ${PROJECT}`);
    if (Number(n) === N) {
      console.log(`${ENGINE}: the ${N} events seeded earlier are reused`);
      await store.close();
      return env;
    }
  }
  const s = await seedDataset(store, N, shape);
  console.log(`${ENGINE}: ${N} events over ${from}..${to} loaded in ${(s.loadMs / 1000).toFixed(1)} s, ${s.folded} links folded in ${(s.foldMs / 1000).toFixed(1)} s`);
  await store.close();
  return env;
}

/**
 * Runs in the page before its own scripts: notes (window.__boardDrawnAt, ms since the navigation
 * started) the first animation frame after every card shows its chart or its error.
 */
const DRAWN_PROBE = (count: number) => {
  const w = window as unknown as { __boardDrawnAt?: number };
  const observer = new MutationObserver(() => {
    const figs = [...document.querySelectorAll('[role="figure"]')];
    if (figs.length !== count || !figs.every((f) => !f.querySelector('[role="status"]') && f.querySelector('svg, canvas, [role="alert"]'))) return;
    observer.disconnect();
    requestAnimationFrame(() => (w.__boardDrawnAt = performance.now()));
  });
  document.addEventListener('DOMContentLoaded', () => observer.observe(document.body, { childList: true, subtree: true }));
};

/** Every card of the board shows its chart (svg or canvas) or its error. */
async function boardDrawn(page: Page, count: number): Promise<void> {
  await page.waitForFunction((n: number) => {
    const figs = [...document.querySelectorAll('[role="figure"]')];
    return figs.length === n && figs.every((f) => !f.querySelector('[role="status"]') && f.querySelector('svg, canvas, [role="alert"]'));
  }, { polling: 'raf', timeout: WAIT_MS }, count);
}

/**
 * One cached view under Chrome's tracing, written to `file`; prints the renderer main thread's
 * time inside the view by event kind (script, style, layout, paint...), top-level events only.
 */
async function traceCachedView(page: Page, file: string, view: () => Promise<number>): Promise<void> {
  await page.tracing.start({ path: file, categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'blink.user_timing'] });
  const ms = await view();
  await page.tracing.stop();
  type TraceEvent = { name: string; ph: string; ts: number; dur?: number; pid: number; tid: number; args?: { name?: string } };
  const events = (JSON.parse(fs.readFileSync(file, 'utf8')) as { traceEvents: TraceEvent[] }).traceEvents;
  // The page's renderer: of the threads named CrRendererMain, the busiest.
  const mains = new Set(events.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
  const perThread = new Map<string, TraceEvent[]>();
  for (const e of events) {
    const key = `${e.pid}:${e.tid}`;
    if (e.ph !== 'X' || !e.dur || !mains.has(key)) continue;
    if (!perThread.has(key)) perThread.set(key, []);
    perThread.get(key)!.push(e);
  }
  const onMain = [...perThread.values()].sort((a, b) => b.length - a.length)[0] ?? [];
  onMain.sort((a, b) => a.ts - b.ts || b.dur! - a.dur!);
  // The tasks (top-level events), and by name the events directly inside them.
  const byKind = new Map<string, number>();
  let busy = 0;
  for (let i = 0; i < onMain.length; ) {
    const task = onMain[i];
    const end = task.ts + task.dur!;
    busy += task.dur! / 1000;
    let inner = 0;
    let j = i + 1;
    for (; j < onMain.length && onMain[j].ts < end; j++) {
      const e = onMain[j];
      if (e.ts < inner) continue;
      inner = e.ts + e.dur!;
      byKind.set(e.name, (byKind.get(e.name) ?? 0) + e.dur! / 1000);
    }
    i = j;
  }
  const rows = [...byKind].sort((a, b) => b[1] - a[1]).slice(0, 10);
  console.log(`cached view under tracing: ${Math.round(ms)} ms, the page's main thread busy ${Math.round(busy)} ms, by kind (ms): ${rows.map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}`);
}

async function main() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-console-'));
  const env = await seed(dataDir);
  // The board's range reaches today: on a loaded machine a cold view can outlast the default 60 s
  // fresh bound, and the cached view right after would recompute instead of reading the cache.
  // Past 10M events the statements' bounds grow with them, as an operator at that size would set them.
  const bounds: Record<string, string> = SCALE > 1 ? { QUERY_TIMEOUT_MS: String(30_000 * SCALE), QUERY_MAX_MEMORY_MB: String(Math.min(8192, 2048 * SCALE)) } : {};
  const serviceEnv = { ...env, ...bounds, QUERY_RATE_PER_SECOND: '100000', QUERY_RATE_BURST: '100000', RESULTS_CACHE_FRESH_MS: String(600_000 * SCALE) };
  let svc = await startBenchService({ name: 'bench-console', dataDir, env: { ...serviceEnv, BOARD_WARM_INTERVAL_MS: '0' } });
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  try {
    const org = await benchApi(svc.url, 'POST', '/admin/orgs', { name: 'Bench' });
    const project = await benchApi(svc.url, 'POST', `/admin/orgs/${org.id}/projects`, { name: 'Web' });
    if (project.id !== PROJECT) throw new Error(`the seeded events belong to project ${PROJECT}, the service made ${project.id}`);
    const list = cards();
    const reports = [];
    for (const c of list) reports.push(await benchApi(svc.url, 'POST', `/api/reports?projectId=${PROJECT}`, { name: c.name, type: c.type, query: c.query }));
    const board = await benchApi(svc.url, 'POST', `/api/boards?projectId=${PROJECT}`, {
      name: 'Last 30 days', date_range: { kind: 'absolute', from, to },
      cards: reports.map((r, i) => ({ reportId: r.id, span: i % 3 === 0 ? 12 : 6 })),
    });

    // The API alone, uncached, 4 queries in flight as the console runs its cards.
    const apiRun = async () => {
      const started = performance.now();
      let next = 0;
      const worker = async () => {
        while (next < list.length) {
          const c = list[next++];
          await benchApi(svc.url, 'POST', c.endpoint, c.body);
        }
      };
      await Promise.all(Array.from({ length: 4 }, worker));
      return performance.now() - started;
    };
    await apiRun(); // warm-up: the engine's first reads of the files

    const page = await browser.newPage();
    await page.setViewport({ width: 1440, height: 900 });
    await page.evaluateOnNewDocument(DRAWN_PROBE, cards().length);
    const signIn = async () => {
      await page.goto(`${svc.url}/sign-in`, { waitUntil: 'networkidle0' });
      await page.locator('::-p-aria(Access token)').fill(BENCH_KEY);
      await page.locator('::-p-aria([name="Sign in"][role="button"])').click();
      await page.waitForFunction(() => location.pathname !== '/sign-in');
    };
    await signIn();
    let address = `${svc.url}/projects/${PROJECT}/boards/${board.id}`;
    const shell: number[] = [];
    let requests: number[] = [];
    /** The page's own figure of each view (DRAWN_PROBE), where the caller collects it. */
    let pageDrawn: number[] = [];
    /** `firstCards`: where to note when the first card showed its chart or error. */
    const view = async (firstCards?: number[]) => {
      const started = performance.now();
      await page.goto(address);
      // The page's own part: the console loaded, the board read, its cards laid out (no answer yet needed).
      await page.waitForFunction((n: number) => document.querySelectorAll('[role="figure"]').length === n, { polling: 'raf', timeout: WAIT_MS }, list.length);
      shell.push(performance.now() - started);
      if (firstCards) {
        await page.waitForFunction(() => [...document.querySelectorAll('[role="figure"]')].some((f) => f.querySelector('svg, canvas, [role="alert"]')), { polling: 'raf', timeout: WAIT_MS });
        firstCards.push(performance.now() - started);
      }
      await boardDrawn(page, list.length);
      const ms = performance.now() - started;
      pageDrawn.push(await page.waitForFunction(() => (window as unknown as { __boardDrawnAt?: number }).__boardDrawnAt, { timeout: 10_000 }).then((h) => h.jsonValue() as Promise<number>));
      // How long each card's own request took, as the browser saw it (the rest is the page's work).
      requests.push(...(await page.evaluate(() => performance.getEntriesByType('resource').filter((e) => /\/run(\?cardId=|$)/.test(e.name)).map((e) => e.duration))));
      return ms;
    };
    /** The browser's first views: until the first card showed its chart or its error. */
    const firstCards: number[] = [];
    /** One streamed board run through the API alone: [ms to the first card line, ms to the last line, bytes of the card lines]. */
    const streamRun = async (): Promise<[number, number, number]> => {
      const started = performance.now();
      const res = await fetch(`${svc.url}/api/boards/${board.id}/run`, {
        method: 'POST', body: '{}', headers: { authorization: `Bearer ${BENCH_KEY}`, 'content-type': 'application/json', accept: 'application/x-ndjson' },
      });
      if (!res.ok || !res.body) throw new Error(`streamed run answered ${res.status}`);
      let firstCardAt = 0;
      let text = '';
      for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
        text += chunk;
        if (!firstCardAt && text.includes('"kind":"card"')) firstCardAt = performance.now() - started;
      }
      const all = performance.now() - started;
      const raw = text.trim().split('\n');
      const lines = raw.map((l) => JSON.parse(l));
      if (lines.at(-1).kind !== 'done' || lines.at(-1).errors > 0) throw new Error(`streamed run: ${JSON.stringify(lines.at(-1))}`);
      const bytes = raw.filter((_, i) => lines[i].kind === 'card').reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
      return [firstCardAt, all, bytes];
    };
    await view(); // the console's files into the browser's cache
    shell.length = 0;

    const api: number[] = [];
    const first: number[] = [];
    const cached: number[] = [];
    const apiCached: number[] = [];
    const cachedRequests: number[] = [];
    const cachedPage: number[] = [];
    const apiCachedCards: number[] = [];
    const apiCachedStream: number[] = [];
    const streamFirst: number[] = [];
    const streamAll: number[] = [];
    const cardBytes: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      api.push(await apiRun());
      // A new annotation changes what every entry was computed with: the next view misses.
      await benchApi(svc.url, 'POST', `/api/annotations?projectId=${PROJECT}`, { date: from, description: `run ${r}` });
      first.push(await view(firstCards));
      requests = cachedRequests;
      pageDrawn = cachedPage;
      cached.push(await view());
      requests = [];
      pageDrawn = [];
      const s = performance.now();
      const run = await benchApi(svc.url, 'POST', `/api/boards/${board.id}/run`, {});
      apiCached.push(performance.now() - s);
      // The board page's way: one request per card, here one after the other.
      const c = performance.now();
      for (const card of board.cards) await benchApi(svc.url, 'GET', `/api/boards/${board.id}/run?cardId=${card.id}`);
      apiCachedCards.push(performance.now() - c);
      apiCachedStream.push((await streamRun())[1]);
      // The API alone, streamed, with the results cache empty again.
      await benchApi(svc.url, 'POST', `/api/annotations?projectId=${PROJECT}`, { date: from, description: `stream ${r}` });
      const [firstLine, all, bytes] = await streamRun();
      streamFirst.push(firstLine);
      streamAll.push(all);
      cardBytes.push(bytes);
      const missed = run.cards.filter((c: { cached_at?: number }) => c.cached_at === undefined).length;
      if (missed > 0) throw new Error(`${missed} cards were not served from the cache`);
      const errors = await page.$$eval('[role="figure"] [role="alert"]', (els) => els.map((e) => e.textContent));
      if (errors.length) throw new Error(`cards failed: ${errors.join('; ')}`);
    }

    // Warmed first views: the same stores, the service again with the worker's warming every second.
    const shellMs = Math.round(median(shell));
    if (TRACE) await traceCachedView(page, TRACE, () => view()); // after the medians it would join
    await page.deleteCookie(...(await page.cookies()));
    svc.child.kill('SIGTERM');
    await new Promise((resolve) => (svc.child.exitCode !== null ? resolve(null) : svc.child.once('exit', resolve)));
    // The board counts as viewed by a person (the bench's browser signs in with the superadmin key, whose runs are not views).
    const metadata = openMetadataStore({ dataDir });
    await new BoardViews(metadata).record(board.id, PROJECT);
    await metadata.destroy();
    svc = await startBenchService({ name: 'bench-console', dataDir, env: { ...serviceEnv, BOARD_WARM_INTERVAL_MS: '1000' } });
    address = `${svc.url}/projects/${PROJECT}/boards/${board.id}`;
    await signIn();
    await view(); // the console's files from this address into the browser's cache
    const warmClock = async () => {
      const [computed, engineSeconds, passes, passSeconds] = await Promise.all([
        'tally_board_warm_cards_total{outcome="computed"}', 'tally_board_warm_engine_seconds_total',
        'tally_board_warm_pass_duration_seconds_count', 'tally_board_warm_pass_duration_seconds_sum',
      ].map((name) => metric(svc.url, name)));
      return { computed, engineSeconds, passes, passSeconds, cpu: cpuMs(svc.child.pid!) };
    };
    const warmed: number[] = [];
    const warmEngine: number[] = [];
    const warmPass: number[] = [];
    const warmCpu: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const before = await warmClock();
      await benchApi(svc.url, 'POST', `/api/annotations?projectId=${PROJECT}`, { date: from, description: `warm ${r}` });
      const deadline = performance.now() + 300_000 * SCALE;
      let now = before;
      // The pass that computes the 12 cards, then the end of a pass after it was seen (the pass itself or the next).
      while ((now = await warmClock()).computed - before.computed < list.length) {
        if (performance.now() > deadline) throw new Error(`no warming pass computed the cards in ${5 * SCALE} min (${now.computed - before.computed} computed)`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const seen = now.passes;
      while ((now = await warmClock()).passes <= seen) await new Promise((resolve) => setTimeout(resolve, 100));
      warmEngine.push((now.engineSeconds - before.engineSeconds) * 1000);
      warmPass.push((now.passSeconds - before.passSeconds) * 1000);
      warmCpu.push(now.cpu - before.cpu);
      warmed.push(await view());
      const run = await benchApi(svc.url, 'POST', `/api/boards/${board.id}/run`, {});
      const missed = run.cards.filter((c: { cached_at?: number }) => c.cached_at === undefined).length;
      if (missed > 0) throw new Error(`${missed} cards were not warm after the warming pass`);
    }
    const warmEngineMs = Math.round(median(warmEngine));
    const figures = {
      engine: ENGINE, events: N, cards: list.length, runs: RUNS, materialized: MATERIALIZE,
      apiMs: Math.round(median(api)), firstViewMs: Math.round(median(first)), cachedViewMs: Math.round(median(cached)), cachedViewPageMs: Math.round(median(cachedPage)), apiCachedMs: Math.round(median(apiCached)),
      shellMs,
      cachedCardRequestMs: Math.round(median(cachedRequests)),
      apiCachedCardsMs: Math.round(median(apiCachedCards)),
      apiCachedStreamMs: Math.round(median(apiCachedStream)),
      firstCardViewMs: Math.round(median(firstCards)),
      streamFirstCardMs: Math.round(median(streamFirst)),
      streamAllMs: Math.round(median(streamAll)),
      cardBytes: median(cardBytes),
      warmedViewMs: Math.round(median(warmed)),
      warmEngineMs, warmPassMs: Math.round(median(warmPass)), warmCpuMs: Math.round(median(warmCpu)),
      warmCoreShare: Math.round(((warmEngineMs / 1000) * 12 / 3600) * 10_000) / 10_000,
      loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100),
    };
    console.log(`\n${ENGINE}, ${N} events${MATERIALIZE.length ? ` (materialised: ${MATERIALIZE.join(', ')})` : ''}, a board of ${list.length} cards over 30 days; median of ${RUNS}`);
    console.log(`  API alone, uncached (12 queries, 4 at a time): ${figures.apiMs} ms`);
    console.log(`  browser, cold first view (nothing cached):    ${figures.firstViewMs} ms`);
    console.log(`  browser, first view after a warming pass:     ${figures.warmedViewMs} ms`);
    console.log(`  browser, cached view:                         ${figures.cachedViewMs} ms (the page's own figure: ${figures.cachedViewPageMs} ms)`);
    console.log(`  API board run from the cache:                 ${figures.apiCachedMs} ms`);
    console.log(`  browser, the board laid out before any answer: ${figures.shellMs} ms (console, account and projects, the run's first line)`);
    console.log(`  browser, first view, the first card drawn:    ${figures.firstCardViewMs} ms`);
    console.log(`  the board run request in the cached view:     ${figures.cachedCardRequestMs} ms (median, as the browser saw it; one request for all cards)`);
    console.log(`  the 12 cards from the cache, one request each, one after the other: ${figures.apiCachedCardsMs} ms`);
    console.log(`  the streamed run from the cache:              ${figures.apiCachedStreamMs} ms`);
    console.log(`  the streamed run, cache empty: first card ${figures.streamFirstCardMs} ms, last line ${figures.streamAllMs} ms; card lines ${figures.cardBytes} bytes`);
    console.log(`  one warming pass after a change: cards' engine time ${figures.warmEngineMs} ms, passes ${figures.warmPassMs} ms, service CPU ${figures.warmCpuMs} ms`);
    console.log(`  warming, default 5-min interval, data changing every interval: ${(figures.warmCoreShare * 100).toFixed(2)} % of one core`);
    if (JSON_OUT) console.log(JSON.stringify(figures));
  } finally {
    await browser.close();
    svc.child.kill('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
