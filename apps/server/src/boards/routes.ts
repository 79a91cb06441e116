import type { Context } from 'koa';
import { z } from 'zod';
import type { Deps } from '../deps.js';
import { route, type RouteSpec } from '../http/route.js';
import { authOf, requireRole } from '../auth/context.js';
import { actorOf } from '../audit/actor.js';
import { resolveProject, rowInScope } from '../auth/project-scope.js';
import { AppError, badRequest, notFound } from '../http/errors.js';
import { IdParams } from '../projects/schema.js';
import { resultToCsv } from '../reports/csv.js';
import { sendCsv } from '../http/download.js';
import type { Board } from './store.js';
import { cardsToWrite, cardViews, listItem } from './cards.js';
import { boardFreshMs, runBoard, takeRefresh } from './run.js';
import { streamBoardRun, wantsNdjson } from './run-stream.js';
import type { Services } from '../services.js';
import {
  BoardListItemSchema, BoardRunBody, BoardRunQuery, BoardRunSchema, BoardWithCardsSchema, CreateBoardBody, PREVIEW_CARDS, ProjectQuery, UpdateBoardBody,
} from './schema.js';

/** Boards: every role reads and runs, member and above write; another organisation's id is 404. */
export function boardRoutes(deps: Deps, services: Pick<Services, 'executor' | 'boards' | 'boardViews'>): RouteSpec[] {
  const { boards } = services;
  const inScope = rowInScope(deps.projects, 'board', (id) => boards.get(id));
  const load = (ctx: Context, id: number) => inScope(authOf(ctx), id);
  const withCards = async (board: Board) => ({ ...board, cards: await cardViews(deps.db, await boards.cards([board.id])) });
  /**
   * `adhoc`: a range and filters for this run only (a viewer exploring a board saves nothing), and
   * `refresh` (taken from the caller's refresh allowance, takeRefresh). One token of the caller's
   * query rate limit (the bucket of /api/query/*) per run; each card then passes the query executor.
   */
  const prepareRun = async (ctx: Context, board: Board, cardId?: number, adhoc: BoardRunBody = {}) => {
    const { executor } = services;
    await executor.admit(authOf(ctx), board.project_id);
    const layout = await cardViews(deps.db, await boards.cards([board.id]));
    let cards = layout;
    if (cardId !== undefined) {
      cards = cards.filter((c) => c.id === cardId);
      if (cards.length === 0) throw notFound('card');
      if (cards[0].card_type !== 'report') throw badRequest('cardId: a text card has nothing to run');
    }
    const effective = {
      ...board,
      date_range: adhoc.date_range !== undefined ? adhoc.date_range : board.date_range,
      filters: adhoc.replace_filters ? adhoc.filters ?? [] : [...board.filters, ...(adhoc.filters ?? [])],
    };
    const refresh = adhoc.refresh ? await takeRefresh(deps.rateLimits.counter, authOf(ctx), board.id, cardId) : undefined;
    // A person's view (not a machine's) makes the worker keep the board warm (warming.ts): recorded once the run is valid (a
    // write at most once a minute per board, else nothing), never failing it.
    if (authOf(ctx).kind === 'user') await services.boardViews.record(board.id, board.project_id).catch((err) => deps.log.error('board view not recorded', { boardId: board.id, err: String(err) }));
    return { project: await executor.scopeOf(board.project_id), effective, layout, cards, refresh };
  };
  // Cards whose range reaches today are served up to the next warming pass (boardFreshMs).
  const runner = () => ({ executor: services.executor, config: deps.config, log: deps.log, freshMs: boardFreshMs(deps.config) });
  const run = async (ctx: Context, board: Board, cardId?: number, adhoc: BoardRunBody = {}) => {
    const p = await prepareRun(ctx, board, cardId, adhoc);
    const out = await runBoard(runner(), p.project, p.effective, p.cards, Date.now(), { refresh: p.refresh !== undefined && !p.refresh.refused });
    return p.refresh ? { ...out, refresh: p.refresh } : out;
  };
  return [
    route({
      method: 'get', path: '/api/boards', tag: 'Boards', auth: 'api', query: ProjectQuery, response: z.array(BoardListItemSchema),
      summary: "The project's boards with their card count and a preview of their first cards",
      handler: async ({ ctx, query }) => {
        const project = await resolveProject(deps.projects, authOf(ctx), query.projectId);
        const list = await boards.list(project.id);
        const views = await cardViews(deps.db, await boards.cards(list.map((b) => b.id)));
        return list.map((b) => listItem(b, views.filter((c) => c.board_id === b.id), PREVIEW_CARDS));
      },
    }),
    route({
      method: 'post', path: '/api/boards', tag: 'Boards', auth: 'api', query: ProjectQuery, body: CreateBoardBody, response: BoardWithCardsSchema, status: 201,
      summary: 'Creates a board, optionally with its cards (member)',
      handler: async ({ ctx, body, query }) => {
        const auth = requireRole(ctx, 'member');
        const project = await resolveProject(deps.projects, auth, body.projectId ?? query.projectId);
        const cards = body.cards ? cardsToWrite(body.cards) : undefined;
        return withCards(await boards.create(actorOf(ctx), project.id, { name: body.name, dateRange: body.date_range ?? null, filters: body.filters ?? [], cards }));
      },
    }),
    route({
      method: 'get', path: '/api/boards/{id}', tag: 'Boards', auth: 'api', params: IdParams, response: BoardWithCardsSchema,
      summary: 'One board with its cards in layout order (report cards carry their report)',
      handler: async ({ ctx, params }) => withCards(await load(ctx, params.id)),
    }),
    route({
      method: 'put', path: '/api/boards/{id}', tag: 'Boards', auth: 'api', params: IdParams, body: UpdateBoardBody, response: BoardWithCardsSchema,
      summary: 'Changes a board; `cards` replaces the whole card set in one transaction; with `version`, refused (409 `board changed`) when someone saved since (member)',
      handler: async ({ ctx, params, body }) => {
        const board = await load(ctx, params.id);
        requireRole(ctx, 'member');
        const cards = body.cards ? cardsToWrite(body.cards) : undefined;
        return withCards(await boards.update(actorOf(ctx), board.id, { name: body.name, dateRange: body.date_range, filters: body.filters, cards, version: body.version }));
      },
    }),
    route({
      method: 'delete', path: '/api/boards/{id}', tag: 'Boards', auth: 'api', params: IdParams,
      summary: 'Deletes a board and its cards; the reports stay (member)',
      handler: async ({ ctx, params }) => {
        const board = await load(ctx, params.id);
        requireRole(ctx, 'member');
        await boards.delete(actorOf(ctx), board.id);
        return { ok: true };
      },
    }),
    route({
      method: 'post', path: '/api/boards/{id}/run', tag: 'Boards', auth: 'api', params: IdParams, body: BoardRunBody, response: BoardRunSchema,
      summary: "Runs every report card, the board's date range and filters over each report's (the body may replace the range and add or replace filters for this run only, `refresh: true` recomputes bypassing the results cache at most once per 30 s per caller, `card_id` runs one card); each card answers on its own (any role). With `Accept: application/x-ndjson` the answer streams: a first line with the board, one line per card as it finishes (cached first), a last summary line (docs/reports.md)",
      handler: async ({ ctx, params, body }) => {
        const board = await load(ctx, params.id);
        if (!wantsNdjson(ctx)) return run(ctx, board, body.card_id, body);
        const p = await prepareRun(ctx, board, body.card_id, body);
        streamBoardRun(ctx, runner(), p.project, { ...board, cards: p.layout }, p.effective, p.cards, p.refresh);
        return undefined;
      },
    }),
    route({
      method: 'get', path: '/api/boards/{id}/run', tag: 'Boards', auth: 'api', params: IdParams, query: BoardRunQuery,
      summary: 'Runs the board, or one card with `cardId`; `format=csv&cardId=` answers that card as a CSV download (any role)',
      handler: async ({ ctx, params, query }) => {
        const board = await load(ctx, params.id);
        if (query.format === 'csv' && query.cardId === undefined) throw badRequest('cardId: required with format=csv (one CSV per card)');
        const out = await run(ctx, board, query.cardId);
        if (query.format === 'json') return out;
        const card = out.cards[0];
        if (card.status === 'error') throw new AppError(card.error.status, card.error.error, card.error.message ? { message: card.error.message } : {});
        return sendCsv(ctx, `board-${board.id}-card-${card.card_id}`, resultToCsv(card.result));
      },
    }),
  ];
}
