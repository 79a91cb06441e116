import type { QueryContext } from './engine/context.js';
import type { DateRange } from './engine/range.js';
import type { AnalysisDef, IrKindDef, RunEnv } from './kinds/define.js';
import type { IrDocument } from './ir/schema.js';
import { segmentation } from './kinds/segmentation/declaration.js';
import { funnel } from './kinds/funnel/declaration.js';
import { retention } from './kinds/retention/declaration.js';
import { flows } from './kinds/flows/declaration.js';
import { sessions } from './kinds/sessions/declaration.js';
import { calculatedMetric } from './kinds/calculated-metric/declaration.js';

/**
 * One declaration per analysis (as PostHog's query-runner registry): its v0 endpoint (path, body
 * and result schemas, cost estimate, runner), whether it is a saved-report type, how its bodies
 * upgrade to the Query IR and the IR kind they become (with that kind's analysis schema, checks,
 * estimate and runner). The v0 routes (routes.ts), saved reports and boards (reports/), the IR
 * (ir/document.ts, ir/upgrade.ts, ir/run.ts) and the guard all read this list; adding an analysis
 * is a folder in kinds/ plus its dialect SQL, and one line below. The kinds never import this file
 * or what reads it (npm run check:edges, LAYERS).
 */
export const ANALYSES = [segmentation, funnel, retention, flows, sessions, calculatedMetric] as const;

type Declared = (typeof ANALYSES)[number];
export type AnalysisName = Declared['name'];
export type ReportType = Extract<Declared, { report: { filterable: boolean } }>['name'];

/** The saved-report types, in declaration order. */
export const REPORT_TYPES = ANALYSES.filter((a) => a.report !== undefined).map((a) => a.name) as unknown as readonly [ReportType, ...ReportType[]];
export const ANALYSIS_NAMES = ANALYSES.map((a) => a.name) as unknown as readonly [AnalysisName, ...AnalysisName[]];

const byName = new Map<string, AnalysisDef>(ANALYSES.map((a) => [a.name, a as unknown as AnalysisDef]));
/** The declaration of a v0 analysis (or report type). */
export function analysisNamed(name: string): AnalysisDef {
  const a = byName.get(name);
  if (!a) throw new Error(`no analysis ${name}`);
  return a;
}

/** The IR kinds, each once, in declaration order (trend is shared by segmentation and calculated metrics). */
export const IR_KINDS: readonly IrKindDef[] = [...new Set(ANALYSES.map((a) => a.ir as unknown as IrKindDef))];
const byKind = new Map(IR_KINDS.map((k) => [k.kind, k]));
export function irKindOf(kind: string): IrKindDef {
  const k = byKind.get(kind);
  if (!k) throw new Error(`no IR kind ${kind}`);
  return k;
}

/** The v0 analysis a body sent without a type most likely is, by its distinguishing members. */
export function guessAnalysis(doc: Record<string, unknown>): AnalysisName {
  const ordered = [...ANALYSES].sort((x, y) => x.guess.order - y.guess.order);
  return (ordered.find((a) => a.guess.when(doc)) ?? ordered[ordered.length - 1]).name;
}

/** The event times a v0 analysis reads over `range` (its declaration's `span`, else the range). */
export const spanOfAnalysis = (def: AnalysisDef, body: unknown, range: DateRange): DateRange => def.span?.(body, range) ?? range;

/** The event times an IR document reads: its kind's `span`, else its range and comparison period. */
export function spanOfIr(doc: IrDocument<unknown>, range: DateRange, cmp?: DateRange): DateRange {
  const own = irKindOf((doc.analysis as { kind: string }).kind).span?.(doc as IrDocument<never>, range, cmp);
  if (own) return own;
  return cmp ? { fromMs: Math.min(range.fromMs, cmp.fromMs), toEndMs: Math.max(range.toEndMs, cmp.toEndMs) } : range;
}

/**
 * Runs a v0 analysis once its body is parsed, the range resolved and the estimate passed: the
 * endpoint (`via: endpoint`) and saved reports (`via: report`) run it through here, so both answer alike.
 */
export async function runAnalysis(def: AnalysisDef, env: RunEnv, q: QueryContext, body: unknown, range: DateRange, via: 'endpoint' | 'report'): Promise<unknown> {
  const annotate = def.annotate === 'always' || (def.annotate === 'reports' && via === 'report');
  if (!annotate) return def.run(env, q, body, range);
  const [result, annotations] = await Promise.all([def.run(env, q, body, range), env.annotations.inRange(q.projectId, range)]);
  return { ...(result as object), annotations };
}
