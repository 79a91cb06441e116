import type { Db } from '../ports/metadata/knex.js';
import { nowMs } from '../ports/metadata/knex.js';
import { isRowId } from '../http/columns.js';
import type { PropertyFilter } from '../query/schema.js';
import type { DateRangeSpec } from '../query/ir/schema.js';

export interface Board {
  id: number;
  project_id: number;
  created_by: number | null;
  name: string;
  date_range: DateRangeSpec | null;
  filters: PropertyFilter[];
  created_at: number;
  updated_at: number;
  /** 1 when created, one more on every write (the version check of concurrent edits). */
  version: number;
}

export interface CardRow {
  id: number;
  board_id: number;
  card_type: 'report' | 'text';
  report_id: number | null;
  text: string | null;
  position: number;
  span: number;
  height: 'short' | 'medium' | 'tall';
  /** How a report card shows its report (text cards: chart). */
  display: 'chart' | 'number' | 'table';
}

/** A card as written: positions resolved, defaults applied. */
export type NewCard = Omit<CardRow, 'id' | 'board_id'>;

function toBoard(r: Record<string, unknown>): Board {
  return {
    id: Number(r.id), project_id: Number(r.project_id), created_by: r.created_by == null ? null : Number(r.created_by),
    name: String(r.name), date_range: r.date_range == null ? null : JSON.parse(String(r.date_range)),
    filters: JSON.parse(String(r.filters)), created_at: Number(r.created_at), updated_at: Number(r.updated_at),
    version: r.version == null ? 1 : Number(r.version),
  };
}

function toCard(r: Record<string, unknown>): CardRow {
  return {
    id: Number(r.id), board_id: Number(r.board_id), card_type: r.card_type as CardRow['card_type'],
    report_id: r.report_id == null ? null : Number(r.report_id), text: (r.text as string | null) ?? null,
    position: Number(r.position), span: Number(r.span), height: r.height as CardRow['height'],
    display: r.display === 'number' || r.display === 'table' ? r.display : 'chart',
  };
}

export class BoardStore {
  constructor(private db: Db) {}

  async get(id: number, trx: Db = this.db): Promise<Board | undefined> {
    if (!isRowId(id)) return undefined;
    const r = await trx('boards').where({ id }).first();
    return r ? toBoard(r) : undefined;
  }

  async list(projectId: number): Promise<Board[]> {
    return (await this.db('boards').where({ project_id: projectId }).orderBy('id')).map(toBoard);
  }

  /** Cards of the given boards in display order (position, then the order they were written). */
  async cards(boardIds: number[], trx: Db = this.db): Promise<CardRow[]> {
    if (boardIds.length === 0) return [];
    return (await trx('board_cards').whereIn('board_id', boardIds).orderBy([{ column: 'position' }, { column: 'id' }])).map(toCard);
  }

  /**
   * Creates or updates a board and, when `cards` is given, replaces its card set, inside the
   * caller's transaction (boards/service.ts). Answers the board's id.
   */
  async write(
    trx: Db,
    input: { id?: number; projectId: number; createdBy: number | null; name?: string; dateRange?: DateRangeSpec | null; filters?: PropertyFilter[]; cards?: NewCard[] },
  ): Promise<number> {
    const now = nowMs();
    const row: Record<string, unknown> = { updated_at: now };
    if (input.name !== undefined) row.name = input.name;
    if (input.dateRange !== undefined) row.date_range = input.dateRange === null ? null : JSON.stringify(input.dateRange);
    if (input.filters !== undefined) row.filters = JSON.stringify(input.filters);
    let id = input.id;
    if (id === undefined) {
      const [{ id: created }] = await trx('boards')
        .insert({ project_id: input.projectId, created_by: input.createdBy, filters: '[]', date_range: null, ...row, created_at: now })
        .returning('id');
      id = Number(created);
    } else {
      await trx('boards').where({ id }).update({ ...row, version: trx.raw('version + 1') });
    }
    if (input.cards !== undefined) {
      await trx('board_cards').where({ board_id: id }).delete();
      if (input.cards.length) await trx('board_cards').insert(input.cards.map((c) => ({ ...c, board_id: id })));
    }
    return id;
  }

  /**
   * Locks the board's row for this transaction if it is still at `version` (answers false if not),
   * so two writes made on the same version cannot both pass the check.
   */
  async claimVersion(trx: Db, id: number, version: number): Promise<boolean> {
    const n = await trx('boards').where({ id, version }).update({ version });
    return Number(n) > 0;
  }

  async delete(trx: Db, id: number): Promise<void> {
    await trx('board_cards').where({ board_id: id }).delete();
    await trx('boards').where({ id }).delete();
  }
}
