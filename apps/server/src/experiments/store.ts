import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import { isRowId } from '../http/columns.js';
import type { Experiment, ExperimentMetric } from './schema.js';

/** An experiment as stored, minus what the store sets itself. */
export type ExperimentFields = Omit<Experiment, 'id' | 'createdAt' | 'updatedAt'>;

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** A row (PostgreSQL bigints as strings, SQLite booleans as 0/1) to the API's Experiment, in one place. */
function toExperiment(r: Record<string, unknown>): Experiment {
  return {
    id: Number(r.id),
    projectId: Number(r.project_id),
    key: String(r.key),
    name: String(r.name),
    flagKey: String(r.flag_key),
    control: String(r.control),
    metrics: JSON.parse(String(r.metrics)) as ExperimentMetric[],
    primaryMetricId: String(r.primary_metric_id),
    engine: r.engine as Experiment['engine'],
    confidenceLevel: Number(r.confidence_level),
    sequential: Boolean(r.sequential),
    correction: r.correction as Experiment['correction'],
    startAt: num(r.start_at),
    endAt: num(r.end_at),
    status: r.status as Experiment['status'],
    stoppedAt: num(r.stopped_at),
    createdBy: num(r.created_by),
    managedBy: r.managed_by === null || r.managed_by === undefined ? null : String(r.managed_by),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

function toRow(e: ExperimentFields): Record<string, unknown> {
  return {
    project_id: e.projectId, key: e.key, name: e.name, flag_key: e.flagKey, control: e.control, metrics: JSON.stringify(e.metrics),
    primary_metric_id: e.primaryMetricId, engine: e.engine, confidence_level: e.confidenceLevel, sequential: e.sequential,
    correction: e.correction, start_at: e.startAt, end_at: e.endAt, status: e.status, stopped_at: e.stoppedAt, created_by: e.createdBy,
    managed_by: e.managedBy,
  };
}

/** Experiments of projects; the key is unique within a project. */
export class ExperimentStore {
  constructor(private db: Db) {}

  async get(id: number, trx: Db = this.db): Promise<Experiment | undefined> {
    if (!isRowId(id)) return undefined;
    const r = await trx('experiments').where({ id }).first();
    return r ? toExperiment(r) : undefined;
  }

  async list(projectId: number): Promise<Experiment[]> {
    return (await this.db('experiments').where({ project_id: projectId }).orderBy('id')).map(toExperiment);
  }

  async keyTaken(trx: Db, projectId: number, key: string, except?: number): Promise<boolean> {
    const q = trx('experiments').where({ project_id: projectId, key });
    if (except !== undefined) q.whereNot({ id: except });
    return (await q.first('id')) !== undefined;
  }

  async create(trx: Db, e: ExperimentFields): Promise<Experiment> {
    const now = nowMs();
    const row = { ...toRow(e), created_at: now, updated_at: now };
    const [{ id }] = await trx('experiments').insert(row).returning('id');
    return (await this.get(Number(id), trx))!;
  }

  async save(trx: Db, id: number, e: ExperimentFields): Promise<Experiment> {
    await trx('experiments').where({ id }).update({ ...toRow(e), updated_at: nowMs() });
    return (await this.get(id, trx))!;
  }

  async delete(trx: Db, id: number): Promise<void> {
    await trx('experiments').where({ id }).delete();
  }
}
