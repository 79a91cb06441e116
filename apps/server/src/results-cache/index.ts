import { createHash } from 'node:crypto';
import type { Deps } from '../deps.js';
import type { Db } from '../ports/metadata/knex.js';
import { DAY_MS } from '../query/dialects/index.js';
import { analysesOf } from '../query/analyses.js';
import { dateRange, type DateRange } from '../query/range.js';
import { upgradeQuery } from '../query/ir/upgrade.js';
import { irRanges } from '../query/ir/run.js';
import { isIrDocument } from '../reports/query.js';
import { resolveDateRange } from '../reports/date-range.js';
import type { SavedReport } from '../reports/store.js';
import type { ReportRunResult, RunOverride } from '../reports/run.js';
import { SizedLru, type Entry } from './lru.js';
import { DataVersions, dayOf } from './versions.js';

export { DataVersions } from './versions.js';
export { withDataVersions } from './tracked-store.js';

export interface ResultsCacheConfig {
  /** How long a result whose range reaches today is served (RESULTS_CACHE_FRESH_MS). */
  freshMs: number;
  /** Budget of the cached answers in this process (RESULTS_CACHE_MAX_MB); 0 turns the cache off. */
  maxBytes: number;
}

export const RESULTS_CACHE_DEFAULTS: ResultsCacheConfig = { freshMs: 60_000, maxBytes: 128 * 1024 * 1024 };

/** A report run as runReport answers it, and when the answer was computed if it came from the cache. */
export type CachedRun = ReportRunResult & { cached_at?: number };
type Value = ReportRunResult;

/** JSON with object members in key order, so two spellings of one query share an entry. */
function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** An override that changes nothing (a board without range or filters) keys as no override, so a report shares its entries with its cards. */
const normalOverride = (o: RunOverride) => ({ d: o.dateRange ?? undefined, f: o.filters?.length ? o.filters : undefined });

/** Retention's furthest return: 16 weekly buckets after the range. */
const MAX_RETURN_DAYS = 16 * 7;

const sha = (s: string) => createHash('sha256').update(s).digest('base64url');

/**
 * The event times a report's run reads, widest first: its range, a comparison period before it,
 * retention's return buckets after it. Undefined when the range does not resolve (the run then
 * answers its 400 and nothing is cached).
 */
function spanOf(deps: Deps, report: SavedReport, override: RunOverride, now: number): DateRange | undefined {
  try {
    if (isIrDocument(report.query)) {
      const up = upgradeQuery(report.query);
      if (!up.ok) return undefined;
      const query = override.dateRange ? { ...up.query, dateRange: override.dateRange } : up.query;
      const { range, cmp } = irRanges(deps, query, now);
      const span = cmp ? { fromMs: Math.min(range.fromMs, cmp.fromMs), toEndMs: Math.max(range.toEndMs, cmp.toEndMs) } : range;
      // Trends and funnels read their range (and comparison period); another kind, once the IR
      // runs it (retention's return buckets), may read past it: the longest it could.
      const kind = (query.analysis as { kind: string }).kind;
      return kind === 'trend' || kind === 'funnel' ? span : { fromMs: span.fromMs, toEndMs: span.toEndMs + MAX_RETURN_DAYS * DAY_MS };
    }
    const body: Record<string, unknown> = { ...report.query };
    if (override.dateRange) Object.assign(body, resolveDateRange(override.dateRange, now));
    const range = dateRange(body.from, body.to, deps.config.maxQueryRangeDays);
    if (report.type !== 'retention') return range;
    const unitDays = body.unit === 'day' ? 1 : 7;
    const buckets = typeof body.buckets === 'number' && body.buckets >= 1 && body.buckets <= 16 ? body.buckets : MAX_RETURN_DAYS / 7;
    return { fromMs: range.fromMs, toEndMs: range.toEndMs + buckets * unitDays * DAY_MS };
  } catch {
    return undefined;
  }
}

