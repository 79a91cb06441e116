import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import type { CohortDefinition } from '../cohorts/schema.js';
import type { CalculatedMetricDefinition, DerivedEventDefinition } from './schema.js';
import { isRowId } from '../http/columns.js';

/** Tables that hold a named, project-scoped JSON definition. */
export type DefinitionTable = 'derived_events' | 'calculated_metrics' | 'cohorts';

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

/** A row as the drivers return it (PostgreSQL bigints as strings, the definition as JSON text). */
interface StoredRow {
  id: number | string;
  project_id: number | string;
  created_by: number | string | null;
  name: string;
  description: string | null | undefined;
  definition: string;
  created_at: number | string;
  updated_at: number | string;
}

export interface NewDefinition<T> {
  projectId: number;
  createdBy: number | null;
  name: string;
  description: string | null;
  definition: T;
}

export interface DefinitionPatch<T> {
  name?: string;
  description?: string | null;
  definition?: T;
}

/**
 * Derived events, calculated metrics and cohorts share one row shape (name, description, JSON
 * definition) and so one store.
 */
export class DefinitionStore<T> {
  constructor(private db: Db, private table: DefinitionTable) {}

  /** Rows to typed definitions, in one place. */
  private static toDefinition<T>(r: StoredRow): DefinitionRow<T> {
    return {
      id: Number(r.id),
      project_id: Number(r.project_id),
      created_by: r.created_by === null ? null : Number(r.created_by),
      name: r.name,
      description: r.description ?? null,
      definition: JSON.parse(r.definition) as T,
      created_at: Number(r.created_at),
      updated_at: Number(r.updated_at),
    };
  }

  /** Also for references inside bodies (a flag rule's cohortId, a metric's definitionId): past an id column, none. */
  async get(id: number, trx: Db = this.db): Promise<DefinitionRow<T> | undefined> {
    if (!isRowId(id)) return undefined;
    const r = await trx<StoredRow>(this.table).where({ id }).first();
    return r ? DefinitionStore.toDefinition<T>(r) : undefined;
  }

  async byName(projectId: number, name: string, trx: Db = this.db): Promise<DefinitionRow<T> | undefined> {
    const r = await trx<StoredRow>(this.table).where({ project_id: projectId, name }).first();
    return r ? DefinitionStore.toDefinition<T>(r) : undefined;
  }

  async list(projectId: number): Promise<DefinitionRow<T>[]> {
    const rows = await this.db<StoredRow>(this.table).where({ project_id: projectId }).orderBy('id');
    return rows.map((r) => DefinitionStore.toDefinition<T>(r));
  }

  async create(input: NewDefinition<T>, trx: Db = this.db): Promise<DefinitionRow<T>> {
    const now = nowMs();
    const row = {
      project_id: input.projectId, created_by: input.createdBy, name: input.name, description: input.description,
      definition: JSON.stringify(input.definition), created_at: now, updated_at: now,
    };
    const [ret] = await trx(this.table).insert(row).returning('id');
    const id = typeof ret === 'object' ? ret.id : ret;
    return DefinitionStore.toDefinition<T>({ id, ...row });
  }

  async update(id: number, patch: DefinitionPatch<T>, trx: Db = this.db): Promise<void> {
    const row: Record<string, unknown> = { updated_at: nowMs() };
    if (patch.name !== undefined) row.name = patch.name;
    if (patch.description !== undefined) row.description = patch.description;
    if (patch.definition !== undefined) row.definition = JSON.stringify(patch.definition);
    await trx(this.table).where({ id }).update(row);
  }

  async delete(id: number, trx: Db = this.db): Promise<void> {
    await trx(this.table).where({ id }).delete();
  }
}

/** The definition stores, built once at start-up and handed to the domains that read them. */
export interface DefinitionStores {
  derivedEvents: DefinitionStore<DerivedEventDefinition>;
  metrics: DefinitionStore<CalculatedMetricDefinition>;
  cohorts: DefinitionStore<CohortDefinition>;
}

export function definitionStores(db: Db): DefinitionStores {
  return {
    derivedEvents: new DefinitionStore(db, 'derived_events'),
    metrics: new DefinitionStore(db, 'calculated_metrics'),
    cohorts: new DefinitionStore(db, 'cohorts'),
  };
}
