import type { Db } from '../ports/metadata/knex.js';
import type { Actor } from '../audit/actor.js';
import { creatorOf } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import type { LexiconEntry, LexiconStore } from './store.js';
import type { LexiconEntryBody, LexiconKind } from './schema.js';

/** Lexicon entries' writes: each PUT and its audit row (`lexicon.created` for a new entry, else `lexicon.updated`) in one transaction. */
export class LexiconService {
  constructor(private readonly db: Db, readonly store: LexiconStore, private readonly audit: AuditStore) {}

  write(actor: Actor, projectId: number, kind: LexiconKind, name: string, patch: LexiconEntryBody): Promise<LexiconEntry> {
    return this.db.transaction(async (trx) => {
      const before = await this.store.get(projectId, kind, name, trx);
      const after = await this.store.upsert(trx, projectId, kind, name, patch, creatorOf(actor));
      await this.audit.recordInProject(trx, actor, projectId, {
        action: before ? 'lexicon.updated' : 'lexicon.created', target: { kind: 'lexicon', id: after.id }, before: before ?? null, after,
      });
      return after;
    });
  }
}
