import type { Deps } from '../../deps.js';
import { AppError } from '../../http/errors.js';
import { boundedEvents, checkCells } from '../guard.js';
import type { DateRange } from '../range.js';
import { irContext } from './context.js';
import { runIrFunnel, type IrFunnelResult } from './funnel.js';
import { bucketCount, comparisonRange, resolveRange } from './range.js';
import type { QueryV2 } from './schema.js';
import { runTrend, type TrendResult } from './trend.js';

export type IrResult = TrendResult | IrFunnelResult;
export type IrDeps = Pick<Deps, 'db' | 'events' | 'config'>;

/** The ranges a document runs over (400 `invalid date range` when they do not resolve). */
export function irRanges(deps: IrDeps, query: QueryV2, now = Date.now()): { range: DateRange; cmp?: DateRange } {
  const range = resolveRange(query.dateRange, deps.config.maxQueryRangeDays, now);
  const a = query.analysis;
  const cmp = (a.kind === 'trend' || a.kind === 'funnel') && a.compare ? comparisonRange(range, a.compare) : undefined;
  return { range, cmp };
}

export const notImplemented = (kind: string) =>
  new AppError(501, 'not implemented', { message: `analysis kind ${kind} is not executed by POST /api/query yet; use POST /api/query/${kind}` });

/** Kinds the IR knows but does not execute. */
const NOT_EXECUTED = new Set(['retention', 'flows', 'sessions']);

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
 * Runs an upgraded (v2) document in a project. Throws 400 `invalid date range`, 400 `query too
 * large: …` (before the engine runs), 400 `invalid query` for references only the project can
 * resolve, and 501 for retention, flows and sessions analyses.
 */
export async function runQuery(deps: IrDeps, projectId: number, query: QueryV2): Promise<IrResult> {
  const a = query.analysis;
  if (a.kind !== 'trend' && a.kind !== 'funnel') throw notImplemented(a.kind);
  const { range, cmp } = irRanges(deps, query);
  if (a.kind === 'trend') {
    const buckets = Math.max(bucketCount(a.unit, range), cmp ? bucketCount(a.unit, cmp) : 0);
    const series = (query.metrics.length + (a.formula ? 1 : 0)) * (query.breakdown ? query.breakdown.limit : 1) * (cmp ? 2 : 1);
    checkCells(deps.config.queryGuard, series, buckets, [
      ...(a.unit === 'month' ? [] : ['analysis.unit']), 'dateRange', ...(query.breakdown ? ['breakdown.limit'] : []), 'metrics', ...(cmp ? ['analysis.compare'] : []),
    ]);
  }
  const q = await irContext(deps, projectId, query);
  // Breakdown segments are unknown before running: every engine answer is capped (guard.ts).
  const bounded = { ...deps, events: boundedEvents(deps.events, deps.config.queryGuard) };
  if (a.kind === 'trend') return runTrend(bounded, q, query, a, range, cmp);
  return runIrFunnel(bounded.events, q, query, a, range, cmp);
}
