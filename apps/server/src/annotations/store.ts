import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import { isRowId } from '../http/columns.js';

export interface Annotation {
  id: number;
  project_id: number;
  created_by: number | null;
  date: string;
  description: string;
  created_at: number;
  updated_at: number;
}

function toAnnotation(r: Record<string, unknown>): Annotation {
  return {
    id: Number(r.id), project_id: Number(r.project_id), created_by: r.created_by == null ? null : Number(r.created_by),
    date: String(r.date), description: String(r.description), created_at: Number(r.created_at), updated_at: Number(r.updated_at),
  };
}

/** Annotations are dated notes on a project's timeline; `date` is a `YYYY-MM-DD` string, so ranges compare as text. */
export class AnnotationStore {
  constructor(private db: Db) {}

  async get(id: number, trx: Db = this.db): Promise<Annotation | undefined> {
    if (!isRowId(id)) return undefined;
    const r = await trx('annotations').where({ id }).first();
    return r ? toAnnotation(r) : undefined;
  }

  /** A project's annotations, oldest day first; `from`/`to` inclusive days. */
  async list(projectId: number, range: { from?: string; to?: string } = {}): Promise<Annotation[]> {
    const q = this.db('annotations').where({ project_id: projectId });
    if (range.from !== undefined) q.andWhere('date', '>=', range.from);
    if (range.to !== undefined) q.andWhere('date', '<=', range.to);
    return (await q.orderBy([{ column: 'date' }, { column: 'id' }])).map(toAnnotation);
  }

  async create(trx: Db, input: { projectId: number; createdBy: number | null; date: string; description: string }): Promise<Annotation> {
    const now = nowMs();
    const row = { project_id: input.projectId, created_by: input.createdBy, date: input.date, description: input.description, created_at: now, updated_at: now };
    const [{ id }] = await trx('annotations').insert(row).returning('id');
    return toAnnotation({ id, ...row });
  }

  async update(trx: Db, id: number, patch: { date?: string; description?: string }): Promise<void> {
    await trx('annotations').where({ id }).update({ ...patch, updated_at: nowMs() });
  }

  async delete(trx: Db, id: number): Promise<void> {
    await trx('annotations').where({ id }).delete();
  }

  /**
   * The annotations on days inside a query's range (`[fromMs, toEndMs)`, UTC days), for trend
   * results to show beside their chart.
   */
  async inRange(projectId: number, range: { fromMs: number; toEndMs: number }): Promise<Array<{ id: number; date: string; description: string }>> {
    const rows = await this.list(projectId, { from: day(range.fromMs), to: day(range.toEndMs - 1) });
    return rows.map((a) => ({ id: a.id, date: a.date, description: a.description }));
  }
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
