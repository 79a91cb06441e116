import { badRequest } from '../http/errors.js';
import { IR_KIND } from './query.js';
import type { ReportType } from './schema.js';

const invalid = (path: string, message: string) =>
  badRequest(`${path}: ${message}`, { code: 'validation_failed', message: `${path}: ${message}` });

/** An IR document saved as a report: its analysis must be the kind the report's type names. */
export function checkIrQuery(type: ReportType, doc: Record<string, unknown>): void {
  const want = IR_KIND[type];
  if (!want) throw invalid('query', `a ${type} report holds a v0 body; IR documents fit segmentation, funnel, retention and flows reports`);
  const analysis = doc.analysis as { kind?: unknown } | undefined;
  const kind = analysis && typeof analysis === 'object' ? analysis.kind : undefined;
  if (kind !== want) throw invalid('query.analysis.kind', `a report of type ${type} holds a ${want} analysis (got ${JSON.stringify(kind ?? null)})`);
}
