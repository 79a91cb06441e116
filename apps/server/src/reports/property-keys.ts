import type { PropertyFilter } from '../query/schema.js';
import type { QueryV2 } from '../query/ir/document.js';
import { isCohortBreakdown, propertyFilters } from '../query/ir/schema.js';
import type { SavedReport } from './store.js';
import { prepare, type ReportRunner, type RunOverride } from './run.js';

/**
 * The event property keys a report reads with `override` (a board's range and filters laid over
 * it, as runReport runs it): those its filters test and its breakdown splits by, and on the IR
 * the properties its metrics aggregate. Every one is read from the events' key/value lists unless
 * materialised (query/property-materializer.ts). Cohorts and derived events are not looked into
 * (their memberships and sources are read once per query). A report that would not run reads nothing.
 */
export function reportPropertyKeys(runner: ReportRunner, report: SavedReport, override: RunOverride, now: number): string[] {
  let prepared;
  try {
    prepared = prepare(runner, report, override, now);
  } catch {
    return [];
  }
  const keys = prepared.kind === 'ir' ? irPropertyKeys(prepared.query) : v0PropertyKeys(prepared.body as V0Body);
  return [...new Set(keys)];
}

/** What of a parsed v0 body names properties (segmentation and funnels; other kinds have neither). */
interface V0Body {
  filters?: PropertyFilter[];
  breakdown?: string | string[];
}

function v0PropertyKeys(body: V0Body): string[] {
  const breakdown = body.breakdown === undefined ? [] : Array.isArray(body.breakdown) ? body.breakdown : [body.breakdown];
  return [...(body.filters ?? []).map((f) => f.key), ...breakdown];
}

function irPropertyKeys(q: QueryV2): string[] {
  const keys = (propertyFilters(q.filters) ?? []).map((f) => f.key);
  for (const m of q.metrics) {
    if (m.kind !== 'event') continue;
    keys.push(...(m.filters ?? []).map((f) => f.key));
    if ('property' in m.aggregation) keys.push(m.aggregation.property);
  }
  if (q.breakdown && !isCohortBreakdown(q.breakdown)) keys.push(q.breakdown.property, ...(q.breakdown.thenBy ?? []));
  return keys;
}
