import { AppError, queryLimitError, type Logger } from '../http/errors.js';
import { QueryLimitExceeded } from '../ports/events/index.js';
import { runReport, type ReportRunner } from '../reports/run.js';
import type { ProjectScope } from '../query/executor.js';
import { resolveDateRange } from '../reports/date-range.js';
import type { CardView } from './cards.js';
import type { Board } from './store.js';
import { BOARD_RUN_CONCURRENCY } from './schema.js';

type ReportCard = Extract<CardView, { card_type: 'report' }>;

/** Runs `work` over `items` with at most `limit` in flight, results in input order. */
async function mapLimited<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Runs every report card of a board: the board's date range replaces each report's, its filters
 * join each report's. Cards run a few at a time, each through the same checks as a query
 * endpoint; a card that fails carries the error a query endpoint would have answered (a 4xx, or
 * 501 for an IR analysis POST /api/query does not execute) and the others still answer, as one
 * broken tile does not blank a dashboard.
 */
export async function runBoard(deps: ReportRunner & { log: Logger }, project: ProjectScope, board: Board, cards: CardView[], now = Date.now()) {
  const reportCards = cards.filter((c): c is ReportCard => c.card_type === 'report');
  const override = { dateRange: board.date_range, filters: board.filters };
  const results = await mapLimited(reportCards, BOARD_RUN_CONCURRENCY, async (card) => {
    const base = { card_id: card.id, report_id: card.report_id, type: card.report.type, label: card.report.name };
    try {
      const { result, warnings, cached_at } = await runReport(deps, project, card.report, override, now);
      return { ...base, status: 'ok' as const, result, warnings, ...(cached_at !== undefined ? { cached_at } : {}) };
    } catch (thrown) {
      // A card stopped by the statement timeout or memory cap answers as the query endpoint would.
      const err = thrown instanceof QueryLimitExceeded ? queryLimitError(thrown) : thrown;
      if (err instanceof AppError) {
        const message = err.extra.message && err.extra.message !== err.error ? err.extra.message : undefined;
        return { ...base, status: 'error' as const, error: { status: err.status, error: err.error, ...(message ? { message } : {}) } };
      }
      deps.log.error('board card run failed', { boardId: board.id, cardId: card.id, err: err instanceof Error ? err.stack : String(err) });
      return { ...base, status: 'error' as const, error: { status: 500, error: 'internal error', message: 'the engine failed to run this card' } };
    }
  });
  return { board_id: board.id, range: board.date_range ? resolveDateRange(board.date_range, now) : null, ran_at: now, cards: results };
}
