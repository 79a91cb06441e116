import type { Db } from '../ports/metadata/knex.js';
import { notFound } from '../http/errors.js';
import type { Actor } from '../audit/actor.js';
import { creatorOf } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import type { ReportStore, SavedReport } from './store.js';
import type { ReportType } from './schema.js';

/** Checks a report's query against its type and answers it as stored (reports/query.ts checkReportQuery). */
export type ReportQueryCheck = (projectId: number, type: ReportType, query: Record<string, unknown>) => Promise<Record<string, unknown>>;

/**
 * Saved reports' writes: the query is checked against the type before anything is written, then
 * the change and its audit row (`report.created|updated|deleted`) commit in one transaction.
 */
export class ReportService {
  constructor(private readonly db: Db, private readonly reports: ReportStore, private readonly audit: AuditStore, private readonly check: ReportQueryCheck) {}

  get(id: number): Promise<SavedReport | undefined> {
    return this.reports.get(id);
  }

  getMany(ids: number[]): Promise<SavedReport[]> {
    return this.reports.getMany(ids);
  }

  list(projectId: number): Promise<SavedReport[]> {
    return this.reports.list(projectId);
  }

  async create(actor: Actor, input: { projectId: number; name: string; description: string | null; type: ReportType; query: Record<string, unknown> }): Promise<SavedReport> {
    const query = await this.check(input.projectId, input.type, input.query);
    return this.db.transaction(async (trx) => {
      const created = await this.reports.create(trx, { ...input, query, createdBy: creatorOf(actor) });
      await this.audit.recordInProject(trx, actor, created.project_id, { action: 'report.created', target: { kind: 'report', id: created.id }, after: created });
      return created;
    });
  }

  /** A new type or query is checked against the other (the stored one fills in what the patch leaves out). */
  async update(actor: Actor, report: SavedReport, patch: { name?: string; description?: string | null; type?: ReportType; query?: Record<string, unknown> }): Promise<SavedReport> {
    const change = { ...patch };
    if (patch.type !== undefined || patch.query !== undefined) {
      change.query = await this.check(report.project_id, patch.type ?? report.type, patch.query ?? report.query);
    }
    return this.db.transaction(async (trx) => {
      const before = await this.reports.get(report.id, trx);
      if (!before) throw notFound('report');
      await this.reports.update(trx, report.id, change);
      const after = (await this.reports.get(report.id, trx))!;
      await this.audit.recordInProject(trx, actor, after.project_id, { action: 'report.updated', target: { kind: 'report', id: after.id }, before, after });
      return after;
    });
  }

  /** Deletes the report and the board cards that show it. */
  async delete(actor: Actor, id: number): Promise<void> {
    await this.db.transaction(async (trx) => {
      const before = await this.reports.get(id, trx);
      if (!before) throw notFound('report');
      await this.reports.delete(trx, id);
      await this.audit.recordInProject(trx, actor, before.project_id, { action: 'report.deleted', target: { kind: 'report', id }, before });
    });
  }
}
