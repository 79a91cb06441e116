import type { Knex } from 'knex';
import { badRequest } from '../http/errors.js';
import { isRowId } from '../http/columns.js';
import { toReport, type SavedReport } from '../reports/store.js';
import { withQueryV1 } from '../reports/ir.js';
import type { BoardCardWrite } from './schema.js';
import type { Board, CardRow, NewCard } from './store.js';

/** Cards as stored: a card without `position` takes its index in the list, so the list order is the layout. */
export function cardsToWrite(cards: BoardCardWrite[]): NewCard[] {
  return cards.map((c, i) => ({
    card_type: c.cardType, report_id: c.cardType === 'report' ? c.reportId! : null, text: c.cardType === 'text' ? c.text! : null,
    position: c.position ?? i, span: c.span, height: c.height, display: c.display,
  }));
}

/**
 * Every report card must show a report of the board's project: one of another project (or of
 * another organisation, or none at all) is a 400 naming the card, and nothing is written.
 */
export async function checkCardReports(trx: Knex.Transaction, projectId: number, cards: NewCard[]): Promise<void> {
  const ids = [...new Set(cards.flatMap((c) => (c.report_id === null ? [] : [c.report_id])))];
  if (ids.length === 0) return;
  const rows = await trx('reports').whereIn('id', ids.filter(isRowId)).select('id', 'project_id');
  const projectOf = new Map(rows.map((r: any) => [Number(r.id), Number(r.project_id)]));
  cards.forEach((c, i) => {
    if (c.report_id !== null && projectOf.get(c.report_id) !== projectId) {
      const message = `cards.${i}.reportId: no report ${c.report_id} in this board's project`;
      throw badRequest(message, { code: 'validation_failed', message });
    }
  });
}

export type CardView =
  | (Omit<CardRow, 'card_type' | 'report_id' | 'text'> & { card_type: 'report'; report_id: number; text: null; report: SavedReport })
  | (Omit<CardRow, 'card_type' | 'report_id' | 'text'> & { card_type: 'text'; report_id: null; text: string });

/** Joins each report card with its report as GET shows it (cards of deleted reports are gone by cascade). */
export async function cardViews(db: Knex, cards: CardRow[]): Promise<CardView[]> {
  const ids = [...new Set(cards.flatMap((c) => (c.report_id === null ? [] : [c.report_id])))];
  const reports = new Map((ids.length ? await db('reports').whereIn('id', ids) : []).map((r: any) => [Number(r.id), withQueryV1(toReport(r))]));
  return cards.flatMap((c): CardView[] => {
    const base = { id: c.id, board_id: c.board_id, position: c.position, span: c.span, height: c.height, display: c.display };
    if (c.card_type === 'text') return [{ ...base, card_type: 'text', report_id: null, text: c.text ?? '' }];
    const report = reports.get(c.report_id!);
    return report ? [{ ...base, card_type: 'report', report_id: report.id, text: null, report }] : [];
  });
}

/** A list row: the board, how many cards it holds and what the first few show. */
export function listItem(board: Board, cards: CardView[], previewCards: number) {
  return {
    ...board,
    card_count: cards.length,
    preview: cards.slice(0, previewCards).map((c) =>
      c.card_type === 'report'
        ? { card_type: 'report' as const, report_type: c.report.type, label: c.report.name }
        : { card_type: 'text' as const, report_type: null, label: firstLine(c.text) },
    ),
  };
}

const firstLine = (text: string) => {
  const line = text.trim().split(/\r?\n/)[0] ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
};
