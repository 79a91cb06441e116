import { randomUUID } from 'node:crypto';
import type { Db } from '../ports/metadata/knex.js';
import { lockForUpdate, nowMs } from '../ports/metadata/knex.js';
import { isRowId } from '../http/columns.js';

export interface Project {
  id: number;
  org_id: number | null;
  name: string;
  token: string;
  created_at: number;
  flag_secret_hash: string | null;
  /** The Kubernetes resource (`<Kind>/<namespace>/<name>`) that owns the project, or null. */
  managed_by: string | null;
  /** Days of events kept (the retention job deletes older ones), or null: forever. */
  retention_days: number | null;
  /** Ingestion requests per 10 s of this project, or null: RATE_LIMIT_PER_PROJECT. */
  rate_limit: number | null;
}

/**
 * The organisation of a project inside a write's transaction (null: none, or no such project):
 * what the tenancy boundary checks before a project's flags or experiments change.
 */
export async function projectOrgId(trx: Db, projectId: number): Promise<number | null> {
  const row = await trx('projects').where({ id: projectId }).first('org_id');
  return row && row.org_id !== null && row.org_id !== undefined ? Number(row.org_id) : null;
}

/** What a create or patch may set besides the name. */
export interface ProjectLimits {
  retentionDays?: number | null;
  rateLimit?: { requestsPer10Seconds: number } | null;
}

/** The API's Project shape plus its organisation, owner and limits (no secret). */
export const publicProject = (p: Project) => ({
  id: p.id, org_id: p.org_id, name: p.name, token: p.token, created_at: p.created_at, managed_by: p.managed_by,
  retention_days: p.retention_days, rate_limit: p.rate_limit === null ? null : { requestsPer10Seconds: p.rate_limit },
});

/** The columns a ProjectLimits sets (absent members: unchanged). */
function limitColumns(l: ProjectLimits): Record<string, number | null> {
  const out: Record<string, number | null> = {};
  if (l.retentionDays !== undefined) out.retention_days = l.retentionDays;
  if (l.rateLimit !== undefined) out.rate_limit = l.rateLimit === null ? null : l.rateLimit.requestsPer10Seconds;
  return out;
}

interface ProjectRow {
  id: number | string;
  org_id: number | string | null;
  name: string;
  token: string;
  created_at: number | string;
  flag_secret_hash: string | null;
  managed_by: string | null;
  retention_days: number | string | null;
  rate_limit: number | string | null;
}

const COLUMNS = ['id', 'org_id', 'name', 'token', 'created_at', 'flag_secret_hash', 'managed_by', 'retention_days', 'rate_limit'];

function toProject(r: ProjectRow): Project {
  return {
    id: Number(r.id),
    org_id: r.org_id === null ? null : Number(r.org_id),
    name: r.name,
    token: r.token,
    created_at: Number(r.created_at),
    flag_secret_hash: r.flag_secret_hash ?? null,
    managed_by: r.managed_by ?? null,
    retention_days: r.retention_days === null || r.retention_days === undefined ? null : Number(r.retention_days),
    rate_limit: r.rate_limit === null || r.rate_limit === undefined ? null : Number(r.rate_limit),
  };
}

/** How long ingestion trusts a token lookup (byTokenCached). */
const TOKEN_CACHE_MS = 1000;

export class ProjectStore {
  constructor(private db: Db) {}

  async create(input: { orgId: number | null; name: string; managedBy?: string | null } & ProjectLimits, trx: Db = this.db): Promise<Project> {
    const row = {
      org_id: input.orgId, name: input.name, token: randomUUID(), flag_secret_hash: null, created_at: nowMs(), managed_by: input.managedBy ?? null,
      retention_days: null, rate_limit: null, ...limitColumns(input),
    };
    const [{ id }] = await trx('projects').insert(row).returning('id');
    return toProject({ id, ...row });
  }

  /** Renames and/or sets the limits (absent members unchanged); the token cache forgets, so ingestion sees a new limit at once here. */
  async update(id: number, patch: { name?: string } & ProjectLimits, trx: Db = this.db): Promise<Project | undefined> {
    const update: Record<string, unknown> = limitColumns(patch);
    if (patch.name !== undefined) update.name = patch.name;
    if (Object.keys(update).length) await trx('projects').where({ id }).update(update);
    this.forgetTokens();
    const row: ProjectRow | undefined = await trx('projects').where({ id }).first(COLUMNS);
    return row && toProject(row);
  }

  /** The project's row, locked until the transaction ends (PostgreSQL `FOR UPDATE`; SQLite runs one writer at a time). */
  async lock(trx: Db, id: number): Promise<Project | undefined> {
    if (!isRowId(id)) return undefined;
    const row: ProjectRow | undefined = await lockForUpdate(trx, trx('projects').where({ id }).first(COLUMNS));
    return row && toProject(row);
  }

