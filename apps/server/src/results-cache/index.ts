import { createHash } from 'node:crypto';
import type { DateRange } from '../query/engine/range.js';
import { SizedLru, type Entry } from './lru.js';
import { DataVersions, dayOf } from './versions.js';
import { dayStart, keptParts, runWithPartials, type PartialPlan } from './partials.js';
import { SharedEntries } from './shared-store.js';
import { LayeredEntries } from './layered.js';
import { readsIdentities } from './identities.js';
import type { Db } from '../ports/metadata/knex.js';
import type { Logger } from '../http/errors.js';

export { DataVersions } from './versions.js';
export { withDataVersions } from './tracked-store.js';
export { SharedEntries } from './shared-store.js';
export type { PartialPlan } from './partials.js';

export interface ResultsCacheConfig {
  /** How long a result whose range reaches today is served (RESULTS_CACHE_FRESH_MS). */
  freshMs: number;
  /** Budget of the cached answers in this process (RESULTS_CACHE_MAX_MB); 0 turns the cache off. */
  maxBytes: number;
  /** RESULTS_CACHE: `shared` keeps answers and closed days' parts in the metadata store for every process too (shared-store.ts); `process` (default): memory only. */
  mode?: 'shared' | 'process';
  /** Budget of the shared table's answers (RESULTS_CACHE_SHARED_MAX_MB). */
  sharedMaxBytes?: number;
  /** RESULTS_CACHE_PARTIALS (default on): keep the parts of closed buckets of trends and compute only the others (partials.ts). */
  partials?: boolean;
}

export const RESULTS_CACHE_DEFAULTS: ResultsCacheConfig = { freshMs: 60_000, maxBytes: 128 * 1024 * 1024 };

/** The results cache as configured: this process's memory, in front of the shared table when `mode` is `shared`. */
export function openResultsCache(db: Db, config: ResultsCacheConfig, metadataOf: (projectId: number) => Promise<unknown>, log?: Logger): ResultsCache {
  const onError = (err: unknown) => log?.error('results cache: shared table failed', { err: String(err) });
  const shared = config.mode === 'shared' ? new SharedEntries(db, config.sharedMaxBytes ?? 512 * 1024 * 1024, onError) : undefined;
  return new ResultsCache(new DataVersions(db), config, metadataOf, shared, onError);
}

/** What names one answer: its project, the clock of the run (a board's cards share it) and everything else it depends on. */
export interface CacheKey {
  projectId: number;
  /** The run's clock: what is read beside the events (metadataOf) is read once per project and clock. */
  at: number;
  /** The engine, the query, overrides…: hashed in key order, so two spellings of one query share an entry. */
  parts: unknown;
}

/** An answer as computed, and when it was computed if it came from the cache. */
export type Cached<V> = V & { cached_at?: number };

/**
 * The results cache as the query executor sees it (query/executor.ts): `span` is the event
 * times the computation reads (undefined: not cacheable, e.g. a range that does not resolve; the
 * computation then runs and answers its error). ResultsCache implements it: this process's
 * memory, in front of the table every API process shares when RESULTS_CACHE=shared (shared-store.ts).
 */
export interface ResultsCachePort {
  run<V extends object>(key: CacheKey, span: DateRange | undefined, compute: () => Promise<V>, opts?: CacheRunOptions<V>): Promise<Cached<V>>;
}

/**
 * `refresh`: compute again whatever is cached (a person's forced Refresh), and store the new answer;
 * `onComputed`: told when a fresh answer was computed (the `cached_at` later hits of it carry);
 * `partial`: how the answer is cut per calendar bucket, so a miss computes only the buckets whose
 * stored part does not hold (partials.ts); without it (or with RESULTS_CACHE_PARTIALS=0) a miss
 * runs `compute`. A refresh reads no part (it recomputes every bucket) and stores the new ones.
 */
export interface CacheRunOptions<V = unknown> {
  refresh?: boolean;
  onComputed?: (at: number) => void;
  /** How old an answer whose days reach today may be served by this run (default RESULTS_CACHE_FRESH_MS; a board's cards: boards/run.ts boardFreshMs). */
  freshMs?: number;
  partial?: PartialPlan<V>;
}

/** JSON with object members in key order, so two spellings of one query share an entry. */
export function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v).sort().filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

export const sha = (s: string) => createHash('sha256').update(s).digest('base64url');

/**
 * Finished answers of one API process, per project and query. An entry is keyed by the project,
 * the key's parts and the absolute days it read (so `7d` tomorrow is another entry), and is
 * served while
 *
 * - the data versions of those days (versions.ts, shared by every process through the metadata
 *   store) are what they were before it ran, and `metadataOf(project)` (what an answer is
 *   compiled from or carries beside the events: derived events, calculated metrics,
 *   annotations) hashes the same;
 * - and, when its days reach today (still being written), it is younger than the fresh bound:
 *   today's writes do not invalidate it, or a live project would never hit.
 *
 * It is reached only after the route has authorised the caller for the key's project.
 *
 * With `shared` (RESULTS_CACHE=shared, shared-store.ts) this memory is the first level of a cache
 * every API process shares: a miss here reads the shared table, served under the same rules, and
 * every answer computed is written there too. A failure of the shared table only costs its hits.
 */
