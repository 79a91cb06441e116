import type { Db } from '../ports/metadata/knex.js';
import { lockForUpdate } from '../ports/metadata/knex.js';
import type { FeatureFlag, FlagAction, FlagEvent } from './schema.js';
import { projectOrgId } from '../projects/store.js';

/** A `flags` row as the drivers return it (PostgreSQL bigints as strings, SQLite booleans as 0/1). */
interface FlagRow {
  id: number | string;
  project_id: number | string;
  key: string;
  name: string;
  description: string | null;
  active: boolean | number;
  type: FeatureFlag['type'];
  variants: string;
  rules: string;
  created_by: number | string | null;
  managed_by: string | null;
  archived_at: number | string | null;
  created_at: number | string;
  updated_at: number | string;
}

interface FlagEventRow {
  id: number | string;
  project_id: number | string;
  flag_id: number | string;
  actor_user_id: number | string | null;
  actor_mcp_token_id: number | string | null;
  actor_resource: string | null;
  action: FlagAction;
  before: string | null;
  after: string | null;
  created_at: number | string;
}

const num = (v: number | string | null) => (v === null ? null : Number(v));

/** Rows to the API's FeatureFlag, in one place. */
function toFlag(r: FlagRow): FeatureFlag {
  return {
    id: Number(r.id),
    project_id: Number(r.project_id),
    created_by: num(r.created_by),
    key: r.key,
    name: r.name,
    description: r.description,
    active: Boolean(r.active),
    type: r.type,
    variants: JSON.parse(r.variants),
    rules: JSON.parse(r.rules),
    managed_by: r.managed_by ?? null,
    archived_at: num(r.archived_at),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
  };
}

function toEvent(r: FlagEventRow): FlagEvent {
  return {
    id: Number(r.id),
    project_id: Number(r.project_id),
    flag_id: Number(r.flag_id),
    actor_user_id: num(r.actor_user_id),
    actor_mcp_token_id: num(r.actor_mcp_token_id),
    actor_resource: r.actor_resource ?? null,
    action: r.action,
    before: r.before === null ? null : (JSON.parse(r.before) as FeatureFlag),
    after: r.after === null ? null : (JSON.parse(r.after) as FeatureFlag),
    created_at: Number(r.created_at),
  };
}

/** The flag columns a write sets (everything but the id). */
const toColumns = (f: Omit<FeatureFlag, 'id'>) => ({
  project_id: f.project_id,
  key: f.key,
  name: f.name,
  description: f.description,
  active: f.active,
  type: f.type,
  variants: JSON.stringify(f.variants),
  rules: JSON.stringify(f.rules),
  created_by: f.created_by,
  managed_by: f.managed_by,
  archived_at: f.archived_at,
  created_at: f.created_at,
  updated_at: f.updated_at,
});

/** An audit row to write: who made the change (user, machine token or resource) and the snapshots. */
export interface NewFlagEvent {
  flag: FeatureFlag;
  action: FlagAction;
  actor: { userId: number | null; machineTokenId?: number | null; resource?: string | null };
  before: FeatureFlag | null;
  after: FeatureFlag | null;
  at: number;
}

export { isUniqueViolation } from '../ports/metadata/knex.js';

/**
 * Reads and writes of `flags` and `flag_events`. The rules (limits, keys, ownership, audit) are the
 * service's; every write here runs inside the transaction the service passes.
 */
export class FlagStore {
  constructor(private db: Db) {}

  transaction<T>(fn: (trx: Db) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  async list(projectId: number, opts: { includeArchived: boolean; managedBy?: string }): Promise<FeatureFlag[]> {
    const q = this.db<FlagRow>('flags').where({ project_id: projectId }).orderBy('id');
    if (!opts.includeArchived) q.whereNull('archived_at');
    if (opts.managedBy !== undefined) q.where({ managed_by: opts.managedBy });
    return (await q).map(toFlag);
  }

  /** The project's flags change number (migration 0014): moves with every write of one of its flags. */
  async revision(projectId: number): Promise<number> {
    const row = await this.db('flag_revisions').where({ project_id: projectId }).first('revision');
    return row ? Number(row.revision) : 0;
  }

  async get(id: number, trx: Db = this.db): Promise<FeatureFlag | undefined> {
    const row = await trx<FlagRow>('flags').where({ id }).first();
    return row ? toFlag(row) : undefined;
  }

  /** The flag, its row locked until the transaction ends. */
  async lock(trx: Db, id: number): Promise<FeatureFlag | undefined> {
    const row = await lockForUpdate(trx, trx<FlagRow>('flags').where({ id }).first());
    return row ? toFlag(row) : undefined;
  }

  /** Locks the project row (serialises creates in one project); its organisation, undefined when the project does not exist. */
  async lockProject(trx: Db, projectId: number): Promise<{ orgId: number | null } | undefined> {
    const row = await lockForUpdate(trx, trx('projects').where({ id: projectId }).first('id', 'org_id'));
    return row ? { orgId: num(row.org_id) } : undefined;
  }

  /** The organisation of a project (null: none, or no such project). */
  orgOf(trx: Db, projectId: number): Promise<number | null> {
    return projectOrgId(trx, projectId);
  }

  async keyTaken(trx: Db, projectId: number, key: string): Promise<boolean> {
    return Boolean(await trx('flags').where({ project_id: projectId, key }).first('id'));
  }

  async count(trx: Db, projectId: number): Promise<number> {
    const [{ n }] = await trx('flags').where({ project_id: projectId }).count({ n: '*' });
    return Number(n);
  }

  async insert(trx: Db, flag: Omit<FeatureFlag, 'id'>): Promise<FeatureFlag> {
    const [ret] = await trx('flags').insert(toColumns(flag)).returning('id');
    return { ...flag, id: Number(typeof ret === 'object' ? ret.id : ret) };
  }

  async save(trx: Db, flag: FeatureFlag): Promise<void> {
    const { id, ...rest } = flag;
    await trx('flags').where({ id }).update(toColumns(rest));
  }

  /** Deletes the flag and its audit rows. */
  async delete(trx: Db, id: number): Promise<void> {
    await trx('flag_events').where({ flag_id: id }).delete();
    await trx('flags').where({ id }).delete();
  }

  async events(flagId: number, limit: number): Promise<FlagEvent[]> {
    const rows = await this.db<FlagEventRow>('flag_events').where({ flag_id: flagId }).orderBy('id', 'desc').limit(limit);
    return rows.map(toEvent);
  }

  async audit(trx: Db, e: NewFlagEvent): Promise<void> {
    await trx('flag_events').insert({
      project_id: e.flag.project_id,
      flag_id: e.flag.id,
      actor_user_id: e.actor.userId,
      actor_mcp_token_id: e.actor.machineTokenId ?? null,
      actor_resource: e.actor.resource ?? null,
      action: e.action,
      before: e.before ? JSON.stringify(e.before) : null,
      after: e.after ? JSON.stringify(e.after) : null,
      created_at: e.at,
    });
  }
}
