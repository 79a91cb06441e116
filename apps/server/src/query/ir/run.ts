import { AppError } from '../../http/errors.js';
import type { DateRange } from '../engine/range.js';
import { IR_KINDS, irKindOf } from '../registry.js';
import type { IrDeps } from '../kinds/define.js';
import { comparisonRange, resolveRange } from './range.js';
import type { QueryV2 } from './document.js';

/** The ranges a document runs over (400 `invalid date range` when they do not resolve). */
export function irRanges(deps: { config: Pick<IrDeps['config'], 'maxQueryRangeDays'> }, query: QueryV2, now = Date.now()): { range: DateRange; cmp?: DateRange } {
  const range = resolveRange(query.dateRange, deps.config.maxQueryRangeDays, now);
  const compare = irKindOf(query.analysis.kind).compare?.(query.analysis);
  return { range, cmp: compare ? comparisonRange(range, compare) : undefined };
}

export const notImplemented = (kind: string) =>
  new AppError(501, 'not implemented', { message: `analysis kind ${kind} is not executed by POST /api/query yet; use POST /api/query/${kind}` });

/** Kinds the IR knows but does not execute: their declarations have no `run` (registry.ts). */
const NOT_EXECUTED = new Set(IR_KINDS.filter((k) => !k.run).map((k) => k.kind));

/**
 * The kind of a document's `analysis` when POST /api/query knows it but does not execute it:
 * such a document answers 501 whatever its other members hold (it is not validated first).
 */
export function unexecutedKind(doc: unknown): string | undefined {
  const analysis = typeof doc === 'object' && doc !== null ? (doc as { analysis?: unknown }).analysis : undefined;
  const kind = typeof analysis === 'object' && analysis !== null ? (analysis as { kind?: unknown }).kind : undefined;
  return typeof kind === 'string' && NOT_EXECUTED.has(kind) ? kind : undefined;
}
