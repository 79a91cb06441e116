import { createHash } from 'node:crypto';
import type { Db } from '../ports/metadata/knex.js';
import { isPostgres, nowMs } from '../ports/metadata/knex.js';
import { conflict, badRequest, notFound } from '../http/errors.js';
import { LIMITS } from '../limits.js';
import { toFlagDefinition } from '../../../flag-evaluation/src/index.js';
import {
  flagConsistencyError,
  type FeatureFlag,
  type FlagAction,
  type FlagRule,
  type FlagVariant,
} from './schema.js';

interface FlagRow {
  id: number;
  project_id: number;
  key: string;
  name: string;
  description: string | null;
  active: boolean | number;
  type: FeatureFlag['type'];
  variants: string;
  rules: string;
  created_by: number | null;
  archived_at: number | string | null;
  created_at: number | string;
  updated_at: number | string;
}

interface FlagEventRow {
  id: number;
  project_id: number;
  flag_id: number;
  actor_user_id: number | null;
  actor_mcp_token_id: number | null;
  action: FlagAction;
  before: string | null;
  after: string | null;
  created_at: number | string;
}

/** Rows to the spec's FeatureFlag, in one place (SQLite gives 0/1 booleans). */
function toFlag(r: FlagRow): FeatureFlag {
  return {
    id: Number(r.id),
    project_id: Number(r.project_id),
    created_by: r.created_by === null ? null : Number(r.created_by),
    key: r.key,
    name: r.name,
    description: r.description,
    active: Boolean(r.active),
    type: r.type,
    variants: JSON.parse(r.variants),
    rules: JSON.parse(r.rules),
    archived_at: r.archived_at === null ? null : Number(r.archived_at),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  };
}

function toEvent(r: FlagEventRow) {
  return {
    id: Number(r.id),
    project_id: Number(r.project_id),
    flag_id: Number(r.flag_id),
    actor_user_id: r.actor_user_id === null ? null : Number(r.actor_user_id),
    actor_mcp_token_id: r.actor_mcp_token_id === null ? null : Number(r.actor_mcp_token_id),
    action: r.action,
    before: r.before === null ? null : (JSON.parse(r.before) as FeatureFlag),
    after: r.after === null ? null : (JSON.parse(r.after) as FeatureFlag),
    created_at: Number(r.created_at),
  };
}

export interface Actor {
  userId: number | null;
  mcpTokenId?: number | null;
}

export interface NewFlag {
  key: string;
  name: string;
  description: string | null;
  active: boolean;
  type: FeatureFlag['type'];
  variants: FlagVariant[];
  rules: FlagRule[];
}

export type FlagChanges = Partial<Omit<NewFlag, 'key'>>;

/** What the runtime endpoints need of a project's live flags, rebuilt at most once per TTL. */
export interface LiveFlags {
  byKey: Map<string, FeatureFlag>;
  list: FeatureFlag[];
  /** `{flags: FlagDefinition[]}` serialised once, and its strong ETag. */
  definitionsJson: string;
  etag: string;
  loadedAt: number;
}

const isUniqueViolation = (err: unknown) => {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || /UNIQUE constraint failed/.test(e?.message ?? '');
};

/**
 * Flags and their audit rows. Every write and its audit row share one transaction. Creates lock
 * the project row (PostgreSQL `FOR UPDATE`; SQLite has one writer) so the key check and the
 * 100-flag limit cannot both pass for two concurrent requests; the unique (project_id, key) index
 * is the last line.
 */
export class FlagStore {
  private live = new Map<number, LiveFlags>();
  private generation = 0;
  private invalidatedAt = new Map<number, number>();

  /**
   * @param liveTtlMs how long runtime endpoints may serve a project's flags from memory. Writes
   * through this store drop the entry at once; other API processes see them within the TTL.
   */
  constructor(private db: Db, private liveTtlMs = 1000) {}

  /** Drops a project's cached live flags (every write through this store calls it). */
  invalidate(projectId: number): void {
    this.live.delete(projectId);
    this.invalidatedAt.set(projectId, ++this.generation);
  }

  private lockable<T extends { forUpdate(): T }>(q: T): T {
    return isPostgres(this.db) ? q.forUpdate() : q;
  }

  async list(projectId: number, includeArchived: boolean): Promise<FeatureFlag[]> {
    const q = this.db<FlagRow>('flags').where({ project_id: projectId }).orderBy('id');
    if (!includeArchived) q.whereNull('archived_at');
    return (await q).map(toFlag);
  }

  async get(id: number): Promise<FeatureFlag | undefined> {
    const row = await this.db<FlagRow>('flags').where({ id }).first();
    return row ? toFlag(row) : undefined;
  }

  async events(flagId: number, limit: number) {
    const rows = await this.db<FlagEventRow>('flag_events').where({ flag_id: flagId }).orderBy('id', 'desc').limit(limit);
    return rows.map(toEvent);
  }

  private async audit(trx: Db, flag: FeatureFlag, action: FlagAction, actor: Actor, before: FeatureFlag | null, after: FeatureFlag | null, at: number) {
    await trx('flag_events').insert({
      project_id: flag.project_id,
      flag_id: flag.id,
      actor_user_id: actor.userId,
      actor_mcp_token_id: actor.mcpTokenId ?? null,
      action,
      before: before ? JSON.stringify(before) : null,
      after: after ? JSON.stringify(after) : null,
      created_at: at,
    });
  }

