import { randomUUID } from 'node:crypto';
import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';

export interface Project {
  id: number;
  org_id: number | null;
  name: string;
  token: string;
  created_at: number;
  flag_secret_hash: string | null;
}

/** The spec's Project shape (no org, no secret). */
export const publicProject = (p: Project) => ({ id: p.id, name: p.name, token: p.token, created_at: p.created_at });

/** How long ingestion trusts a token lookup (byTokenCached). */
const TOKEN_CACHE_MS = 1000;

export class ProjectStore {
  constructor(private db: Db) {}

  async create(input: { orgId: number | null; name: string }, trx: Db = this.db): Promise<Project> {
    const row = { org_id: input.orgId, name: input.name, token: randomUUID(), flag_secret_hash: null, created_at: nowMs() };
    const [{ id }] = await trx('projects').insert(row).returning('id');
    return { id, ...row };
  }

  async get(id: number): Promise<Project | undefined> {
    return this.db('projects').where({ id }).first();
  }

  /** Projects of one organisation, or of the whole installation when orgId is null (superadmin). */
  async list(orgId: number | null): Promise<Project[]> {
    const q = this.db('projects').select('*').orderBy('id');
    return orgId === null ? q : q.where({ org_id: orgId });
  }

  /** Oldest project of an organisation, or of the installation (the legacy default project). */
  async oldest(orgId: number | null): Promise<Project | undefined> {
    const q = this.db('projects').orderBy('id').first();
    return orgId === null ? q : q.where({ org_id: orgId });
  }

  async byToken(token: string): Promise<Project | undefined> {
    return this.db('projects').where({ token }).first();
  }

  /** Found projects by token, for ingestion (one metadata query per request was measurable). */
  private tokenCache = new Map<string, { project: Project; until: number }>();

  /**
   * byToken, remembered for TOKEN_CACHE_MS. A project deleted through this store is forgotten at
   * once; in other processes (or deleted by other means) its token is accepted at most that long.
   * Unknown tokens are not remembered.
   */
  async byTokenCached(token: string): Promise<Project | undefined> {
    const now = Date.now();
    const hit = this.tokenCache.get(token);
    if (hit && hit.until > now) return hit.project;
    const project = await this.byToken(token);
    if (this.tokenCache.size >= 10_000) this.tokenCache.clear();
    if (project) this.tokenCache.set(token, { project, until: now + TOKEN_CACHE_MS });
    else this.tokenCache.delete(token);
    return project;
  }

  async byFlagSecretHash(hash: string): Promise<Project | undefined> {
    return this.db('projects').where({ flag_secret_hash: hash }).first();
  }

  async setFlagSecretHash(id: number, hash: string | null): Promise<void> {
    await this.db('projects').where({ id }).update({ flag_secret_hash: hash });
  }

  async rename(id: number, name: string): Promise<void> {
    await this.db('projects').where({ id }).update({ name });
    this.tokenCache.clear();
  }

  async delete(id: number): Promise<void> {
    await this.db('projects').where({ id }).delete();
    this.tokenCache.clear();
  }
}
