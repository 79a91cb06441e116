import type { z } from 'zod';
import type { Config } from '../../config.js';
import type { Analyses } from '../analyses.js';
import type { EventStore } from '../../ports/events/index.js';
import type { DefinitionStore } from '../../definitions/store.js';
import type { CalculatedMetricDefinition } from '../../definitions/schema.js';
import type { AnnotationStore } from '../../annotations/store.js';
import type { QueryContext } from '../engine/context.js';
import type { QueryGuard } from '../engine/guard.js';
import type { DateRange } from '../engine/range.js';
import type { Compare, IrDocument, IrIssue } from '../ir/schema.js';
import type { V1Analysis } from '../ir/versions.js';
import type { IrResult } from '../ir/results.js';

/** What a v0 runner is given besides the project's context, body and range. */
export interface RunEnv {
  /** The event store, every read capped at the guard's `maxRows` (guard.ts's boundedEvents). */
  events: EventStore;
  guard: QueryGuard;
  annotations: AnnotationStore;
  metrics: DefinitionStore<CalculatedMetricDefinition>;
}

/** What an IR runner reads: the event store as the executor hands it (capped, tagged), the configuration and the analyses' stores. */
export interface IrDeps {
  events: EventStore;
  config: Pick<Config, 'maxQueryRangeDays' | 'queryGuard'>;
  /** `definitions.cohorts`: the cohorts a document names (engine/cohorts.ts). */
  analyses: Pick<Analyses, 'definitions' | 'annotations'>;
}

/** What the upgrader hands a kind's `fromV1`: the metric letters and how to report repairs. */
export interface V1Context {
  ids: string[];
  warnings: string[];
  /** `{chart}` when v1's chart is one of `allowed`, else `{}` with a warning. */
  chart(allowed: readonly string[]): { chart?: string };
  /** A warning that `analysis.<member>` was dropped, and why. */
  dropped(member: string, why: string): void;
  /** `{compare: previous_period}` when v1 had `compare: true`. */
  compare: { compare?: Compare };
  /** The analysis's members only v2 has (upgrade.ts carries those v2 takes after fromV1). */
  extras: Record<string, unknown>;
}

/** Checks one metric reference (`needEvent`: only event metrics fit there). */
export type RefCheck = (id: string, path: string, needEvent: boolean) => void;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyObject = z.ZodObject<any, any>;

/** One IR analysis kind. */
export interface IrKindDef<S extends AnyObject = AnyObject> {
  kind: string;
  /** The `analysis` member of a v2 document of this kind (strict, with its OpenAPI name). */
  analysis: S;
  /** v1's analysis of this kind → the v2 analysis (members v2 also has are carried by upgrade.ts). */
  fromV1(a: V1Analysis, v1: V1Context): Record<string, unknown>;
  /** Checks that zod cannot make: references to metric letters, pairings. */
  resolve(query: IrDocument<z.output<S>>, ref: RefCheck, out: IrIssue[]): void;
  /** The comparison the analysis asks for, if it can have one. */
  compare?(a: z.output<S>): Compare | undefined;
  /** The query guard's estimate before running (400 `query too large` naming what to narrow). */
  estimate?(guard: QueryGuard, query: IrDocument<z.output<S>>, range: DateRange, cmp?: DateRange): void;
  /**
   * The event times a run reads (the results cache keys and invalidates answers by them); absent:
   * its range and comparison period (also when it answers undefined). A kind reading past them
   * (retention's return buckets, memberships of the cohorts a document names) says so.
   */
  span?(query: IrDocument<z.output<S>>, range: DateRange, cmp?: DateRange): DateRange | undefined;
  /** How POST /api/query runs it; absent: the kind answers 501 there. */
  run?(deps: IrDeps, q: QueryContext, query: IrDocument<z.output<S>>, range: DateRange, cmp?: DateRange): Promise<IrResult>;
}

/** One analysis of the stable v0 contract (`POST /api/query/<name>`). */
export interface AnalysisDef<N extends string = string, B extends z.ZodType = z.ZodType, S extends AnyObject = AnyObject> {
  /** Its path under /api/query/, its v0 type and, with `report`, its saved-report type. */
  name: N;
  summary: string;
  body: B;
  response: z.ZodType;
  /** The guard's estimate before running (400 `query too large: …`). */
  estimate(guard: QueryGuard, body: z.output<B>, range: DateRange): void;
  run(env: RunEnv, q: QueryContext, body: z.output<B>, range: DateRange): Promise<unknown>;
  /** The event times a run reads, when it reads past its range (retention's return buckets); absent: its range. */
  span?(body: z.output<B>, range: DateRange): DateRange;
  /** The project's annotations inside the range join the result (`annotations`) on every run, or on report runs only. */
  annotate?: 'always' | 'reports';
  /** A saved-report type; `filterable`: a board's filters join the body's own. */
  report?: { filterable: boolean };
  /** Recognises a body sent without its type (tried in ascending `order`). */
  guess: { order: number; when(doc: Record<string, unknown>): boolean };
  /** The IR kind its bodies upgrade to, and the v2 document's members other than `v` and `dateRange`. */
  ir: IrKindDef<S>;
  toIr(body: z.output<B>): Record<string, unknown>;
}

/** Keeps the literal name and the presence of `report` in the declaration's type. */
export function defineAnalysis<const N extends string, B extends z.ZodType, S extends AnyObject, const R extends { filterable: boolean } | undefined = undefined>(
  def: AnalysisDef<N, B, S> & { report?: R },
): AnalysisDef<N, B, S> & { report: R } {
  return def as AnalysisDef<N, B, S> & { report: R };
}

