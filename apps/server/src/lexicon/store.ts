import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import type { LexiconEntryBody, LexiconKind } from './schema.js';

export interface LexiconEntry {
  id: number;
  kind: LexiconKind;
  name: string;
  description: string | null;
  displayName: string | null;
  hidden: boolean;
  tags: string[];
  updated_at: number;
}

function toEntry(r: Record<string, unknown>): LexiconEntry {
  return {
    id: Number(r.id), kind: r.kind as LexiconKind, name: String(r.name), description: (r.description as string | null) ?? null,
    displayName: (r.display_name as string | null) ?? null, hidden: Boolean(Number(r.hidden)) || r.hidden === true,
    tags: JSON.parse(String(r.tags)), updated_at: Number(r.updated_at),
  };
}

/** The project's dictionary: one entry per (kind, name), written by PUT, merged with observed names on read. */
export class LexiconStore {
  constructor(private db: Db) {}

  async list(projectId: number, kind: LexiconKind): Promise<LexiconEntry[]> {
    return (await this.db('lexicon_entries').where({ project_id: projectId, kind }).orderBy('name')).map(toEntry);
  }

  async get(projectId: number, kind: LexiconKind, name: string, trx: Db = this.db): Promise<LexiconEntry | undefined> {
    const r = await trx('lexicon_entries').where({ project_id: projectId, kind, name }).first();
    return r ? toEntry(r) : undefined;
  }

  /** Insert or merge in one statement, so two concurrent PUTs cannot both insert. */
  async upsert(trx: Db, projectId: number, kind: LexiconKind, name: string, patch: LexiconEntryBody, by: number | null): Promise<LexiconEntry> {
    const now = nowMs();
    const set: Record<string, unknown> = { updated_at: now, updated_by: by };
    if (patch.description !== undefined) set.description = patch.description;
    if (patch.displayName !== undefined) set.display_name = patch.displayName;
    if (patch.hidden !== undefined) set.hidden = patch.hidden;
    if (patch.tags !== undefined) set.tags = JSON.stringify([...new Set(patch.tags)]);
    const insert = {
      project_id: projectId, kind, name, description: patch.description ?? null, display_name: patch.displayName ?? null,
      hidden: patch.hidden ?? false, tags: JSON.stringify([...new Set(patch.tags ?? [])]), updated_by: by, created_at: now, updated_at: now,
    };
    await trx('lexicon_entries').insert(insert).onConflict(['project_id', 'kind', 'name']).merge(set);
    return (await this.get(projectId, kind, name, trx))!;
  }
}