export class ResultsCache implements ResultsCachePort {
  private lru: SizedLru<object>;
  /** Memory in front of the shared table (layered.ts): answers and closed days' parts alike. */
  private entries: LayeredEntries;
  private inflight = new Map<string, Promise<Entry<object>>>();
  private metaOf = new Map<string, Promise<string>>();
  hits = 0;
  misses = 0;
  /** Of `hits`, those answered from the shared table (another process's or an evicted answer). */
  sharedHits = 0;
  /** Closed buckets served from their stored parts, and ranges computed, by runs with a partial plan. */
  partialsReused = 0;
  partialsComputed = 0;

  constructor(
    readonly versions: DataVersions,
    readonly config: ResultsCacheConfig,
    private metadataOf: (projectId: number) => Promise<unknown>,
    readonly shared?: SharedEntries,
    onSharedError: (err: unknown) => void = () => {},
  ) {
    this.lru = new SizedLru<object>(config.maxBytes);
    this.entries = new LayeredEntries(this.lru, shared, onSharedError);
  }

  get bytes(): number {
    return this.lru.bytes;
  }

  async run<V extends object>(key: CacheKey, span: DateRange | undefined, compute: () => Promise<V>, opts: CacheRunOptions<V> = {}): Promise<Cached<V>> {
    if (!span || this.config.maxBytes <= 0) return compute();
    const id = sha(stable({ p: key.projectId, k: key.parts, span: [span.fromMs, span.toEndMs] }));
    const started = Date.now();
    const today = dayOf(started);
    const firstDay = dayOf(span.fromMs);
    const lastDay = dayOf(span.toEndMs - 1);
    const live = lastDay >= today;
    const [data, meta] = await Promise.all([
      this.versions.signature(key.projectId, firstDay, live ? today - 1 : lastDay, readsIdentities(key.parts)),
      this.metadata(key.projectId, key.at),
    ]);
    const signature = `${data}:${meta}`;
    const servable = (e: Entry<object> | undefined): e is Entry<object> => !opts.refresh && !!e && e.signature === signature && (!e.live || started - e.at < (opts.freshMs ?? this.config.freshMs));
    const found = await this.entries.get(id, key.projectId, servable);
    if (found) {
      this.hits++;
      if (found.from === 'shared') this.sharedHits++;
      return { ...(found.entry.value as V), cached_at: found.entry.at };
    }
    this.misses++;
    // Identical runs at once (one report on two cards, two people opening a board) compute once.
    const flight = `${id}:${signature}`;
    let pending = opts.refresh ? undefined : this.inflight.get(flight);
    if (!pending) {
      const plan = this.config.partials === false ? undefined : opts.partial;
      const work = plan ? () => this.withPartials(key, plan, meta, !!opts.refresh, started) : compute;
      pending = work().then(async (value) => {
        const entry: Entry<object> = { value, signature, at: started, live, bytes: 2 * (JSON.stringify(value)?.length ?? 0) + id.length };
        // Written before answering, so the next request on any process finds it.
        await this.entries.set(id, key.projectId, entry);
        return entry;
      });
      this.inflight.set(flight, pending);
      const forget = () => this.inflight.delete(flight);
      pending.then(forget, forget);
    }
    const computed = await pending;
    opts.onComputed?.(computed.at);
    return computed.value as V;
  }

  /**
   * A miss with a partial plan: closed buckets (ended before today, by the run's clock and this
   * process's, whichever is earlier) from their stored parts while their days' data versions and
   * the metadata hash are unchanged; the others computed. Parts are kept where the answers are:
   * this process's memory, under the same budget, and with `shared` the shared table too, under
   * its bound and evicted with the answers, so another process reuses them (partials.ts keptParts).
   */
  private async withPartials<V extends object>(key: CacheKey, plan: PartialPlan<V>, meta: string, refresh: boolean, started: number): Promise<V> {
    const todayMs = Math.min(dayStart(key.at), dayStart(started));
    const idOf = (s: DateRange) => sha(stable({ partial: 1, p: key.projectId, k: plan.parts, u: plan.unit, s: [s.fromMs, s.toEndMs] }));
    // The project's identity changes (rows before day 0) count only for answers that may depend on identities, as for whole answers.
    const persons = readsIdentities(key.parts);
    const versions = async () => (await this.versions.rows(key.projectId, dayOf(plan.range.fromMs), dayOf(Math.min(plan.range.toEndMs, todayMs) - 1)))
      .filter((r) => persons || r.last_day >= 0);
    const kept = keptParts(this.entries, key.projectId);
    const out = await runWithPartials(kept, idOf, plan, todayMs, versions, meta, refresh, started);
    this.partialsReused += out.reused;
    this.partialsComputed += out.computed.length;
    return out.value;
  }

  /**
   * A hash of what an answer is compiled from or carries beside the events. Read once per
   * project and clock (a board's cards share theirs), then dropped.
   */
  private metadata(projectId: number, at: number): Promise<string> {
    const k = `${projectId}:${at}`;
    let m = this.metaOf.get(k);
    if (!m) {
      m = this.metadataOf(projectId).then((parts) => sha(stable(parts)));
      this.metaOf.set(k, m);
      const forget = () => setTimeout(() => this.metaOf.delete(k), 1000).unref();
      m.then(forget, forget);
    }
    return m;
  }
}
