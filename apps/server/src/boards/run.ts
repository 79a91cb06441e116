import { AppError, queryLimitError, type Logger } from '../http/errors.js';
import { QueryLimitExceeded } from '../ports/events/index.js';
import { runReport, type ReportRunner } from '../reports/run.js';
import type { ProjectScope } from '../query/executor.js';
import type { RateCounter } from '../http/rate-limit.js';
import type { AuthContext } from '../auth/context.js';
import { LIMITS } from '../limits.js';
import { resolveDateRange } from '../reports/date-range.js';
import type { CardView } from './cards.js';
import type { Board } from './store.js';
import { BOARD_RUN_CONCURRENCY } from './schema.js';
import type { Config } from '../config.js';

type ReportCard = Extract<CardView, { card_type: 'report' }>;

/** One card's answer in a board run: its result (and when it was computed) or the error a query endpoint would have answered. */
export type CardRun =
  | { card_id: number; report_id: number; type: ReportCard['report']['type']; label: string; status: 'ok'; result: unknown; warnings: string[]; computed_at: number; cached_at?: number }
  | { card_id: number; report_id: number; type: ReportCard['report']['type']; label: string; status: 'error'; error: { status: number; error: string; message?: string } };

/** Whether a forced refresh ran (`refused`: answered from the cache instead) and when the caller's next is allowed (Unix ms). */
export interface RefreshState {
  refused: boolean;
  next_allowed_at: number;
}

export interface BoardRunOptions {
  /** Recompute every card, bypassing the results cache for this run (the new answers are stored). */
  refresh?: boolean;
  /** The client went away: cards not started yet are not run. */
  signal?: AbortSignal;
}

/**
 * How old a board card's answer whose range reaches today may be when a board run serves it: with
 * warming on (BOARD_WARM_INTERVAL_MS), the interval plus RESULTS_CACHE_FRESH_MS, so the answer the
 * last warming pass wrote is served until the next pass has written its own (the fresh bound
 * again as the margin for the pass's own time), as PostHog serves a dashboard's refreshed insight
 * until its next refresh; each card carries `cached_at`, and the console shows its age and a
 * Refresh. Without warming (or RESULTS_CACHE_FRESH_MS=0) the results cache's own bound.
 */
export function boardFreshMs(config: Pick<Config, 'resultsCache' | 'boardWarm'>): number {
  const { freshMs } = config.resultsCache;
  const { intervalMs } = config.boardWarm;
  return freshMs > 0 && intervalMs > 0 ? intervalMs + freshMs : freshMs;
}

/** Thrown for a card skipped because the run was abandoned; never answered. */
class Abandoned extends Error {}

