import { createHash } from 'node:crypto';
import { toFlagDefinition } from '@tally-analytics/flag-evaluation';
import type { FeatureFlag } from './schema.js';
import { compileProject, type ProjectPlan } from './plan.js';

/** What the runtime endpoints need of a project's live flags, rebuilt at most once per TTL. */
export interface LiveFlags {
  byKey: Map<string, FeatureFlag>;
  list: FeatureFlag[];
  /** `{flags: FlagDefinition[]}` serialised once, and its strong ETag. */
  definitionsJson: string;
  etag: string;
  /** The flags compiled for `POST /flags/evaluate` (plan.ts). */
  plan: ProjectPlan;
  /** The project's flags change number read before `list` (when the cache has `revisionOf`). */
  revision?: number;
  loadedAt: number;
}

/**
 * The non-archived flags of each project for `/flags/evaluate` and `/flags/local-evaluation`,
 * served from memory for `ttlMs`. Writes through this process drop a project's entry at once
 * (`invalidate`); other API processes see them within the TTL. An entry past three quarters of
 * its TTL is reloaded in the background by the first request that finds it so (that request and
 * the next ones are still served the entry, younger than the TTL), so a project in steady use
 * never makes a request wait for the reload; requests that find the entry expired wait for it as before.
 * With `revisionOf` (the project's flags change number, one row) a reload first reads the number and
 * keeps the entry, only younger, when it has not moved: a project's flags are re-read and
 * re-serialised only after a write, not every TTL (that reload was most of what the flag
 * evaluation path allocated that outlived a young-generation GC).
 */
export class LiveFlagsCache {
  private live = new Map<number, LiveFlags>();
  /** Loads in flight, shared by the requests that find the entry expired at the same time. */
  private loading = new Map<number, { generation: number; promise: Promise<LiveFlags> }>();
  private generation = 0;
  private invalidatedAt = new Map<number, number>();

  /** Past this age a request starts a background reload (a quarter of the TTL left for it). */
  private refreshAfterMs: number;

  private load: (projectId: number) => Promise<FeatureFlag[]>;
  private ttlMs: number;
  private now: () => number;
  private revisionOf?: (projectId: number) => Promise<number>;

  constructor(opts: {
    /** The project's non-archived flags from the store. */
    load: (projectId: number) => Promise<FeatureFlag[]>;
    /** The project's flags change number (one row); without it every reload re-reads the flags. */
    revisionOf?: (projectId: number) => Promise<number>;
    ttlMs?: number;
    now?: () => number;
  }) {
    this.load = opts.load;
    this.revisionOf = opts.revisionOf;
    this.ttlMs = opts.ttlMs ?? 1000;
    this.now = opts.now ?? Date.now;
    this.refreshAfterMs = this.ttlMs * 0.75;
  }

  invalidate(projectId: number): void {
    this.live.delete(projectId);
    this.invalidatedAt.set(projectId, ++this.generation);
  }

  get(projectId: number): Promise<LiveFlags> | LiveFlags {
    const cached = this.live.get(projectId);
    if (cached) {
      const age = this.now() - cached.loadedAt;
      if (age < this.ttlMs) {
        if (age >= this.refreshAfterMs && !this.loading.has(projectId)) this.start(projectId).catch(() => undefined);
        return cached;
      }
    }
    // A load started before the last invalidation of this project may miss that write: not shared.
    const inflight = this.loading.get(projectId);
    if (inflight && (this.invalidatedAt.get(projectId) ?? 0) <= inflight.generation) return inflight.promise;
    return this.start(projectId);
  }

  private start(projectId: number): Promise<LiveFlags> {
    const generation = this.generation;
    const promise = this.reload(projectId, generation).finally(() => {
      if (this.loading.get(projectId)?.promise === promise) this.loading.delete(projectId);
    });
    this.loading.set(projectId, { generation, promise });
    return promise;
  }

  private async reload(projectId: number, generation: number): Promise<LiveFlags> {
    const now = this.now();
    const previous = this.live.get(projectId);
    const revision = this.revisionOf ? await this.revisionOf(projectId) : undefined;
    if (revision !== undefined && previous?.revision === revision && this.live.get(projectId) === previous) {
      previous.loadedAt = now;
      return previous;
    }
    const list = await this.load(projectId);
    const definitionsJson = JSON.stringify({ flags: list.map(toFlagDefinition) });
    const etag = `"${createHash('sha1').update(definitionsJson).digest('base64url')}"`;
    // the definitions hold all evaluation reads (key, active, variants, rules): same text, same plan
    const previousPlan = this.live.get(projectId)?.plan;
    const plan = previousPlan?.source === definitionsJson ? previousPlan : compileProject(list, definitionsJson);
    const entry: LiveFlags = { byKey: new Map(list.map((f) => [f.key, f])), list, definitionsJson, etag, plan, revision, loadedAt: now };
    // Only keep what was loaded if no write invalidated the project meanwhile.
    if ((this.invalidatedAt.get(projectId) ?? 0) <= generation) this.live.set(projectId, entry);
    return entry;
  }
}

/** `If-None-Match` holds the given strong ETag (or `*`). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((t) => {
    const v = t.trim();
    return v === '*' || v === etag || v === `W/${etag}`;
  });
}