  async create(projectId: number, input: NewFlag, actor: Actor): Promise<FeatureFlag> {
    try {
      const flag = await this.db.transaction(async (trx) => {
        const project = await this.lockable(trx('projects').where({ id: projectId }).first('id'));
        if (!project) throw notFound('project');
        const taken = await trx('flags').where({ project_id: projectId, key: input.key }).first('id');
        if (taken) throw conflict('key taken', { message: `a flag with key "${input.key}" already exists in this project` });
        const [{ n }] = await trx('flags').where({ project_id: projectId }).count({ n: '*' });
        if (Number(n) >= LIMITS.flagsPerProject) {
          throw conflict('flag limit reached', { message: `a project holds at most ${LIMITS.flagsPerProject} flags (archived ones count); delete archived flags first` });
        }
        const at = nowMs();
        const row = {
          project_id: projectId,
          key: input.key,
          name: input.name,
          description: input.description,
          active: input.active,
          type: input.type,
          variants: JSON.stringify(input.variants),
          rules: JSON.stringify(input.rules),
          created_by: actor.userId,
          archived_at: null,
          created_at: at,
          updated_at: at,
        };
        const [ret] = await trx('flags').insert(row).returning('id');
        const id = typeof ret === 'object' ? ret.id : ret;
        const created = toFlag({ id, ...row } as FlagRow);
        await this.audit(trx, created, 'created', actor, null, created, at);
        return created;
      });
      this.invalidate(projectId);
      return flag;
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('key taken', { message: `a flag with key "${input.key}" already exists in this project` });
      throw err;
    }
  }

  /**
   * Applies a partial update after re-checking the merged flag (new variants against the kept
   * rules and the other way round), and writes `activated`/`deactivated` when `active` flips,
   * `updated` otherwise, all in one transaction.
   */
  async update(id: number, changes: FlagChanges, actor: Actor): Promise<FeatureFlag> {
    const flag = await this.db.transaction(async (trx) => {
      const row = await this.lockable(trx<FlagRow>('flags').where({ id }).first());
      if (!row) throw notFound('flag');
      const before = toFlag(row);
      const merged: FeatureFlag = { ...before };
      for (const k of ['name', 'description', 'active', 'type', 'variants', 'rules'] as const) {
        if (changes[k] !== undefined) (merged as Record<string, unknown>)[k] = changes[k];
      }
      const problem = flagConsistencyError(merged);
      if (problem) throw badRequest(problem);
      merged.updated_at = Math.max(nowMs(), before.updated_at);
      await trx('flags').where({ id }).update({
        name: merged.name,
        description: merged.description,
        active: merged.active,
        type: merged.type,
        variants: JSON.stringify(merged.variants),
        rules: JSON.stringify(merged.rules),
        updated_at: merged.updated_at,
      });
      const action: FlagAction = merged.active === before.active ? 'updated' : merged.active ? 'activated' : 'deactivated';
      await this.audit(trx, merged, action, actor, before, merged, merged.updated_at);
      return merged;
    });
    this.invalidate(flag.project_id);
    return flag;
  }

  /** Sets or clears `archived_at`; a flag already in the wanted state is returned with no event. */
  async setArchived(id: number, archived: boolean, actor: Actor): Promise<FeatureFlag> {
    const flag = await this.db.transaction(async (trx) => {
      const row = await this.lockable(trx<FlagRow>('flags').where({ id }).first());
      if (!row) throw notFound('flag');
      const before = toFlag(row);
      if ((before.archived_at !== null) === archived) return before;
      const at = Math.max(nowMs(), before.updated_at);
      const after: FeatureFlag = { ...before, archived_at: archived ? at : null, updated_at: at };
      await trx('flags').where({ id }).update({ archived_at: after.archived_at, updated_at: at });
      await this.audit(trx, after, archived ? 'archived' : 'revived', actor, before, after, at);
      return after;
    });
    this.invalidate(flag.project_id);
    return flag;
  }

  /** Deletes an archived flag with its audit rows; `409 not archived` otherwise. */
  async delete(id: number): Promise<void> {
    const projectId = await this.db.transaction(async (trx) => {
      const row = await this.lockable(trx<FlagRow>('flags').where({ id }).first());
      if (!row) throw notFound('flag');
      if (row.archived_at === null) throw conflict('not archived', { message: 'archive the flag before deleting it' });
      await trx('flag_events').where({ flag_id: id }).delete();
      await trx('flags').where({ id }).delete();
      return Number(row.project_id);
    });
    this.invalidate(projectId);
  }

  /** The project's non-archived flags for the runtime endpoints (memory, refreshed per TTL). */
  async liveFlags(projectId: number): Promise<LiveFlags> {
    const cached = this.live.get(projectId);
    const now = Date.now();
    if (cached && now - cached.loadedAt < this.liveTtlMs) return cached;
    const generation = this.generation;
    const list = await this.list(projectId, false);
    const definitionsJson = JSON.stringify({ flags: list.map(toFlagDefinition) });
    const etag = `"${createHash('sha1').update(definitionsJson).digest('base64url')}"`;
    const entry: LiveFlags = { byKey: new Map(list.map((f) => [f.key, f])), list, definitionsJson, etag, loadedAt: now };
    // Only keep what was loaded if no write invalidated the project meanwhile.
    if ((this.invalidatedAt.get(projectId) ?? 0) <= generation) this.live.set(projectId, entry);
    return entry;
  }
}
