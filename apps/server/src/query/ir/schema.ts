import { z } from 'zod';
import '../../http/route.js'; // registers `.openapi()` on zod schemas before any is declared here
import { LIMITS } from '../../limits.js';
import { PropertyFilterSchema, UnitSchema, type PropertyFilter } from '../schema.js';
import { MAX_BREAKDOWN_PROPERTIES } from '../breakdowns.js';
import type { DateRangeSpec } from '../date-range-spec.js';

/**
 * The Query IR, version 2 (current). Shaped after PostHog's TrendsQuery/FunnelsQuery and Mixpanel's
 * Insights: lettered metrics (series) with their own filters and aggregation, global filters, one
 * breakdown, and an analysis that references metrics by letter (a trend's formula, a funnel's
 * steps). Every object is strict: an unknown member is refused with its path. docs/query-ir.md
 * is the prose version; versions.ts holds v0 and v1 and upgrade.ts turns them into this. The
 * document itself (QueryV2Schema) is assembled in document.ts from the analyses the registry
 * declares (../registry.ts); an analysis's schema here is referenced by its declaration.
 */
export const IR_VERSION = 2 as const;
export const METRIC_IDS = ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J'] as const;
export const MetricIdSchema = z.enum(METRIC_IDS);
export type MetricId = z.infer<typeof MetricIdSchema>;

export { DATE_PRESETS, DateRangeSpecSchema, type DateRangeSpec } from '../date-range-spec.js';

export const IrFilters = z.array(PropertyFilterSchema).max(LIMITS.filtersPerQuery);
const EventName = z.string().min(1).max(255);
const PropertyKey = z.string().min(1).max(500);

/** Aggregations over a property's numeric value (events whose value is not a number are skipped). */
export const PROPERTY_OPS = ['sum', 'avg', 'min', 'max', 'p50', 'p75', 'p90', 'p95', 'p99'] as const;
export type PropertyOp = (typeof PROPERTY_OPS)[number];
export const AggregationSchema = z
  .discriminatedUnion('op', [
    z.object({ op: z.literal('count') }).strict(),
    z.object({ op: z.literal('unique') }).strict(),
    z.object({ op: z.enum(PROPERTY_OPS), property: PropertyKey }).strict(),
  ])
  .openapi('IrAggregation');
export type Aggregation = z.infer<typeof AggregationSchema>;

export const EventMetricSchema = z
  .object({
    id: MetricIdSchema,
    kind: z.literal('event'),
    /** A concrete event name, `$all_events`, or a derived event of the project. */
    event: EventName,
    /** Applied to this metric only, AND-ed with the query's global `filters`. */
    filters: IrFilters.optional(),
    aggregation: AggregationSchema,
    /** Display name (defaults to the event name). */
    name: z.string().min(1).max(200).optional(),
  })
  .strict()
  .openapi('IrEventMetric');
/** A saved calculated metric (`/api/definitions/metrics`), run per bucket; trends only. */
export const CalculatedMetricSchema = z
  .object({ id: MetricIdSchema, kind: z.literal('calculated'), definitionId: z.number().int().positive(), name: z.string().min(1).max(200).optional() })
  .strict()
  .openapi('IrCalculatedMetric');
export const MetricSchema = z.discriminatedUnion('kind', [EventMetricSchema, CalculatedMetricSchema]).openapi('IrMetric');
export type EventMetric = z.infer<typeof EventMetricSchema>;
export type Metric = z.infer<typeof MetricSchema>;

/**
 * `limit`: the segments kept (largest first by the first metric); the rest are counted in `omittedSegments`.
 * `thenBy`: up to two more properties (trends): a segment is then each combination of values,
 * named "fr / chrome" (a missing property as `(none)` in its place).
 */
export const PropertyBreakdownSchema = z
  .object({
    property: PropertyKey,
    thenBy: z.array(PropertyKey).min(1).max(MAX_BREAKDOWN_PROPERTIES - 1).optional(),
    limit: z.number().int().min(LIMITS.irBreakdownSegments.min).max(LIMITS.irBreakdownSegments.max).default(LIMITS.irBreakdownSegments.default),
  })
  .strict()
  .openapi('IrPropertyBreakdown');
export type PropertyBreakdown = z.output<typeof PropertyBreakdownSchema>;

/** Most cohorts one query names, in its filters and its breakdown together (each is one membership query). */
export const MAX_QUERY_COHORTS = 10;
const CohortId = z.number().int().positive().max(2 ** 31 - 1);

/**
 * A breakdown by cohorts (trends and funnels): one segment per cohort, in the order listed, named
 * by the cohort's name, each counting only its members' events (a person in two cohorts counts in
 * both); `notInAny` adds a last segment `Not in any cohort` of everyone else. Membership is the
 * cohort's as of the run (cohorts/membership.ts). Not combined with properties.
 */
export const CohortBreakdownSchema = z
  .object({
    cohorts: z.array(CohortId).min(1).max(MAX_QUERY_COHORTS)
      .refine((ids) => new Set(ids).size === ids.length, { message: 'each cohort at most once' }),
    notInAny: z.boolean().default(false),
  })
  .strict()
  .openapi('IrCohortBreakdown');
export type CohortBreakdown = z.output<typeof CohortBreakdownSchema>;
export const NOT_IN_ANY_COHORT = 'Not in any cohort';

