import type { Db } from '../ports/metadata/knex.js';
import { conflict, notFound } from '../http/errors.js';
import type { Actor } from '../audit/actor.js';
import { creatorOf } from '../audit/actor.js';
import type { AuditStore } from '../audit/store.js';
import type { PropertyFilter } from '../query/schema.js';
import type { DateRangeSpec } from '../query/ir/schema.js';
import { checkCardReports } from './cards.js';
import type { Board, BoardStore, CardRow, NewCard } from './store.js';

/** A board as the audit log shows it: its fields and its cards in layout order. */
export type BoardSnapshot = Board & { cards: CardRow[] };

export interface BoardChange {
  name?: string;
  dateRange?: DateRangeSpec | null;
  filters?: PropertyFilter[];
  /** Replaces the whole card set when given. */
  cards?: NewCard[];
  /** The version the change was made on; another write since then refuses it (409 `board changed`). */
  version?: number;
}

/**
 * Boards' writes (the board and its cards together): every report card must show a report of the
 * board's project, checked inside the transaction so the reports cannot vanish half-way; each write
 * and its audit row (`board.created|updated|deleted`, cards in the snapshots) commit together.
 */
export class BoardService {
  constructor(private readonly db: Db, private readonly boards: BoardStore, private readonly audit: AuditStore) {}

  get(id: number): Promise<Board | undefined> {
    return this.boards.get(id);
  }

  list(projectId: number): Promise<Board[]> {
    return this.boards.list(projectId);
  }

  cards(boardIds: number[]): Promise<CardRow[]> {
    return this.boards.cards(boardIds);
  }

  private async snapshot(trx: Db, id: number): Promise<BoardSnapshot | undefined> {
    const board = await this.boards.get(id, trx);
    return board && { ...board, cards: await this.boards.cards([id], trx) };
  }

  create(actor: Actor, projectId: number, change: BoardChange & { name: string }): Promise<Board> {
    return this.db.transaction(async (trx) => {
      await checkCardReports(trx, projectId, change.cards ?? []);
      const id = await this.boards.write(trx, { projectId, createdBy: creatorOf(actor), filters: [], dateRange: null, ...change });
      const after = (await this.snapshot(trx, id))!;
      await this.audit.recordInProject(trx, actor, projectId, { action: 'board.created', target: { kind: 'board', id }, after });
      return after;
    });
  }

  update(actor: Actor, id: number, change: BoardChange): Promise<Board> {
    return this.db.transaction(async (trx) => {
      const claimed = change.version !== undefined && (await this.boards.claimVersion(trx, id, change.version));
      const before = await this.snapshot(trx, id);
      if (!before) throw notFound('board');
      if (change.version !== undefined && !claimed) {
        throw conflict('board changed', {
          message: `someone saved this board since you loaded it (your version ${change.version}, now ${before.version}): reload it and make your change again`,
          body: { version: before.version },
        });
      }
      await checkCardReports(trx, before.project_id, change.cards ?? []);
      const { version: _expected, ...fields } = change;
      await this.boards.write(trx, { id, projectId: before.project_id, createdBy: before.created_by, ...fields });
      const after = (await this.snapshot(trx, id))!;
      await this.audit.recordInProject(trx, actor, before.project_id, { action: 'board.updated', target: { kind: 'board', id }, before, after });
      return after;
    });
  }

  /** Deletes the board and its cards; the reports stay. */
  async delete(actor: Actor, id: number): Promise<void> {
    await this.db.transaction(async (trx) => {
      const before = await this.snapshot(trx, id);
      if (!before) throw notFound('board');
      await this.boards.delete(trx, id);
      await this.audit.recordInProject(trx, actor, before.project_id, { action: 'board.deleted', target: { kind: 'board', id }, before });
    });
  }
}
