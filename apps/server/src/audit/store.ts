import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import type { Actor } from './actor.js';
import { redact } from './redact.js';
import type { AuditFilters, TargetKind } from './schema.js';

/** One change to record: what it was about and its snapshots (redacted on the way in). */
export interface AuditChange {
  organizationId: number | null;
  projectId?: number | null;
  /** `<target kind>.<verb>`: `project.created`, `membership.removed`, … */
  action: string;
  target: { kind: TargetKind; id: number | null };
  before?: unknown;
  after?: unknown;
}

export interface AuditEntry {
  id: number;
  at: number;
  actor: { kind: Actor['kind']; id: number | null; resource?: string };
  organizationId: number | null;
  projectId?: number;
  action: string;
  target: { kind: TargetKind; id: number | null };
  before: unknown;
  after: unknown;
}

type Row = Record<string, unknown>;
const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(redact(v)));

function toEntry(r: Row): AuditEntry {
  const entry: AuditEntry = {
    id: Number(r.id),
    at: Number(r.at),
    actor: { kind: r.actor_kind as Actor['kind'], id: numOrNull(r.actor_id) },
    organizationId: numOrNull(r.org_id),
    action: String(r.action),
    target: { kind: r.target_kind as TargetKind, id: numOrNull(r.target_id) },
    before: r.before === null ? null : JSON.parse(String(r.before)),
    after: r.after === null ? null : JSON.parse(String(r.after)),
  };
  if (r.actor_resource) entry.actor.resource = String(r.actor_resource);
  if (r.project_id !== null && r.project_id !== undefined) entry.projectId = Number(r.project_id);
  return entry;
}

/**
 * The audit log (table `audit_log`). Services write a row inside the transaction of the change it
 * records (`record(trx, …)`), so a change and its row commit or roll back together.
 */
export class AuditStore {
  constructor(private readonly db: Db) {}

  async record(trx: Db, actor: Actor, change: AuditChange, at = nowMs()): Promise<void> {
    await trx('audit_log').insert({
      at,
      actor_kind: actor.kind,
      actor_id: actor.id,
      actor_resource: actor.resource,
      org_id: change.organizationId,
      project_id: change.projectId ?? null,
      action: change.action,
      target_kind: change.target.kind,
      target_id: change.target.id,
      before: json(change.before),
      after: json(change.after),
    });
  }

  /**
   * Records a change to something a project holds (flag, report, board, cohort, …): the
   * organisation is read from the project row inside the same transaction.
   */
  async recordInProject(trx: Db, actor: Actor, projectId: number, change: Omit<AuditChange, 'organizationId' | 'projectId'>): Promise<void> {
    const project = await trx('projects').where({ id: projectId }).first('org_id');
    await this.record(trx, actor, { ...change, organizationId: numOrNull(project?.org_id), projectId });
  }

  /** Newest first; `cursor` is the id of the last row of the previous page. */
  async list(f: AuditFilters): Promise<{ entries: AuditEntry[]; nextCursor: string | null }> {
    const q = this.db('audit_log').select('*').orderBy('id', 'desc').limit(f.limit + 1);
    if (f.organizationId !== undefined) q.where({ org_id: f.organizationId });
    if (f.projectId !== undefined) q.where({ project_id: f.projectId });
    if (f.action !== undefined) q.where({ action: f.action });
    if (f.actorKind !== undefined) q.where({ actor_kind: f.actorKind });
    if (f.targetKind !== undefined) q.where({ target_kind: f.targetKind });
    if (f.from !== undefined) q.where('at', '>=', f.from);
    if (f.to !== undefined) q.where('at', '<', f.to);
    if (f.cursor !== undefined) q.where('id', '<', Number(f.cursor));
    const rows = (await q) as Row[];
    const entries = rows.slice(0, f.limit).map(toEntry);
    return { entries, nextCursor: rows.length > f.limit ? String(entries[entries.length - 1].id) : null };
  }

  /** Deletes rows older than `before` (AUDIT_RETENTION_DAYS); answers how many went. */
  async deleteOlderThan(before: number): Promise<number> {
    return Number(await this.db('audit_log').where('at', '<', before).delete());
  }
}
