import { z } from 'zod';
import { text } from '../http/columns.js';
import { PropertyFilterSchema } from '../query/schema.js';
import { LIMITS } from '../limits.js';
import { parseDay } from '../query/engine/range.js';
import { DateRangeSpecSchema } from '../query/ir/schema.js';
import { ReportTypeSchema, SavedReportSchema } from '../reports/schema.js';

/** Most cards one board holds (a Mixpanel board or PostHog dashboard past this is several). */
export const MAX_CARDS_PER_BOARD = 100;
/** Report cards of one board run at once; the rest wait, so a board never floods the engine. */
export const BOARD_RUN_CONCURRENCY = 4;
export const SPANS = [4, 6, 8, 12] as const;
export const HEIGHTS = ['short', 'medium', 'tall'] as const;
const PREVIEW_CARDS = 4;
export { PREVIEW_CARDS };

const validDay = (s: string) => {
  try {
    parseDay(s);
    return true;
  } catch {
    return false;
  }
};
/** A board's range, checked on write so every saved board can run. */
export const BoardDateRange = DateRangeSpecSchema.superRefine((r, ctx) => {
  if (r.kind !== 'absolute') return;
  if (!validDay(r.from)) ctx.addIssue({ code: 'custom', path: ['from'], message: 'expected a date YYYY-MM-DD' });
  else if (!validDay(r.to)) ctx.addIssue({ code: 'custom', path: ['to'], message: 'expected a date YYYY-MM-DD' });
  else if (r.from > r.to) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
}).openapi({ description: 'DateRangeSpec: {kind: preset, preset} or {kind: absolute, from, to}' });

/** Board filters are PropertyFilters, added to each report's own filters when the board runs. */
export const BoardFilters = z.array(PropertyFilterSchema).max(LIMITS.filtersPerQuery);

export const CardSpan = z.union(SPANS.map((s) => z.literal(s)) as unknown as [z.ZodLiteral<4>, z.ZodLiteral<6>, z.ZodLiteral<8>, z.ZodLiteral<12>])
  .openapi({ type: 'integer', enum: [...SPANS] });
export const CardHeight = z.enum(HEIGHTS);
/**
 * How a report card shows its report: `chart` (the report's own chart), `number` (each series'
 * total over the range, with the change from the previous period when the report compares) or
 * `table` (the series by bucket). Per card, so one report can be a chart on one board and a
 * number on another. Text cards are always `chart`.
 */
export const CARD_DISPLAYS = ['chart', 'number', 'table'] as const;
export const CardDisplay = z.enum(CARD_DISPLAYS).openapi('CardDisplay');

export const BoardCardWriteSchema = z
  .object({
    cardType: z.enum(['report', 'text']).default('report'),
    reportId: z.number().int().positive().optional(),
    text: text().min(1).max(10_000).optional(),
    position: z.number().int().min(0).max(10_000).optional(),
    span: CardSpan.default(6),
    height: CardHeight.default('medium'),
    display: CardDisplay.default('chart'),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.cardType === 'report') {
      if (c.reportId === undefined) ctx.addIssue({ code: 'custom', path: ['reportId'], message: 'required when cardType is report' });
      if (c.text !== undefined) ctx.addIssue({ code: 'custom', path: ['text'], message: 'only text cards carry text' });
    } else {
      if (c.text === undefined) ctx.addIssue({ code: 'custom', path: ['text'], message: 'required when cardType is text' });
      if (c.reportId !== undefined) ctx.addIssue({ code: 'custom', path: ['reportId'], message: 'only report cards carry a reportId' });
      if (c.display !== 'chart') ctx.addIssue({ code: 'custom', path: ['display'], message: 'only report cards show as a number or a table' });
    }
  })
  .openapi('BoardCardWrite');
export type BoardCardWrite = z.infer<typeof BoardCardWriteSchema>;
const Cards = z.array(BoardCardWriteSchema).max(MAX_CARDS_PER_BOARD);

const Name = text().trim().min(1).max(200);
export const CreateBoardBody = z
  .object({
    projectId: z.union([z.string(), z.number()]).optional(),
    name: Name, date_range: BoardDateRange.nullable().optional(), filters: BoardFilters.optional(), cards: Cards.optional(),
  })
  .strict();
