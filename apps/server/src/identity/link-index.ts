import type { Db } from '../ports/metadata/knex.js';
import { IdentityStore } from './store.js';

/**
 * The linked ids of the projects this process evaluates flags for, in memory
 * (distinct_id -> canonical_id), so that resolving an id on the remote flag evaluator's hot path
 * is a Map lookup: an unlinked id (the common case) is a miss and costs no store read.
 *
 * - A project is loaded on its first use (one read of its links) and followed from then on: every
 *   `pollMs` one primary-key read of its `identity_link_seq` row; only when that moved, the links
 *   with a higher change number (inserts and re-pointed links, migration 0012); when its `epoch`
 *   moved (links were deleted), a full reload. So a link written by another process (the
 *   JetStream worker) is seen within `pollMs` plus one poll's duration.
 * - Links written through this process (`linkIdentities`: /alias, $identify and
 *   $device_id/$user_id in embedded mode) are applied here when their transaction commits
 *   (`applied`), so the next evaluation sees them; deletions through this process drop the
 *   project (`forget`), which the next request reloads.
 * - Memory is bounded per project: past `maxLinks` links the project's map is dropped and its ids
 *   are resolved by one indexed read per request (the store), as before the index existed. A
 *   project unused for `idleMs` is dropped and no longer polled.
 */
export interface LinkIndexOptions {
  pollMs?: number;
  maxLinks?: number;
  idleMs?: number;
}

interface ProjectLinks {
  /** null while loading, and for a project past the bound (then `overBound`). */
  map: Map<string, string> | null;
  overBound: boolean;
  loading: Promise<void> | null;
  /** The highest change number applied; every lower one is applied too. */
  seq: number;
  epoch: number;
  polling: boolean;
  /** Links applied by this process while a read was in flight: re-applied after it (the read may predate them). */
  replay: Array<[string, string]> | null;
  usedAt: number;
}

const DEFAULTS = { pollMs: 1000, maxLinks: 100_000, idleMs: 10 * 60_000 };

export class LinkIndex {
  private projects = new Map<number, ProjectLinks>();
  private timer: NodeJS.Timeout | undefined;
  private store: IdentityStore;
  readonly pollMs: number;
  readonly maxLinks: number;
  private idleMs: number;

  constructor(private db: Db, opts: LinkIndexOptions = {}) {
    this.store = new IdentityStore(db);
    this.pollMs = opts.pollMs ?? DEFAULTS.pollMs;
    this.maxLinks = opts.maxLinks ?? DEFAULTS.maxLinks;
    this.idleMs = opts.idleMs ?? DEFAULTS.idleMs;
  }

  /**
   * The canonical id of `distinctId` (itself when unlinked): synchronous once the project is
   * loaded, a promise for its first use and for projects past the bound.
   */
  canonicalOf(projectId: number, distinctId: string): string | Promise<string> {
    const p = this.projects.get(projectId);
    if (p && p.map) {
      p.usedAt = Date.now();
      return p.map.get(distinctId) ?? distinctId;
    }
    return this.slowCanonicalOf(projectId, distinctId);
  }

  private async slowCanonicalOf(projectId: number, distinctId: string): Promise<string> {
    let p = this.projects.get(projectId);
    if (!p) {
      p = { map: null, overBound: false, loading: null, seq: 0, epoch: 0, polling: false, replay: null, usedAt: Date.now() };
      this.projects.set(projectId, p);
      p.loading = this.load(projectId, p);
      this.startTimer();
    }
    p.usedAt = Date.now();
    if (p.loading) await p.loading;
    if (p.map) return p.map.get(distinctId) ?? distinctId;
    return this.store.canonicalOf(projectId, distinctId);
  }

  /** Links committed by this process (distinct_id -> canonical_id): visible to the next lookup. */
  applied(projectId: number, links: ReadonlyArray<{ distinct_id: string; canonical_id: string }>): void {
    const p = this.projects.get(projectId);
    if (!p || links.length === 0) return;
    if (p.loading || p.polling) {
      p.replay ??= [];
      for (const l of links) p.replay.push([l.distinct_id, l.canonical_id]);
    }
    if (p.map) {
      for (const l of links) p.map.set(l.distinct_id, l.canonical_id);
      this.checkBound(p);
    }
  }