/** At most `limit` computations at once; the others wait their turn, in arrival order. */
function gate(limit: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await work();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/**
 * Runs every report card of a board and hands each answer to `onCard` as it finishes: the board's
 * date range replaces each report's, its filters join each report's. Every card looks the results
 * cache up at once, so answers already cached come first; computations run a few at a time
 * (BOARD_RUN_CONCURRENCY), each through the same checks as a query endpoint. A card that fails
 * carries the error a query endpoint would have answered (a 4xx, or 501 for an IR analysis POST
 * /api/query does not execute) and the others still answer, as one broken tile does not blank a
 * dashboard. With `signal` aborted, computations not started are skipped (no `onCard` for them).
 */
export async function runCards(
  deps: ReportRunner & { log: Logger; freshMs?: number }, project: ProjectScope, board: Board, cards: CardView[], now: number,
  opts: BoardRunOptions, onCard: (card: CardRun) => void,
): Promise<void> {
  const reportCards = cards.filter((c): c is ReportCard => c.card_type === 'report');
  const override = { dateRange: board.date_range, filters: board.filters };
  const computing = gate(BOARD_RUN_CONCURRENCY);
  await Promise.all(reportCards.map(async (card) => {
    const base = { card_id: card.id, report_id: card.report_id, type: card.report.type, label: card.report.name };
    if (opts.signal?.aborted) return;
    let computedAt: number | undefined;
    const gated = <T>(work: () => Promise<T>) => computing(() => {
      if (opts.signal?.aborted) throw new Abandoned();
      computedAt = Date.now();
      return work();
    });
    let answer: CardRun;
    try {
      const onComputed = (at: number) => (computedAt = at);
      const { result, warnings, cached_at } = await runReport(deps, project, card.report, override, now, { refresh: opts.refresh, gate: gated, onComputed, freshMs: deps.freshMs });
      const computed_at = cached_at ?? computedAt ?? Date.now();
      answer = { ...base, status: 'ok', result, warnings, computed_at, ...(cached_at !== undefined ? { cached_at } : {}) };
    } catch (thrown) {
      if (thrown instanceof Abandoned) return;
      answer = { ...base, status: 'error', error: cardError(deps.log, board, card, thrown) };
    }
    if (!opts.signal?.aborted) onCard(answer);
  }));
}

/** A card's failure as the query endpoint would answer it; an unexpected one is logged and answers 500 in its card only. */
function cardError(log: Logger, board: Board, card: ReportCard, thrown: unknown) {
  // A card stopped by the statement timeout or memory cap answers as the query endpoint would.
  const err = thrown instanceof QueryLimitExceeded ? queryLimitError(thrown) : thrown;
  if (err instanceof AppError) {
    const message = err.extra.message && err.extra.message !== err.error ? err.extra.message : undefined;
    return { status: err.status, error: err.error, ...(message ? { message } : {}) };
  }
  log.error('board card run failed', { boardId: board.id, cardId: card.id, err: err instanceof Error ? err.stack : String(err) });
  return { status: 500, error: 'internal error', message: 'the engine failed to run this card' };
}

/** What a board run covers: the days of the board's range at run time (null: each report ran over its own). */
export const rangeOf = (board: Board, now: number) => (board.date_range ? resolveDateRange(board.date_range, now) : null);

/** Runs every report card of a board (runCards) and answers them together, in layout order. */
export async function runBoard(deps: ReportRunner & { log: Logger; freshMs?: number }, project: ProjectScope, board: Board, cards: CardView[], now = Date.now(), opts: BoardRunOptions = {}) {
  const answers = new Map<number, CardRun>();
  await runCards(deps, project, board, cards, now, opts, (c) => answers.set(c.card_id, c));
  const results = cards.flatMap((c) => answers.get(c.id) ?? []);
  return { board_id: board.id, range: rangeOf(board, now), ran_at: now, cards: results };
}

/** Who a refresh is counted for: the person, the machine token, or the installation's keys together. */
const refresherOf = (auth: AuthContext) => (auth.kind === 'user' ? `u${auth.userId}` : auth.kind === 'token' ? `t${auth.tokenId}` : 'admin');

/**
 * A forced refresh of one board (or one of its cards) by one caller at most once per
 * LIMITS.boardRefreshIntervalMs, counted where the query rate limit counts (PostgreSQL, shared by
 * every API process, when the service runs on it). Beyond that the run is answered from the cache
 * as usual and says the refresh was refused and when the next is allowed (as PostHog's
 * `next_allowed_client_refresh`): a Refresh storm costs the engine nothing.
 */
export async function takeRefresh(counter: RateCounter, auth: AuthContext, boardId: number, cardId?: number): Promise<RefreshState> {
  const interval = LIMITS.boardRefreshIntervalMs;
  const key = `board-refresh:${refresherOf(auth)}:${boardId}${cardId !== undefined ? `:${cardId}` : ''}`;
  const waitMs = await counter.bucket(key, { perSecond: 1000 / interval, burst: 1 });
  const now = Date.now();
  return waitMs > 0 ? { refused: true, next_allowed_at: now + waitMs } : { refused: false, next_allowed_at: now + interval };
}
