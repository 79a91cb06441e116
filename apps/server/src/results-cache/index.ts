import { createHash } from 'node:crypto';
import type { DateRange } from '../query/range.js';
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
 * computation then runs and answers its error). This process's memory now (ResultsCache); a
 * cache shared by every API process implements the same.
 */
export interface ResultsCachePort {
  run<V extends object>(key: CacheKey, span: DateRange | undefined, compute: () => Promise<V>): Promise<Cached<V>>;
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
 */
export class ResultsCache implements ResultsCachePort {
  private lru: SizedLru<object>;
  private inflight = new Map<string, Promise<Entry<object>>>();
  private metaOf = new Map<string, Promise<string>>();
  hits = 0;
  misses = 0;

  constructor(readonly versions: DataVersions, readonly config: ResultsCacheConfig, private metadataOf: (projectId: number) => Promise<unknown>) {
    this.lru = new SizedLru<object>(config.maxBytes);
  }

  get bytes(): number {
    return this.lru.bytes;
  }

  async run<V extends object>(key: CacheKey, span: DateRange | undefined, compute: () => Promise<V>): Promise<Cached<V>> {
    if (!span || this.config.maxBytes <= 0) return compute();
    const id = sha(stable({ p: key.projectId, k: key.parts, span: [span.fromMs, span.toEndMs] }));
    const started = Date.now();
    const today = dayOf(started);
    const firstDay = dayOf(span.fromMs);
    const lastDay = dayOf(span.toEndMs - 1);
    const live = lastDay >= today;
    const [data, meta] = await Promise.all([
      this.versions.signature(key.projectId, firstDay, live ? today - 1 : lastDay),
      this.metadata(key.projectId, key.at),
    ]);
    const signature = `${data}:${meta}`;
    const e = this.lru.get(id);
    if (e && e.signature === signature && (!e.live || started - e.at < this.config.freshMs)) {
      this.hits++;
      return { ...(e.value as V), cached_at: e.at };
    }
    this.misses++;
    // Identical runs at once (one report on two cards, two people opening a board) compute once.
    const flight = `${id}:${signature}`;
    let pending = this.inflight.get(flight);
    if (!pending) {
      pending = compute().then((value) => {
        const entry: Entry<object> = { value, signature, at: started, live, bytes: 2 * (JSON.stringify(value)?.length ?? 0) + id.length };
        this.lru.set(id, entry);
        return entry;
      });
      this.inflight.set(flight, pending);
      const forget = () => this.inflight.delete(flight);
      pending.then(forget, forget);
    }
    return (await pending).value as V;
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
