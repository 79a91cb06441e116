import { createHash } from 'node:crypto';
import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import { isRowId } from '../http/columns.js';
import type { PrivacyRequestView, PrivacyStatus, PrivacyType } from './schema.js';
import type { Actor } from '../audit/actor.js';

/** A stored request, with what the runner needs beside the public view. */
export interface PrivacyRequest extends PrivacyRequestView {
  distinct_ids: string[];
  /** Every id of the clusters, resolved when the request ran (access/export downloads read these). */
  cluster_ids: string[] | null;
  attempts: number;
}

export const hashId = (id: string) => createHash('sha256').update(id, 'utf8').digest('hex');

function toRequest(r: Record<string, any>): PrivacyRequest {
  return {
    id: Number(r.id), project_id: Number(r.project_id), type: r.type as PrivacyType, status: r.status as PrivacyStatus,
    created_at: Number(r.created_at), completed_at: r.completed_at == null ? null : Number(r.completed_at), error: r.error ?? null,
    distinct_ids: JSON.parse(r.distinct_ids), cluster_ids: r.cluster_ids ? JSON.parse(r.cluster_ids) : null, attempts: Number(r.attempts),
  };
}

export const viewOf = (r: PrivacyRequest): PrivacyRequestView => ({
  id: r.id, project_id: r.project_id, type: r.type, status: r.status, created_at: r.created_at, completed_at: r.completed_at, error: r.error,
});

type ActorKind = Actor['kind'];

export class PrivacyStore {
  constructor(private db: Db) {}

  /**
   * The request and its privacy audit row (who, when, which ids as SHA-256 hashes), inside the
   * caller's transaction (privacy/service.ts, which adds the audit log's row).
   */
  async create(trx: Db, input: { projectId: number; type: PrivacyType; distinctIds: string[]; actor: Actor }): Promise<PrivacyRequest> {
    const now = nowMs();
    const ids = [...new Set(input.distinctIds)];
    const userId = input.actor.kind === 'user' ? input.actor.id : null;
    const row = { project_id: input.projectId, type: input.type, status: 'pending', distinct_ids: JSON.stringify(ids), attempts: 0, created_by: userId, created_at: now };
    const [{ id }] = await trx('privacy_requests').insert(row).returning('id');
    await trx('privacy_audit').insert({
      request_id: id, project_id: input.projectId, type: input.type, actor_kind: input.actor.kind, actor_user_id: userId,
      actor_token_id: input.actor.kind === 'token' ? input.actor.id : null, id_hashes: JSON.stringify(ids.map(hashId)), created_at: now,
    });
    return toRequest({ id, ...row, completed_at: null, error: null, cluster_ids: null });
  }

  /** Who asked for a request, from its privacy audit row (no resource: requests do not come through one). */
  async requesterOf(trx: Db, requestId: number): Promise<Actor> {
    const r = await trx('privacy_audit').where({ request_id: requestId }).orderBy('id').first('actor_kind', 'actor_user_id', 'actor_token_id');
    const kind = (r?.actor_kind ?? 'superadmin') as ActorKind;
    const id = kind === 'user' ? r.actor_user_id : kind === 'token' ? r.actor_token_id : null;
    return { kind, id: id == null ? null : Number(id), resource: null };
  }

  async get(id: number, trx: Db = this.db): Promise<PrivacyRequest | undefined> {
    if (!isRowId(id)) return undefined;
    const r = await trx('privacy_requests').where({ id }).first();
    return r ? toRequest(r) : undefined;
  }

  async list(projectId: number): Promise<PrivacyRequest[]> {
    return (await this.db('privacy_requests').where({ project_id: projectId }).orderBy('id', 'desc').limit(1000)).map(toRequest);
  }

  async audit(projectId: number): Promise<Array<Record<string, unknown>>> {
    return this.db('privacy_audit').where({ project_id: projectId }).orderBy('id');
  }

  /**
   * Takes the oldest request that is pending, or running with a heartbeat older than `staleMs`
   * (its process died). The conditional update makes two runners never take the same one.
   */
  async claim(staleMs: number): Promise<PrivacyRequest | undefined> {
    const now = nowMs();
    const candidates = await this.db('privacy_requests')
      .where({ status: 'pending' })
      .orWhere((q) => q.where({ status: 'running' }).andWhere('heartbeat_at', '<', now - staleMs))
      .orderBy('id').limit(5).select('id', 'status', 'heartbeat_at');
    for (const c of candidates) {
      const q = this.db('privacy_requests').where({ id: c.id, status: c.status });
      if (c.heartbeat_at == null) q.whereNull('heartbeat_at');
      else q.andWhere({ heartbeat_at: c.heartbeat_at });
      const n = await q.update({ status: 'running', started_at: now, heartbeat_at: now, attempts: this.db.raw('attempts + 1') });
      if (n === 1) return this.get(Number(c.id));
    }
    return undefined;
  }

  async heartbeat(id: number): Promise<void> {
    await this.db('privacy_requests').where({ id, status: 'running' }).update({ heartbeat_at: nowMs() });
  }

  async setClusterIds(id: number, ids: string[]): Promise<void> {
    await this.db('privacy_requests').where({ id }).update({ cluster_ids: JSON.stringify(ids) });
  }

  /**
   * A completed delete forgets the ids themselves: `cluster_ids` keeps their SHA-256 hashes (the
   * tombstones, see tombstones.ts) and the audit row the hashes of the ids asked for.
   */
  async complete(trx: Db, r: PrivacyRequest, clusterIds: string[]): Promise<void> {
    const patch: Record<string, unknown> = { status: 'completed', completed_at: nowMs(), error: null };
    if (r.type === 'delete') Object.assign(patch, { distinct_ids: '[]', cluster_ids: JSON.stringify(clusterIds.map(hashId)) });
    await trx('privacy_requests').where({ id: r.id }).update(patch);
  }

  async fail(trx: Db, id: number, error: string): Promise<void> {
    await trx('privacy_requests').where({ id }).update({ status: 'failed', completed_at: nowMs(), error: error.slice(0, 2000) });
  }

  /** Back to pending after a failed attempt that may succeed later. */
  async retry(id: number, error: string): Promise<void> {
    await this.db('privacy_requests').where({ id }).update({ status: 'pending', heartbeat_at: null, error: error.slice(0, 2000) });
  }
}