/** A property breakdown or a cohort breakdown (told apart by `cohorts`; a member of the other refused by name). */
export const BreakdownSchema = z.union([PropertyBreakdownSchema, CohortBreakdownSchema]).openapi('IrBreakdown');
export type Breakdown = PropertyBreakdown | CohortBreakdown;
export const isCohortBreakdown = (b: Breakdown | undefined): b is CohortBreakdown => !!b && 'cohorts' in b;

/**
 * A global filter on the event's person: its canonical identity is (`in`) or is not (`not_in`) a
 * member of the cohort now (cohorts/membership.ts). Only in the document's `filters`.
 */
export const CohortFilterSchema = z
  .object({ cohort: CohortId, op: z.enum(['in', 'not_in']) })
  .strict()
  .openapi('IrCohortFilter');
export type CohortFilter = z.infer<typeof CohortFilterSchema>;
export type GlobalFilter = PropertyFilter | CohortFilter;
export const isCohortFilter = (f: GlobalFilter): f is CohortFilter => 'cohort' in f;
/** The property filters of a document's filters (cohort filters apply through the query context, engine/cohorts.ts). */
export const propertyFilters = (fs: readonly GlobalFilter[] | undefined): PropertyFilter[] | undefined =>
  fs?.filter((f): f is PropertyFilter => !isCohortFilter(f));

/** The document's `filters`: property filters and cohort filters (a member with `cohort` is a cohort filter). */
export const GlobalFilters = z.array(z.union([PropertyFilterSchema, CohortFilterSchema]).openapi('IrGlobalFilter')).max(LIMITS.filtersPerQuery);

/** `previous_period`: the same number of days right before the range; `offset`: the range shifted back `days`. */
export const CompareSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('previous_period') }).strict(),
    z.object({ kind: z.literal('offset'), days: z.number().int().min(1).max(3660) }).strict(),
  ])
  .openapi('IrCompare');
export type Compare = z.infer<typeof CompareSchema>;

export const TREND_CHARTS = ['line', 'bar', 'area', 'table', 'number'] as const;
export const TrendAnalysisSchema = z
  .object({
    kind: z.literal('trend'),
    unit: UnitSchema,
    chart: z.enum(TREND_CHARTS).default('line'),
    /** Arithmetic over metric letters (`A / B * 100`); adds one series named `formula`. */
    formula: z.string().min(1).max(500).optional(),
    compare: CompareSchema.optional(),
  })
  .strict()
  .openapi('IrTrendAnalysis');

export const FUNNEL_CHARTS = ['steps', 'table'] as const;
export const FunnelAnalysisSchema = z
  .object({
    kind: z.literal('funnel'),
    /** Metric letters in order; each step matches its metric's event and filters. */
    steps: z.array(MetricIdSchema).min(LIMITS.funnelSteps.min).max(LIMITS.funnelSteps.max),
    /** Longest time from step 0 for a later step to count (edge included). */
    window: z.object({ value: z.number().int().min(1).max(LIMITS.funnelWindowDays.max), unit: z.enum(['day', 'week']) }).strict()
      .default({ value: LIMITS.funnelWindowDays.default, unit: 'day' }),
    /** `ordered`: each step strictly after the previous one, other events allowed in between. */
    order: z.literal('ordered').default('ordered'),
    chart: z.enum(FUNNEL_CHARTS).default('steps'),
    compare: CompareSchema.optional(),
  })
  .strict()
  .openapi('IrFunnelAnalysis');

/** Valid documents that POST /api/query answers with 501 (the v0 endpoints serve them; v0 bodies upgrade to these). */
export const RetentionAnalysisSchema = z
  .object({
    kind: z.literal('retention'), born: MetricIdSchema, returning: MetricIdSchema,
    unit: z.enum(['day', 'week']).default('week'),
    buckets: z.number().int().min(LIMITS.retentionBuckets.min).max(LIMITS.retentionBuckets.max).default(LIMITS.retentionBuckets.default),
  })
  .strict()
  .openapi('IrRetentionAnalysis');
export const FlowsAnalysisSchema = z
  .object({
    kind: z.literal('flows'), anchor: MetricIdSchema, direction: z.enum(['after', 'before']),
    steps: z.number().int().min(LIMITS.flowsSteps.min).max(LIMITS.flowsSteps.max).default(LIMITS.flowsSteps.default),
    limit: z.number().int().min(LIMITS.flowsLimit.min).max(LIMITS.flowsLimit.max).default(LIMITS.flowsLimit.default),
  })
  .strict()
  .openapi('IrFlowsAnalysis');

export const SessionsAnalysisSchema = z.object({ kind: z.literal('sessions'), unit: UnitSchema.default('day') }).strict().openapi('IrSessionsAnalysis');

/**
 * A v2 document whose analysis is `A`: what a kind's declaration and IR runner see. The document
 * of every kind (QueryV2, a union over the registry's kinds) is assembled above the registry, in
 * document.ts.
 */
export interface IrDocument<A> {
  v: 2;
  dateRange: DateRangeSpec;
  filters?: GlobalFilter[];
  metrics: Metric[];
  breakdown?: Breakdown;
  analysis: A;
}
export type TrendAnalysis = z.infer<typeof TrendAnalysisSchema>;
export type FunnelAnalysis = z.infer<typeof FunnelAnalysisSchema>;
export type RetentionAnalysis = z.infer<typeof RetentionAnalysisSchema>;
export type FlowsAnalysis = z.infer<typeof FlowsAnalysisSchema>;

export interface IrIssue {
  /** Dotted path into the document (`metrics.1.aggregation.op`); '' for the document itself. */
  path: string;
  message: string;
  /** Only for resolve-time errors (unknown reference, illegal position, unsupported version). */
  code?: string;
}
