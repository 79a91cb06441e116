import type { Deps } from '../deps.js';
import { badRequest, notFound } from '../http/errors.js';
import { analysesOf } from '../query/analyses.js';
import { dateRange } from '../query/range.js';
import { runSegmentation } from '../query/segmentation.js';
import { boundedEvents, checkV0Estimate } from '../query/guard.js';
import { runFunnel } from '../query/funnel.js';
import { runRetention } from '../query/retention.js';
import { runFlows } from '../query/flows.js';
import { runMetric } from '../query/metric.js';
import type { PropertyFilter } from '../query/schema.js';
import { upgradeQuery } from '../query/ir/upgrade.js';
import { runQuery } from '../query/ir/run.js';
import type { QueryV2 } from '../query/ir/schema.js';
import { LIMITS } from '../limits.js';
import { isIrDocument, V0_SCHEMAS } from './query.js';
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

const FILTERABLE = new Set(['segmentation', 'funnel']);

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

async function runV0(deps: Deps, report: SavedReport, override: RunOverride, now: number): Promise<ReportRunResult> {
  const warnings: string[] = [];
  const body: Record<string, unknown> = { ...report.query };
  if (override.dateRange) Object.assign(body, resolveDateRange(override.dateRange, now));
  if (override.filters?.length) {
    if (FILTERABLE.has(report.type)) {
      body.filters = withFilters(body.filters as PropertyFilter[] | undefined, override.filters);
    } else {
      warnings.push(`board filters do not apply to ${report.type} reports`);
    }
  }
  const parsed = V0_SCHEMAS[report.type].safeParse(body);
  if (!parsed.success) throw badRequest('invalid report query', { message: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
  const spec = parsed.data;
  const range = dateRange(spec.from, spec.to, deps.config.maxQueryRangeDays);
  const guard = deps.config.queryGuard;
  checkV0Estimate(guard, report.type, spec as Record<string, unknown>, range);
  const events = boundedEvents(deps.events, guard);
  const { contexts, definitions, annotations: notes } = analysesOf(deps);
  const q = await contexts.forProject(report.project_id);
  switch (report.type) {
    case 'segmentation': {
      const [result, annotations] = await Promise.all([runSegmentation(events, q, spec, range, guard), notes.inRange(report.project_id, range)]);
      return { result: { ...result, annotations }, warnings };
    }
    case 'funnel': return { result: await runFunnel(events, q, spec, range), warnings };
    case 'retention': return { result: await runRetention(events, q, spec, range), warnings };
    case 'flows': return { result: await runFlows(events, q, spec, range), warnings };
    case 'metric': {
      const metric = await definitions.metrics.get(spec.definitionId);
      if (!metric || metric.project_id !== report.project_id) throw notFound('metric');
      const [result, annotations] = await Promise.all([
        runMetric(events, q, metric.name, metric.definition, spec.unit, range), notes.inRange(report.project_id, range),
      ]);
      return { result: { ...result, annotations }, warnings };
    }
  }
}
