import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import type { CohortDefinition } from './schema.js';

export interface CohortRow {
  id: number;
  project_id: number;
  created_by: number | null;
  name: string;
  description: string | null;
  definition: CohortDefinition;
  created_at: number;
  updated_at: number;
}

const fromRow = (r: any): CohortRow => ({
  id: Number(r.id), project_id: Number(r.project_id), created_by: r.created_by === null ? null : Number(r.created_by),
  name: r.name, description: r.description ?? null, definition: JSON.parse(r.definition),
  created_at: Number(r.created_at), updated_at: Number(r.updated_at),
});

export class CohortStore {
  constructor(private db: Db) {}

  async get(id: number): Promise<CohortRow | undefined> {
    const r = await this.db('cohorts').where({ id }).first();
    return r ? fromRow(r) : undefined;
  }

  async list(projectId: number): Promise<CohortRow[]> {
    return (await this.db('cohorts').where({ project_id: projectId }).orderBy('id')).map(fromRow);
  }

  async create(input: { projectId: number; createdBy: number | null; name: string; description: string | null; definition: CohortDefinition }): Promise<CohortRow> {
    const now = nowMs();
    const row = { project_id: input.projectId, created_by: input.createdBy, name: input.name, description: input.description, definition: JSON.stringify(input.definition), created_at: now, updated_at: now };
    const [{ id }] = await this.db('cohorts').insert(row).returning('id');
    return fromRow({ id, ...row });
  }

  async update(id: number, patch: { name?: string; description?: string | null; definition?: CohortDefinition }): Promise<void> {
    const row: Record<string, unknown> = { updated_at: nowMs() };
    if (patch.name !== undefined) row.name = patch.name;
    if (patch.description !== undefined) row.description = patch.description;
    if (patch.definition !== undefined) row.definition = JSON.stringify(patch.definition);
    await this.db('cohorts').where({ id }).update(row);
  }

  async delete(id: number): Promise<void> {
    await this.db('cohorts').where({ id }).delete();
  }
}