  /** Projects with a retention, for the retention job. */
  async withRetention(): Promise<Array<{ id: number; retentionDays: number }>> {
    const rows: ProjectRow[] = await this.db('projects').whereNotNull('retention_days').orderBy('id').select(COLUMNS);
    return rows.map(toProject).map((p) => ({ id: p.id, retentionDays: p.retention_days! }));
  }

  private async one(where: Record<string, unknown>): Promise<Project | undefined> {
    const row: ProjectRow | undefined = await this.db('projects').where(where).first(COLUMNS);
    return row && toProject(row);
  }

  /** The project of `id`; past what an id column holds (a projectId from a query or body), none. */
  async get(id: number): Promise<Project | undefined> {
    return isRowId(id) ? this.one({ id }) : undefined;
  }

  /**
   * Projects of one organisation, or of the whole installation when orgId is null (superadmin);
   * with `managedBy`, only those that resource owns.
   */
  async list(orgId: number | null, opts: { managedBy?: string } = {}): Promise<Project[]> {
    const q = this.db('projects').select(COLUMNS).orderBy('id');
    if (orgId !== null) q.where({ org_id: orgId });
    if (opts.managedBy !== undefined) q.where({ managed_by: opts.managedBy });
    return ((await q) as ProjectRow[]).map(toProject);
  }

  /** Oldest project of an organisation, or of the installation (the legacy default project). */
  async oldest(orgId: number | null): Promise<Project | undefined> {
    const q = this.db('projects').orderBy('id').first(COLUMNS);
    const row: ProjectRow | undefined = await (orgId === null ? q : q.where({ org_id: orgId }));
    return row && toProject(row);
  }

  byToken(token: string): Promise<Project | undefined> {
    return this.one({ token });
  }

  /** Found projects by token, for ingestion and flags (one metadata query per request was measurable). */
  private tokenCache = new Map<string, { project: Project; until: number }>();
  /** Lookups in flight, shared by every request for the same token (one read, not one per request). */
  private tokenReads = new Map<string, Promise<Project | undefined>>();
  /** Bumped when the cache is cleared by a deletion, so reads started before it do not refill it. */
  private tokenGeneration = 0;

  /**
   * byToken, remembered for TOKEN_CACHE_MS. Past that, the remembered project still answers for
   * one more TOKEN_CACHE_MS while a single background read refreshes it, so a busy token never
   * makes requests wait on the store. A project deleted through this store is forgotten at once;
   * in other processes (or deleted by other means) its token is accepted at most 2 × TOKEN_CACHE_MS.
   * Unknown tokens are not remembered (concurrent lookups of one still share a read).
   */
  async byTokenCached(token: string): Promise<Project | undefined> {
    const now = Date.now();
    const hit = this.tokenCache.get(token);
    if (hit && hit.until > now) return hit.project;
    const read = this.readToken(token);
    if (hit && hit.until + TOKEN_CACHE_MS > now) {
      read.catch(() => undefined);
      return hit.project;
    }
    return read;
  }

  private readToken(token: string): Promise<Project | undefined> {
    const inFlight = this.tokenReads.get(token);
    if (inFlight) return inFlight;
    const generation = this.tokenGeneration;
    const read = this.byToken(token).then((project) => {
      // A deletion while the read was in flight wins: the read may predate it.
      if (generation !== this.tokenGeneration) return project;
      if (this.tokenCache.size >= 10_000) this.tokenCache.clear();
      if (project) this.tokenCache.set(token, { project, until: Date.now() + TOKEN_CACHE_MS });
      else this.tokenCache.delete(token);
      return project;
    }).finally(() => {
      // A deletion meanwhile may have let a newer read take this token's place: leave that one.
      if (this.tokenReads.get(token) === read) this.tokenReads.delete(token);
    });
    this.tokenReads.set(token, read);
    return read;
  }

  byFlagSecretHash(hash: string): Promise<Project | undefined> {
    return this.one({ flag_secret_hash: hash });
  }

  /** Sets or clears the owning resource (release: the resource lets go, the project stays). */
  async setManagedBy(id: number, managedBy: string | null, trx: Db = this.db): Promise<void> {
    await trx('projects').where({ id }).update({ managed_by: managedBy });
  }

  async setFlagSecretHash(id: number, hash: string | null): Promise<void> {
    await this.db('projects').where({ id }).update({ flag_secret_hash: hash });
  }

  async rename(id: number, name: string): Promise<void> {
    await this.db('projects').where({ id }).update({ name });
    this.forgetTokens();
  }

  async delete(id: number, trx: Db = this.db): Promise<void> {
    await trx('projects').where({ id }).delete();
    this.forgetTokens();
  }

  /** Forgets every remembered token lookup (after a change commits, so no read in between refills it with the old row). */
  forgetTokens(): void {
    this.tokenGeneration++;
    this.tokenCache.clear();
    this.tokenReads.clear();
  }
}