export const UpdateBoardBody = z
  .object({
    name: Name.optional(), date_range: BoardDateRange.nullable().optional(), filters: BoardFilters.optional(), cards: Cards.optional(),
    /** The board's `version` the change was made on: when someone saved since, 409 `board changed` and nothing is written. */
    version: z.number().int().positive().max(2_147_483_647).optional(),
  })
  .strict();

const cardBase = {
  id: z.number().int(), board_id: z.number().int(), position: z.number().int(), span: z.number().int(), height: CardHeight, display: CardDisplay,
};
export const CardSchema = z
  .discriminatedUnion('card_type', [
    z.object({ ...cardBase, card_type: z.literal('report'), report_id: z.number().int(), text: z.null(), report: SavedReportSchema }),
    z.object({ ...cardBase, card_type: z.literal('text'), report_id: z.null(), text: z.string() }),
  ])
  .openapi('Card');

const boardFields = {
  id: z.number().int(), project_id: z.number().int(), created_by: z.number().int().nullable(), name: z.string(),
  date_range: DateRangeSpecSchema.nullable(), filters: z.array(z.record(z.string(), z.unknown())),
  created_at: z.number().int(), updated_at: z.number().int(),
  /** 1 when created, one more on every write; send it back with a change to refuse overwriting someone else's. */
  version: z.number().int(),
};
export const BoardSchema = z.object(boardFields).openapi('Board');
export const BoardWithCardsSchema = z.object({ ...boardFields, cards: z.array(CardSchema) }).openapi('BoardWithCards');
export const BoardListItemSchema = z
  .object({
    ...boardFields, card_count: z.number().int(),
    preview: z.array(z.object({ card_type: z.enum(['report', 'text']), report_type: ReportTypeSchema.nullable(), label: z.string() })),
  })
  .openapi('BoardListItem');

export const ProjectQuery = z.object({ projectId: z.string().optional() });
/**
 * A run-time override, saved nowhere: `date_range` replaces the board's (null: each report's own),
 * `filters` join the board's, or replace them with `replace_filters` (someone trying a board without one of its filters).
 */
export const BoardRunBody = z
  .object({
    date_range: BoardDateRange.nullable().optional(), filters: BoardFilters.optional(), replace_filters: z.boolean().optional(),
    /** Recompute, bypassing the results cache (the new answers are stored); at most once per 30 s per caller and board (else answered from the cache, `refresh.refused`). */
    refresh: z.boolean().optional(),
    /** Run this card only (a card's own Refresh). */
    card_id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .strict();
export type BoardRunBody = z.infer<typeof BoardRunBody>;
export const BoardRunQuery = z.object({
  format: z.enum(['json', 'csv']).default('json'),
  /** One card only; required with `format=csv` (one CSV per card). */
  cardId: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
});

export const BoardRefreshSchema = z.object({ refused: z.boolean(), next_allowed_at: z.number().int() }).openapi('BoardRefresh');

const cardRunBase = { card_id: z.number().int(), report_id: z.number().int(), type: ReportTypeSchema, label: z.string() };
export const BoardRunSchema = z
  .object({
    board_id: z.number().int(),
    /** The days the board's range covered at run time (null: each report ran over its own). */
    range: z.object({ from: z.string(), to: z.string() }).nullable(),
    ran_at: z.number().int(),
    /** With `refresh: true`: whether it was refused (answered from the cache) and when the caller's next is allowed (Unix ms). */
    refresh: BoardRefreshSchema.optional(),
    cards: z.array(z.discriminatedUnion('status', [
      z.object({ ...cardRunBase, status: z.literal('ok'), result: z.unknown(), warnings: z.array(z.string()),
        /** When the answer was computed (Unix ms), now or earlier when it came from the results cache. */
        computed_at: z.number().int(),
        /** Present when the card's answer came from the results cache: when it was computed (Unix ms). */
        cached_at: z.number().int().optional() }),
      z.object({ ...cardRunBase, status: z.literal('error'), error: z.object({ status: z.number().int(), error: z.string(), message: z.string().optional() }) }),
    ])),
  })
  .openapi('BoardRun');