  /** Links of the project were deleted through this process: the next lookup reloads them. */
  forget(projectId: number): void {
    this.projects.delete(projectId);
  }

  /** Stops polling (the service is closing). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.projects.clear();
  }

  /** What the index holds, for tests and /metrics-style introspection. */
  stats(projectId: number): { loaded: boolean; links: number; overBound: boolean; seq: number } | undefined {
    const p = this.projects.get(projectId);
    return p && { loaded: p.map !== null || p.overBound, links: p.map?.size ?? 0, overBound: p.overBound, seq: p.seq };
  }

  private async counter(projectId: number): Promise<{ seq: number; epoch: number }> {
    const row = await this.db('identity_link_seq').where({ project_id: projectId }).first('seq', 'epoch');
    return { seq: Number(row?.seq ?? 0), epoch: Number(row?.epoch ?? 0) };
  }

  private async load(projectId: number, p: ProjectLinks): Promise<void> {
    try {
      // The counter first: every change up to it is visible to the read that follows.
      const { seq, epoch } = await this.counter(projectId);
      const rows: Array<{ distinct_id: string; canonical_id: string; seq: number | string }> = await this.db('identity_links')
        .where({ project_id: projectId }).select('distinct_id', 'canonical_id', 'seq').limit(this.maxLinks + 1);
      if (rows.length > this.maxLinks) {
        p.map = null;
        p.overBound = true;
      } else {
        const map = new Map<string, string>();
        let top = seq;
        for (const r of rows) {
          map.set(r.distinct_id, r.canonical_id);
          const s = Number(r.seq);
          if (s > top) top = s;
        }
        p.map = map;
        p.seq = top;
        p.epoch = epoch;
        this.flushReplay(p);
      }
    } catch (err) {
      // Not kept: the next lookup tries again.
      if (this.projects.get(projectId) === p) this.projects.delete(projectId);
      throw err;
    } finally {
      p.loading = null;
      p.replay = null;
    }
  }

  private async poll(projectId: number, p: ProjectLinks): Promise<void> {
    p.polling = true;
    try {
      const { seq, epoch } = await this.counter(projectId);
      if (epoch !== p.epoch) {
        // Links were deleted: start over (the current map serves until the reload is done).
        const fresh: ProjectLinks = { ...p, loading: null, polling: false, replay: null };
        fresh.loading = this.load(projectId, fresh);
        await fresh.loading;
        if (this.projects.get(projectId) === p) {
          this.projects.set(projectId, fresh);
          if (p.replay && fresh.map) for (const [id, canonical] of p.replay) fresh.map.set(id, canonical);
        }
        return;
      }
      if (seq <= p.seq || !p.map) return;
      const rows: Array<{ distinct_id: string; canonical_id: string; seq: number | string }> = await this.db('identity_links')
        .where({ project_id: projectId }).andWhere('seq', '>', p.seq).orderBy('seq').select('distinct_id', 'canonical_id', 'seq')
        .limit(this.maxLinks + 1);
      if (!p.map) return;
      let top = seq;
      for (const r of rows) {
        p.map.set(r.distinct_id, r.canonical_id);
        const s = Number(r.seq);
        if (s > top) top = s;
      }
      p.seq = top;
      this.flushReplay(p);
      this.checkBound(p);
    } finally {
      p.polling = false;
      p.replay = null;
    }
  }

  private flushReplay(p: ProjectLinks) {
    if (p.replay && p.map) for (const [id, canonical] of p.replay) p.map.set(id, canonical);
  }

  private checkBound(p: ProjectLinks) {
    if (p.map && p.map.size > this.maxLinks) {
      p.map = null;
      p.overBound = true;
    }
  }

  private startTimer() {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.pollMs);
    this.timer.unref();
  }

  private tick() {
    const now = Date.now();
    for (const [projectId, p] of this.projects) {
      if (now - p.usedAt > this.idleMs) {
        this.projects.delete(projectId);
        continue;
      }
      if (p.loading || p.polling || !p.map) continue;
      this.poll(projectId, p).catch(() => undefined); // a failed poll is retried on the next tick
    }
    if (this.projects.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

