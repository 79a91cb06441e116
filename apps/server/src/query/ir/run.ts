import { AppError } from '../../http/errors.js';
import { boundedEvents } from '../guard.js';
import type { DateRange } from '../range.js';
import { IR_KINDS, irKindOf, type IrDeps, type IrDocument, type IrResult } from '../registry.js';
import { irContext } from './context.js';
import { comparisonRange, resolveRange } from './range.js';
import type { QueryV2 } from './schema.js';

export type { IrResult, IrDeps } from '../registry.js';

/** The ranges a document runs over (400 `invalid date range` when they do not resolve). */
export function irRanges(deps: IrDeps, query: QueryV2, now = Date.now()): { range: DateRange; cmp?: DateRange } {
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

/**
 * Runs an upgraded (v2) document in a project by its kind's declaration. Throws 400 `invalid date
 * range`, 400 `query too large: …` (the kind's estimate, before the engine runs), 400 `invalid
 * query` for references only the project can resolve, and 501 for kinds without a runner
 * (retention, flows, sessions).
 */
export async function runQuery(deps: IrDeps, projectId: number, query: QueryV2): Promise<IrResult> {
  const kind = irKindOf(query.analysis.kind);
  if (!kind.run) throw notImplemented(kind.kind);
  const { range, cmp } = irRanges(deps, query);
  const doc = query as IrDocument<never>;
  kind.estimate?.(deps.config.queryGuard, doc, range, cmp);
  const q = await irContext(deps, projectId, query);
  // Breakdown segments are unknown before running: every engine answer is capped (guard.ts).
  const bounded = { ...deps, events: boundedEvents(deps.events, deps.config.queryGuard) };
  return kind.run(bounded, q, doc, range, cmp);
}
