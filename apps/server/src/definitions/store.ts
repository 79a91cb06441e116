import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';

export type DefinitionTable = 'derived_events' | 'calculated_metrics';

export interface DefinitionRow<T> {
  id: number;
  project_id: number;
  created_by: number | null;
  name: string;
  description: string | null;
  definition: T;
  created_at: number;
  updated_at: number;
}

const fromRow = <T>(r: any): DefinitionRow<T> => ({
  id: Number(r.id), project_id: Number(r.project_id), created_by: r.created_by === null ? null : Number(r.created_by),
  name: r.name, description: r.description ?? null, definition: JSON.parse(r.definition) as T,
  created_at: Number(r.created_at), updated_at: Number(r.updated_at),
});

/** Derived events and calculated metrics share one row shape (name, description, JSON definition). */
export class DefinitionStore<T> {
  constructor(private db: Db, private table: DefinitionTable) {}

  async get(id: number): Promise<DefinitionRow<T> | undefined> {
    const r = await this.db(this.table).where({ id }).first();
    return r ? fromRow<T>(r) : undefined;
  }

  async byName(projectId: number, name: string): Promise<DefinitionRow<T> | undefined> {
    const r = await this.db(this.table).where({ project_id: projectId, name }).first();
    return r ? fromRow<T>(r) : undefined;
  }

  async list(projectId: number): Promise<DefinitionRow<T>[]> {
    return (await this.db(this.table).where({ project_id: projectId }).orderBy('id')).map((r: any) => fromRow<T>(r));
  }

  async create(input: { projectId: number; createdBy: number | null; name: string; description: string | null; definition: T }): Promise<DefinitionRow<T>> {
    const now = nowMs();
    const row = { project_id: input.projectId, created_by: input.createdBy, name: input.name, description: input.description, definition: JSON.stringify(input.definition), created_at: now, updated_at: now };
    const [{ id }] = await this.db(this.table).insert(row).returning('id');
    return fromRow<T>({ id, ...row });
  }

  async update(id: number, patch: { name?: string; description?: string | null; definition?: T }): Promise<void> {
    const row: Record<string, unknown> = { updated_at: nowMs() };
    if (patch.name !== undefined) row.name = patch.name;
    if (patch.description !== undefined) row.description = patch.description;
    if (patch.definition !== undefined) row.definition = JSON.stringify(patch.definition);
    await this.db(this.table).where({ id }).update(row);
  }

  async delete(id: number): Promise<void> {
    await this.db(this.table).where({ id }).delete();
  }
}