/**
 * Finished report and card answers of one API process, per project and query. An entry is keyed
 * by the project, the event store's engine, the report's type and stored query, the board's
 * override and the absolute days it read (so `7d` tomorrow is another entry), and is served while
 *
 * - the data versions of those days (versions.ts, shared by every process through the metadata
 *   store) are what they were before it ran, and the project's derived events, calculated
 *   metrics and annotations (which an answer is compiled from or carries) hash the same;
 * - and, when its days reach today (still being written), it is younger than the fresh bound:
 *   today's writes do not invalidate it, or a live project would never hit.
 *
 * It is reached only after the route has authorised the caller for the report's project.
 */
export class ResultsCache {
  private lru: SizedLru<Value>;
  private inflight = new Map<string, Promise<Entry<Value>>>();
  private metaOf = new Map<string, Promise<string>>();
  readonly versions: DataVersions;
  hits = 0;
  misses = 0;

  constructor(db: Db, readonly config: ResultsCacheConfig) {
    this.lru = new SizedLru<Value>(config.maxBytes);
    this.versions = new DataVersions(db);
  }

  get bytes(): number {
    return this.lru.bytes;
  }

  async run(deps: Deps, report: SavedReport, override: RunOverride, now: number, compute: () => Promise<Value>): Promise<CachedRun> {
    const span = this.config.maxBytes > 0 ? spanOf(deps, report, override, now) : undefined;
    if (!span) return compute();
    const key = sha(stable({ p: report.project_id, e: deps.events.dialect, t: report.type, q: report.query, o: normalOverride(override), span: [span.fromMs, span.toEndMs] }));
    const started = Date.now();
    const today = dayOf(started);
    const firstDay = dayOf(span.fromMs);
    const lastDay = dayOf(span.toEndMs - 1);
    const live = lastDay >= today;
    const [data, meta] = await Promise.all([
      this.versions.signature(report.project_id, firstDay, live ? today - 1 : lastDay),
      this.metadata(deps, report.project_id, now),
    ]);
    const signature = `${data}:${meta}`;
    const e = this.lru.get(key);
    if (e && e.signature === signature && (!e.live || started - e.at < this.config.freshMs)) {
      this.hits++;
      return { ...e.value, cached_at: e.at };
    }
    this.misses++;
    // Identical runs at once (one report on two cards, two people opening a board) compute once.
    const flight = `${key}:${signature}`;
    let pending = this.inflight.get(flight);
    if (!pending) {
      pending = compute().then((value) => {
        const entry: Entry<Value> = { value, signature, at: started, live, bytes: 2 * (JSON.stringify(value)?.length ?? 0) + key.length };
        this.lru.set(key, entry);
        return entry;
      });
      this.inflight.set(flight, pending);
      const forget = () => this.inflight.delete(flight);
      pending.then(forget, forget);
    }
    return (await pending).value;
  }

  /**
   * A hash of what an answer is compiled from or carries beside the events. Read once per
   * project and run (a board's cards share `now`), then dropped.
   */
  private metadata(deps: Deps, projectId: number, now: number): Promise<string> {
    const k = `${projectId}:${now}`;
    let m = this.metaOf.get(k);
    if (!m) {
      const { definitions, annotations } = analysesOf(deps);
      m = Promise.all([definitions.derivedEvents.list(projectId), definitions.metrics.list(projectId), annotations.list(projectId)])
        .then((parts) => sha(stable(parts)));
      this.metaOf.set(k, m);
      const forget = () => setTimeout(() => this.metaOf.delete(k), 1000).unref();
      m.then(forget, forget);
    }
    return m;
  }
}

const caches = new WeakMap<Db, ResultsCache>();

/** The process's results cache of a running service (one per metadata store, like analysesOf). */
export function resultsCacheOf(deps: Deps): ResultsCache {
  let c = caches.get(deps.db);
  if (!c) {
    c = new ResultsCache(deps.db, deps.config.resultsCache ?? RESULTS_CACHE_DEFAULTS);
    caches.set(deps.db, c);
  }
  return c;
}

/** runReport through the process's results cache (reports/run.ts). */
export function cachedReportRun(deps: Deps, report: SavedReport, override: RunOverride, now: number, compute: () => Promise<Value>): Promise<CachedRun> {
  return resultsCacheOf(deps).run(deps, report, override, now, compute);
}
