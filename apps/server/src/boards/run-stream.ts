import type { Context } from 'koa';
import type { Logger } from '../http/errors.js';
import type { ReportRunner } from '../reports/run.js';
import type { ProjectScope } from '../query/executor.js';
import type { CardView } from './cards.js';
import type { Board } from './store.js';
import { rangeOf, runCards, type CardRun, type RefreshState } from './run.js';

export const NDJSON = 'application/x-ndjson';

/** The request asks for the streamed form of a board run (`Accept: application/x-ndjson` preferred to JSON). */
export const wantsNdjson = (ctx: Context) => ctx.accepts(['application/json', NDJSON]) === NDJSON;

/**
 * A board run (`board`: the saved board with this run's range and filters, `cards` those to run)
 * as newline-delimited JSON, one line as each piece is ready, so a page draws every
 * card the moment its answer exists and lays the board out before any:
 *
 * 1. `{"kind":"board","board":{…BoardWithCards},"range","ran_at","refresh"?}`: the board itself,
 *    as GET /api/boards/{id} answers it (every card, in layout order);
 * 2. `{"kind":"card","card":{…}}` per report card run, in the order answers finish (cached ones
 *    first), each as a card of the JSON answer (`status: ok` with `computed_at`, or `status: error`);
 * 3. `{"kind":"done","board_id","range","ran_at","cards","errors","refresh"?}`.
 *
 * The status (200) and headers are sent before any card runs, so nothing that goes wrong later is
 * a 5xx: a card's failure is its own `error` card, anything else an `{"kind":"error","error":{…}}`
 * line instead of `done`. When the client goes away, cards not started are not run.
 */
export function streamBoardRun(
  ctx: Context, deps: ReportRunner & { log: Logger; freshMs?: number }, project: ProjectScope, saved: Board & { cards: CardView[] }, board: Board, cards: CardView[],
  refresh: RefreshState | undefined,
): void {
  const abort = new AbortController();
  const res = ctx.res;
  res.once('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  // Gone already while the run was being prepared.
  if (res.destroyed) abort.abort();
  // Written here rather than through Koa's response (`ctx.respond = false`), so a client that goes
  // away is the end of the answer, not an error. Headers set before (CORS) are on `res` already.
  ctx.status = 200;
  ctx.respond = false;
  res.writeHead(200, {
    'Content-Type': `${NDJSON}; charset=utf-8`,
    'Cache-Control': 'no-store',
    // Proxies that buffer answers (nginx) pass each line on as it comes.
    'X-Accel-Buffering': 'no',
  });
  const open = () => !res.destroyed && !res.writableEnded;
  const write = (line: Record<string, unknown>) => {
    if (open()) res.write(`${JSON.stringify(line)}\n`);
  };
  const now = Date.now();
  const range = rangeOf(board, now);
  const refreshed = refresh ? { refresh } : {};
  write({ kind: 'board', board: saved, range, ran_at: now, ...refreshed });
  let count = 0;
  let errors = 0;
  const onCard = (card: CardRun) => {
    count++;
    let line: string;
    try {
      line = JSON.stringify({ kind: 'card', card });
    } catch (err) {
      // An answer that cannot be written as JSON fails in its own card.
      deps.log.error('board card answer not serializable', { boardId: board.id, cardId: card.card_id, err: err instanceof Error ? err.stack : String(err) });
      card = { card_id: card.card_id, report_id: card.report_id, type: card.type, label: card.label, status: 'error', error: { status: 500, error: 'internal error', message: 'the answer of this card could not be written' } };
      line = JSON.stringify({ kind: 'card', card });
    }
    if (card.status === 'error') errors++;
    if (open()) res.write(`${line}\n`);
  };
  void runCards(deps, project, board, cards, now, { refresh: refresh !== undefined && !refresh.refused, signal: abort.signal }, onCard)
    .then(
      () => write({ kind: 'done', board_id: board.id, range, ran_at: now, cards: count, errors, ...refreshed }),
      (err) => {
        deps.log.error('board run stream failed', { boardId: board.id, err: err instanceof Error ? err.stack : String(err) });
        write({ kind: 'error', error: { status: 500, error: 'internal error', message: 'the board run stopped; the cards above are complete' } });
      },
    )
    .finally(() => {
      if (open()) res.end();
    });
}
