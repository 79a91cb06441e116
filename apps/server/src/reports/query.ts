import { badRequest } from '../http/errors.js';
import { isRowId } from '../http/columns.js';
import { bodyRange } from '../query/ir/range.js';
import { analysisNamed, REPORT_TYPES, type ReportType } from '../query/registry.js';

/** The v0 endpoint body a report type holds: its analysis's declaration (query/registry.ts) says. */
const v0Schema = (type: ReportType) => analysisNamed(type).body;

/** The IR analysis kind a report type holds (a metric report's trend charts calculated metrics). */
export const irKindOfReport = (type: ReportType): string => analysisNamed(type).ir.kind;

export const isIrDocument = (query: Record<string, unknown>) => Object.prototype.hasOwnProperty.call(query, 'v');

const invalid = (path: string, message: string) =>
  badRequest(`${path}: ${message}`, { code: 'validation_failed', message: `${path}: ${message}` });

/**
 * Checks a report's query against its type and returns what is stored: the body exactly as sent,
 * minus `projectId` (the report's project is the one that counts). A v0 body must be a valid body
 * of the endpoint `type` names, dates included; an IR document's analysis must be `type`'s kind.
 * Errors name their path from the request body (`query.steps`), nothing is written on any.
 */
export async function checkReportQuery(
  metrics: { get(id: number): Promise<{ project_id: number } | undefined> },
  projectId: number, type: ReportType, query: Record<string, unknown>, maxRangeDays: number,
  checkIr: (type: ReportType, doc: Record<string, unknown>) => void,
): Promise<Record<string, unknown>> {
  const { projectId: _dropped, ...stored } = query;
  if (isIrDocument(stored)) {
    checkIr(type, stored);
    return stored;
  }
  const parsed = v0Schema(type).safeParse(stored);
  if (!parsed.success) {
    const fits = REPORT_TYPES.filter((t) => t !== type && v0Schema(t).safeParse(stored).success);
    if (fits.length) throw invalid('query', `a ${fits[0]} query does not fit a report of type ${type}`);
    const issue = parsed.error.issues[0];
    throw invalid(['query', ...issue.path].join('.'), issue.message);
  }
  const body = parsed.data as { from?: unknown; to?: unknown; definitionId?: number };
  try {
    bodyRange(body, maxRangeDays);
  } catch {
    const both = 'dateRange' in body && (body.from !== undefined || body.to !== undefined);
    throw invalid('query', both ? 'give dateRange or from and to, not both' : 'invalid date range (from and to are YYYY-MM-DD, from <= to)');
  }
  if (type === 'metric') {
    const metric = isRowId(body.definitionId!) ? await metrics.get(body.definitionId!) : undefined;
    if (!metric || metric.project_id !== projectId) throw invalid('query.definitionId', 'no calculated metric with this id in the project');
  }
  return stored;
}
