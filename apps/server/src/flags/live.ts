import { createHash } from 'node:crypto';
import { toFlagDefinition } from '../../../flag-evaluation/src/index.js';
import type { FeatureFlag } from './schema.js';

/** What the runtime endpoints need of a project's live flags, rebuilt at most once per TTL. */
export interface LiveFlags {
  byKey: Map<string, FeatureFlag>;
  list: FeatureFlag[];
  /** `{flags: FlagDefinition[]}` serialised once, and its strong ETag. */
  definitionsJson: string;
  etag: string;
  loadedAt: number;
}

/**
 * The non-archived flags of each project for `/flags/evaluate` and `/flags/local-evaluation`,
 * served from memory for `ttlMs`. Writes through this process drop a project's entry at once
 * (`invalidate`); other API processes see them within the TTL.
 */
export class LiveFlagsCache {
  private live = new Map<number, LiveFlags>();
  private generation = 0;
  private invalidatedAt = new Map<number, number>();

  constructor(private load: (projectId: number) => Promise<FeatureFlag[]>, private ttlMs = 1000) {}

  invalidate(projectId: number): void {
    this.live.delete(projectId);
    this.invalidatedAt.set(projectId, ++this.generation);
  }

  async get(projectId: number): Promise<LiveFlags> {
    const cached = this.live.get(projectId);
    const now = Date.now();
    if (cached && now - cached.loadedAt < this.ttlMs) return cached;
    const generation = this.generation;
    const list = await this.load(projectId);
    const definitionsJson = JSON.stringify({ flags: list.map(toFlagDefinition) });
    const etag = `"${createHash('sha1').update(definitionsJson).digest('base64url')}"`;
    const entry: LiveFlags = { byKey: new Map(list.map((f) => [f.key, f])), list, definitionsJson, etag, loadedAt: now };
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
