import { badRequest } from '../http/errors.js';
import type { DateRange } from '../query/engine/range.js';
import { bodyRange } from '../query/ir/range.js';
import { analysisNamed, spanOfAnalysis, spanOfIr } from '../query/registry.js';
import type { PropertyFilter } from '../query/schema.js';
import { upgradeQuery } from '../query/ir/upgrade.js';
import { irRanges } from '../query/ir/run.js';
import type { QueryV2 } from '../query/ir/document.js';
import type { QueryExecutor, ProjectScope } from '../query/executor.js';
import type { CacheRunOptions, Cached } from '../results-cache/index.js';
import type { Config } from '../config.js';
import { LIMITS } from '../limits.js';
import { isIrDocument } from './query.js';
import { resolveDateRange } from './date-range.js';
import type { DateRangeSpec } from '../query/ir/schema.js';
import type { SavedReport } from './store.js';
import { partialPlan } from './partials.js';

/** What a board lays over each report it runs: its date range instead of the report's, its filters added. */
export interface RunOverride {
  dateRange?: DateRangeSpec | null;
  filters?: PropertyFilter[];
}

export interface ReportRunResult {
  result: unknown;
  warnings: string[];
}

/** The results cache's options (`refresh`, `onComputed`), and `gate`: wraps the computation when the cache misses (a board runs a few at once). */
export interface ReportRunOptions extends CacheRunOptions {
  gate?: <T>(work: () => Promise<T>) => Promise<T>;
}

/** What a report run needs: the query executor every analysis passes, and the range limit. */
export interface ReportRunner {
  executor: QueryExecutor;
  config: Pick<Config, 'maxQueryRangeDays'>;
}

/**
 * A report's query as it runs with an override: a v0 body (the override laid over it) with its
 * analysis, or an upgraded IR document (the board's range as `dateRange`, its filters added to
 * the global `filters`), and the warnings of getting there. Throws the 400 the run answers.
 */
export type Prepared =
  | { kind: 'v0'; body: unknown; range: DateRange; warnings: string[] }
  | { kind: 'ir'; query: QueryV2; warnings: string[] };

/**
 * Runs a saved report through the query executor, as the query endpoints run it, with the same
 * checks (date range, filter count, query size): a v0 body through its v0 analysis, an IR document
 * through the IR. Served from the results cache while the data it read is unchanged
 * (results-cache/): keyed by its type, stored query and override, over the days its kind reads.
 */
export async function runReport(
  runner: ReportRunner, project: ProjectScope, report: SavedReport, override: RunOverride = {}, now = Date.now(), opts: ReportRunOptions = {},
): Promise<Cached<ReportRunResult>> {
  let prepared: Prepared | undefined;
  let failure: unknown;
  try {
    prepared = prepare(runner, report, override, now);
  } catch (err) {
    // Not cacheable: the run answers the error itself.
    failure = err;
  }
  const parts = { t: report.type, q: report.query, o: normalOverride(override) };
  const compute = async (): Promise<ReportRunResult> => {
    if (!prepared) throw failure;
    if (prepared.kind === 'ir') return { result: await runner.executor.ir(project, prepared.query), warnings: prepared.warnings };
    const def = analysisNamed(report.type);
    return { result: await runner.executor.analysis(project, def, prepared.body, prepared.range, 'report'), warnings: prepared.warnings };
  };
  const gate = opts.gate;
  // Trends cut per calendar bucket: a miss computes only the buckets not closed and stored (partials.ts).
  const plan = prepared && partialPlan(runner, project, report.type, prepared, now);
  const partial = plan && gate ? { ...plan, compute: (r: DateRange) => gate(() => plan.compute(r)) } : plan;
  return runner.executor.cached(project, now, parts, prepared && spanOf(runner, report, prepared, now), gate ? () => gate(compute) : compute, { refresh: opts.refresh, onComputed: opts.onComputed, freshMs: opts.freshMs, partial });
}

/** The event times the prepared query reads, by its kind's declaration (undefined when its range does not resolve: the run answers that). */
function spanOf(runner: ReportRunner, report: SavedReport, p: Prepared, now: number): DateRange | undefined {
  if (p.kind === 'v0') return spanOfAnalysis(analysisNamed(report.type), p.body, p.range);
  try {
    const { range, cmp } = irRanges(runner, p.query, now);
    return spanOfIr(p.query, range, cmp);
  } catch {
    return undefined;
  }
}

/** The query a report runs with `override` (runReport's): throws the 400 its run answers. */
export function prepare(runner: ReportRunner, report: SavedReport, override: RunOverride, now: number): Prepared {
  return isIrDocument(report.query) ? prepareIr(report, override) : prepareV0(runner, report, override, now);
}

/** An override that changes nothing (a board without range or filters) keys as no override, so a report shares its entries with its cards. */
const normalOverride = (o: RunOverride) => ({ d: o.dateRange ?? undefined, f: o.filters?.length ? o.filters : undefined });

function withFilters<F>(own: F[] | undefined, added: PropertyFilter[]): Array<F | PropertyFilter> {
  const filters = [...(own ?? []), ...added];
  if (filters.length > LIMITS.filtersPerQuery) {
    throw badRequest('too many filters', { message: `the report's and the board's filters together exceed ${LIMITS.filtersPerQuery}` });
  }
  return filters;
}

/**
 * An IR report: upgraded (its repairs become warnings), the override laid over the current IR,
 * then run as POST /api/query runs it, with the same answers (501 for retention and flows analyses).
 */
function prepareIr(report: SavedReport, override: RunOverride): Prepared {
  const up = upgradeQuery(report.query);
  if (!up.ok) throw badRequest('invalid query', { body: { errors: up.errors } });
  let query: QueryV2 = up.query;
  if (override.dateRange) query = { ...query, dateRange: override.dateRange };
  if (override.filters?.length) query = { ...query, filters: withFilters(query.filters, override.filters) };
  return { kind: 'ir', query, warnings: up.warnings };
}

/** A v0 report: its body (with the override laid over it) through its analysis's declaration, as the endpoint runs it. */
function prepareV0(runner: ReportRunner, report: SavedReport, override: RunOverride, now: number): Prepared {
  const def = analysisNamed(report.type);
  const warnings: string[] = [];
  const body: Record<string, unknown> = { ...report.query };
  if (override.dateRange) {
    // The board's range replaces the report's, rolling or fixed.
    delete body.dateRange;
    Object.assign(body, resolveDateRange(override.dateRange, now));
  }
  if (override.filters?.length) {
    if (def.report?.filterable) {
      body.filters = withFilters(body.filters as PropertyFilter[] | undefined, override.filters);
    } else {
      warnings.push(`board filters do not apply to ${report.type} reports`);
    }
  }
  const parsed = def.body.safeParse(body);
  if (!parsed.success) throw badRequest('invalid report query', { message: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
  const spec = parsed.data as { from?: unknown; to?: unknown };
  // A rolling `dateRange` (retention, flows) resolves on the run's day: a board card rolls forward.
  const range = bodyRange(spec, runner.config.maxQueryRangeDays, now);
  return { kind: 'v0', body: spec, range, warnings };
}
