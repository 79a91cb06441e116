import type { Db } from '../ports/metadata/knex.js';
import type { Actor } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import { viewOf, type PrivacyRequest, type PrivacyStore } from './store.js';
import type { PrivacyType } from './schema.js';

/**
 * A privacy request as the audit log shows it: the public view and how many ids it named, never
 * the ids themselves (a completed delete must not leave them anywhere).
 */
const snapshot = (r: PrivacyRequest, idCount = r.distinct_ids.length) => ({ ...viewOf(r), distinct_id_count: idCount });

/**
 * Privacy requests' changes a tenant sees: creation (by the caller) and the runner's outcome,
 * `privacy_request.completed` or `privacy_request.failed`. The runner acts on the request's
 * behalf, so those rows carry the actor who asked for it; a retry after a failed attempt is the
 * runner's own bookkeeping and writes none.
 */
export class PrivacyService {
  constructor(private readonly db: Db, readonly store: PrivacyStore, private readonly audit: AuditStore) {}

  create(actor: Actor, input: { projectId: number; type: PrivacyType; distinctIds: string[] }): Promise<PrivacyRequest> {
    return this.db.transaction(async (trx) => {
      const created = await this.store.create(trx, { ...input, actor });
      await this.audit.recordInProject(trx, actor, created.project_id, {
        action: 'privacy_request.created', target: { kind: 'privacy_request', id: created.id }, after: snapshot(created),
      });
      return created;
    });
  }

  complete(r: PrivacyRequest, clusterIds: string[]): Promise<void> {
    return this.finish(r, 'completed', (trx) => this.store.complete(trx, r, clusterIds));
  }

  fail(r: PrivacyRequest, error: string): Promise<void> {
    return this.finish(r, 'failed', (trx) => this.store.fail(trx, r.id, error));
  }

  private async finish(r: PrivacyRequest, verb: 'completed' | 'failed', write: (trx: Db) => Promise<void>): Promise<void> {
    await this.db.transaction(async (trx) => {
      const before = await this.store.get(r.id, trx);
      if (!before) return; // its project was deleted meanwhile
      await write(trx);
      const after = (await this.store.get(r.id, trx))!;
      await this.audit.recordInProject(trx, await this.store.requesterOf(trx, r.id), r.project_id, {
        action: `privacy_request.${verb}`, target: { kind: 'privacy_request', id: r.id },
        before: snapshot(before, r.distinct_ids.length), after: snapshot(after, r.distinct_ids.length),
      });
    });
  }
}
