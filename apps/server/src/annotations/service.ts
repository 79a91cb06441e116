import type { Db } from '../ports/metadata/knex.js';
import { notFound } from '../http/errors.js';
import type { Actor } from '../audit/actor.js';
import { creatorOf } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import type { Annotation, AnnotationStore } from './store.js';

/** Annotations' writes, each with its audit row (`annotation.created|updated|deleted`) in one transaction. */
export class AnnotationService {
  constructor(private readonly db: Db, private readonly annotations: AnnotationStore, private readonly audit: AuditStore) {}

  get(id: number): Promise<Annotation | undefined> {
    return this.annotations.get(id);
  }

  list(projectId: number, range: { from?: string; to?: string } = {}): Promise<Annotation[]> {
    return this.annotations.list(projectId, range);
  }

  create(actor: Actor, input: { projectId: number; date: string; description: string }): Promise<Annotation> {
    return this.db.transaction(async (trx) => {
      const created = await this.annotations.create(trx, { ...input, createdBy: creatorOf(actor) });
      await this.audit.recordInProject(trx, actor, created.project_id, { action: 'annotation.created', target: { kind: 'annotation', id: created.id }, after: created });
      return created;
    });
  }

  update(actor: Actor, id: number, patch: { date?: string; description?: string }): Promise<Annotation> {
    return this.db.transaction(async (trx) => {
      const before = await this.annotations.get(id, trx);
      if (!before) throw notFound('annotation');
      await this.annotations.update(trx, id, patch);
      const after = (await this.annotations.get(id, trx))!;
      await this.audit.recordInProject(trx, actor, after.project_id, { action: 'annotation.updated', target: { kind: 'annotation', id }, before, after });
      return after;
    });
  }

  async delete(actor: Actor, id: number): Promise<void> {
    await this.db.transaction(async (trx) => {
      const before = await this.annotations.get(id, trx);
      if (!before) throw notFound('annotation');
      await this.annotations.delete(trx, id);
      await this.audit.recordInProject(trx, actor, before.project_id, { action: 'annotation.deleted', target: { kind: 'annotation', id }, before });
    });
  }
}
