import { badRequest } from '../http/errors.js';
import { upgradeQuery } from '../query/ir/upgrade.js';
import { lookupCohorts } from '../query/engine/cohorts.js';
import type { DefinitionStore } from '../definitions/store.js';
import type { CohortDefinition } from '../cohorts/schema.js';
import type { IrIssue } from '../query/ir/schema.js';
import { irKindOfReport, isIrDocument } from './query.js';
import type { ReportType } from './schema.js';
import type { SavedReport } from './store.js';

const invalid = (path: string, message: string) =>
  badRequest(`${path}: ${message}`, { code: 'validation_failed', message: `${path}: ${message}` });
const at = (i: IrIssue) => (i.path ? `query.${i.path}` : 'query');

/**
 * An IR document saved as a report: it must upgrade to the current IR (an older version is
 * repaired, not refused) and its analysis must be the kind the report's type names. Errors carry
 * the IR's dotted paths under `query.`, one entry per problem, as POST /api/query answers them.
 */
export function checkIrQuery(type: ReportType, doc: Record<string, unknown>): void {
  const up = upgradeQuery(doc);
  if (!up.ok) {
    const first = up.errors[0];
    throw badRequest(`${at(first)}: ${first.message}`, {
      code: 'validation_failed', message: up.errors.map((e) => `${at(e)}: ${e.message}`).join('; '),
      body: { errors: up.errors.map((e) => ({ ...e, path: at(e) })) },
    });
  }
  const want = irKindOfReport(type);
  const kind = up.query.analysis.kind;
  if (kind !== want) throw invalid('query.analysis.kind', `a report of type ${type} holds a ${want} analysis (got ${kind})`);
}

/**
 * The cohorts an IR report names (filters, breakdown) exist in its project: otherwise 400 naming
 * each field (`query.filters.0.cohort`), and nothing is stored. A cohort deleted later makes the
 * report's runs answer that 400.
 */
export async function checkIrCohorts(cohorts: Pick<DefinitionStore<CohortDefinition>, 'get'>, projectId: number, doc: Record<string, unknown>): Promise<void> {
  const up = upgradeQuery(doc);
  if (!up.ok) return;
  const { errors } = await lookupCohorts(cohorts, projectId, up.query);
  if (!errors.length) return;
  throw badRequest(`${at(errors[0])}: ${errors[0].message}`, {
    code: 'validation_failed', message: errors.map((e) => `${at(e)}: ${e.message}`).join('; '),
    body: { errors: errors.map((e) => ({ ...e, path: at(e) })) },
  });
}

/**
 * What GET adds to a report: its query upgraded to the current IR (a v0 body is read as the body
 * of the endpoint its type names) and the repairs the upgrade made. A query that no longer
 * upgrades (a v0 body valid when saved is always upgradable) shows why in `queryWarnings`.
 */
export function withQueryV1(report: SavedReport): SavedReport & { queryV1?: Record<string, unknown>; queryWarnings: string[] } {
  const up = upgradeQuery(report.query, isIrDocument(report.query) ? {} : { type: report.type });
  if (up.ok) return { ...report, queryV1: up.query as unknown as Record<string, unknown>, queryWarnings: up.warnings };
  return { ...report, queryWarnings: up.errors.map((e) => `not upgradable: ${e.path || 'query'}: ${e.message}`) };
}
