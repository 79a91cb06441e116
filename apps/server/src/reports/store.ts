import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import { isRowId } from '../http/columns.js';
import type { ReportType } from './schema.js';

export interface SavedReport {
  id: number;
  project_id: number;
  created_by: number | null;
  name: string;
  description: string | null;
  type: ReportType;
  query: Record<string, unknown>;
  created_at: number;
  updated_at: number;
}

export function toReport(r: Record<string, unknown>): SavedReport {
  return {
    id: Number(r.id), project_id: Number(r.project_id), created_by: r.created_by == null ? null : Number(r.created_by),
    name: String(r.name), description: (r.description as string | null) ?? null, type: r.type as ReportType,
    query: JSON.parse(String(r.query)), created_at: Number(r.created_at), updated_at: Number(r.updated_at),
  };
}

/** Saved reports; the query is kept as the JSON text it arrived as (minus `projectId`). */
export class ReportStore {
  constructor(private db: Db) {}

  async get(id: number, trx: Db = this.db): Promise<SavedReport | undefined> {
    if (!isRowId(id)) return undefined;
    const r = await trx('reports').where({ id }).first();
    return r ? toReport(r) : undefined;
  }

  async getMany(ids: number[]): Promise<SavedReport[]> {
    if (ids.length === 0) return [];
    return (await this.db('reports').whereIn('id', ids)).map(toReport);
  }

  async list(projectId: number): Promise<SavedReport[]> {
    return (await this.db('reports').where({ project_id: projectId }).orderBy('id')).map(toReport);
  }

  async create(trx: Db, input: { projectId: number; createdBy: number | null; name: string; description: string | null; type: ReportType; query: Record<string, unknown> }): Promise<SavedReport> {
    const now = nowMs();
    const row = {
      project_id: input.projectId, created_by: input.createdBy, name: input.name, description: input.description,
      type: input.type, query: JSON.stringify(input.query), created_at: now, updated_at: now,
    };
    const [{ id }] = await trx('reports').insert(row).returning('id');
    return toReport({ id, ...row });
  }

  async update(trx: Db, id: number, patch: { name?: string; description?: string | null; type?: ReportType; query?: Record<string, unknown> }): Promise<void> {
    const row: Record<string, unknown> = { updated_at: nowMs() };
    if (patch.name !== undefined) row.name = patch.name;
    if (patch.description !== undefined) row.description = patch.description;
    if (patch.type !== undefined) row.type = patch.type;
    if (patch.query !== undefined) row.query = JSON.stringify(patch.query);
    await trx('reports').where({ id }).update(row);
  }

  /** The board cards showing it go with it (foreign key, ON DELETE CASCADE). */
  async delete(trx: Db, id: number): Promise<void> {
    await trx('reports').where({ id }).delete();
  }
}
