import type { Deps } from '../deps.js';
import { badRequest } from '../http/errors.js';
import { analysesOf } from '../query/analyses.js';
import { dateRange } from '../query/range.js';
import { boundedEvents } from '../query/guard.js';
import { analysisNamed, runAnalysis } from '../query/registry.js';
import type { PropertyFilter } from '../query/schema.js';
import { upgradeQuery } from '../query/ir/upgrade.js';
import { runQuery } from '../query/ir/run.js';
import type { QueryV2 } from '../query/ir/schema.js';
import { LIMITS } from '../limits.js';
import { isIrDocument } from './query.js';
import { resolveDateRange } from './date-range.js';
import type { DateRangeSpec } from '../query/ir/schema.js';
import type { SavedReport } from './store.js';
import { cachedReportRun, type CachedRun } from '../results-cache/index.js';

/** What a board lays over each report it runs: its date range instead of the report's, its filters added. */
export interface RunOverride {
  dateRange?: DateRangeSpec | null;
  filters?: PropertyFilter[];
}

export interface ReportRunResult {
  result: unknown;
  warnings: string[];
}

/**
 * Runs a saved report through the same compilers as the query endpoints, with the same checks
 * (date range, filter count, query size): a v0 body through its v0 analysis, an IR document
 * through the IR.
 */
export async function runReport(deps: Deps, report: SavedReport, override: RunOverride = {}, now = Date.now()): Promise<CachedRun> {
  // Served from the process's results cache while the data it read is unchanged (results-cache/).
  return cachedReportRun(deps, report, override, now, () => (isIrDocument(report.query) ? runIr(deps, report, override) : runV0(deps, report, override, now)));
}

function withFilters(own: PropertyFilter[] | undefined, added: PropertyFilter[]): PropertyFilter[] {
  const filters = [...(own ?? []), ...added];
  if (filters.length > LIMITS.filtersPerQuery) {
    throw badRequest('too many filters', { message: `the report's and the board's filters together exceed ${LIMITS.filtersPerQuery}` });
  }
  return filters;
}

/**
 * An IR report: upgraded (its repairs become warnings), the override laid over the current IR
 * (the board's range as `dateRange`, its filters added to the global `filters`), then run as
 * POST /api/query runs it, with the same answers (501 for retention and flows analyses).
 */
async function runIr(deps: Deps, report: SavedReport, override: RunOverride): Promise<ReportRunResult> {
  const up = upgradeQuery(report.query);
  if (!up.ok) throw badRequest('invalid query', { body: { errors: up.errors } });
  let query: QueryV2 = up.query;
  if (override.dateRange) query = { ...query, dateRange: override.dateRange };
  if (override.filters?.length) query = { ...query, filters: withFilters(query.filters, override.filters) };
  return { result: await runQuery(deps, report.project_id, query), warnings: up.warnings };
}

/** A v0 report: its body (with the override laid over it) through its analysis's declaration, as the endpoint runs it. */
async function runV0(deps: Deps, report: SavedReport, override: RunOverride, now: number): Promise<ReportRunResult> {
  const def = analysisNamed(report.type);
  const warnings: string[] = [];
  const body: Record<string, unknown> = { ...report.query };
  if (override.dateRange) Object.assign(body, resolveDateRange(override.dateRange, now));
  if (override.filters?.length) {
    if (def.report?.filterable) {
      body.filters = withFilters(body.filters as PropertyFilter[] | undefined, override.filters);
    } else {
      warnings.push(`board filters do not apply to ${report.type} reports`);
    }
  }
  const parsed = def.body.safeParse(body);
  if (!parsed.success) throw badRequest('invalid report query', { message: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
  const spec = parsed.data as { from: unknown; to: unknown };
  const range = dateRange(spec.from, spec.to, deps.config.maxQueryRangeDays);
  const guard = deps.config.queryGuard;
  def.estimate(guard, spec, range);
  const { contexts, definitions, annotations } = analysesOf(deps);
  const q = await contexts.forProject(report.project_id);
  const env = { events: boundedEvents(deps.events, guard), guard, annotations, metrics: definitions.metrics };
  return { result: await runAnalysis(def, env, q, spec, range, 'report'), warnings };
}
