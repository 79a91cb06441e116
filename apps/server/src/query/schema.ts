import { z } from 'zod';
import { LIMITS } from '../limits.js';
import { DateRangeSpecSchema } from './date-range-spec.js';
import { MAX_BREAKDOWN_PROPERTIES } from './breakdowns.js';

export const PropertyFilterSchema = z
  .object({
    key: z.string().min(1).max(500),
    op: z.enum(['eq', 'neq', 'contains', 'set', 'not_set']),
    value: z.string().max(10_000).optional(),
  })
  .strict()
  .refine((f) => f.op === 'set' || f.op === 'not_set' || f.value !== undefined, { message: 'value is required for eq, neq and contains', path: ['value'] })
  .openapi('PropertyFilter');
export type PropertyFilter = z.infer<typeof PropertyFilterSchema>;

export const Filters = z.array(PropertyFilterSchema).max(LIMITS.filtersPerQuery);
export const UnitSchema = z.enum(['hour', 'day', 'week', 'month']);
const EventName = z.string().min(1).max(255);
/** Dates are validated (and refused with `invalid date range`) by the handlers, so any string passes here. */
const DateField = z.unknown().openapi({ type: 'string', format: 'date' });
const ProjectIdField = z.union([z.string(), z.number()]).optional();
/**
 * Instead of from/to (not both): a range resolved on the day the query runs, so a saved report of
 * "the last 30 days" keeps rolling (query/ir/range.ts's bodyRange). Retention and flows take it.
 */
const RollingRangeField = DateRangeSpecSchema.optional();

export const SegmentationQuerySchema = z
  .object({
    event: EventName, from: DateField, to: DateField, unit: UnitSchema, type: z.enum(['total', 'unique']),
    /** A property, or up to three whose values make one series each combination ("fr / chrome"). */
    breakdown: z.union([z.string().min(1).max(500), z.array(z.string().min(1).max(500)).min(1).max(MAX_BREAKDOWN_PROPERTIES)]).optional(),
    filters: Filters.optional(), projectId: ProjectIdField,
  })
  .strict() // unknown members are refused (README), not dropped
  .openapi('SegmentationQuery');
export type SegmentationQuery = z.infer<typeof SegmentationQuerySchema>;

export const SegmentationResultSchema = z
  .object({
    buckets: z.array(z.string()),
    series: z.array(z.object({
      name: z.string(), data: z.array(z.object({ bucket: z.string(), value: z.number() })),
      /**
       * The series over the whole range (segmentation answers): the events, or the unique
       * identities counted once each, which the buckets' sum is not. Added later: older answers lack it.
       */
      total: z.number().openapi({ description: 'the series over the whole range: events, or unique identities each counted once (not the buckets\' sum); segmentation answers' }).optional(),
    })),
    /** The project's annotations on days inside the range (segmentation answers; see docs/reports.md). */
    annotations: z.array(z.object({ id: z.number().int(), date: z.string(), description: z.string() })).optional(),
  })
  .openapi('SegmentationResult');
export type SegmentationResult = z.infer<typeof SegmentationResultSchema>;

export const FunnelQuerySchema = z
  .object({
    steps: z.array(EventName).min(LIMITS.funnelSteps.min).max(LIMITS.funnelSteps.max),
    from: DateField, to: DateField,
    windowDays: z.number().int().min(LIMITS.funnelWindowDays.min).max(LIMITS.funnelWindowDays.max).default(LIMITS.funnelWindowDays.default),
    breakdown: z.string().min(1).max(500).optional(), filters: Filters.optional(), projectId: ProjectIdField,
  })
  .strict()
  .openapi('FunnelQuery');
export type FunnelQuery = z.infer<typeof FunnelQuerySchema>;

export const FunnelStepSchema = z.object({
  event: z.string(), count: z.number().int(), conversionFromPrevious: z.number(), conversionFromStart: z.number(),
  droppedCount: z.number().int(), dropoffRate: z.number(), convertedUserIds: z.array(z.string()), droppedUserIds: z.array(z.string()),
  segments: z.array(z.object({ name: z.string(), count: z.number().int(), conversionFromStart: z.number() })),
  meanSecondsToConvert: z.number().nullable(), medianSecondsToConvert: z.number().nullable(),
});
export const FunnelResultSchema = z.array(FunnelStepSchema).openapi('FunnelResult');
export type FunnelStep = z.infer<typeof FunnelStepSchema>;

export const RetentionQuerySchema = z
  .object({
    bornEvent: EventName, returnEvent: EventName, from: DateField.optional(), to: DateField.optional(),
    unit: z.enum(['day', 'week']).default('week'),
    buckets: z.number().int().min(LIMITS.retentionBuckets.min).max(LIMITS.retentionBuckets.max).default(LIMITS.retentionBuckets.default),
    dateRange: RollingRangeField, projectId: ProjectIdField,
  })
  .strict()
  .openapi('RetentionQuery');
export type RetentionQuery = z.infer<typeof RetentionQuerySchema>;
export const RetentionResultSchema = z.array(z.object({ cohort: z.string(), size: z.number().int(), counts: z.array(z.number().int()) })).openapi('RetentionResult');
export type RetentionRow = { cohort: string; size: number; counts: number[] };

export const FlowsQuerySchema = z
  .object({
    event: EventName.refine((e) => e !== '$all_events', { message: '$all_events is not allowed for flows' }),
    direction: z.enum(['after', 'before']),
    steps: z.number().int().min(LIMITS.flowsSteps.min).max(LIMITS.flowsSteps.max).default(LIMITS.flowsSteps.default),
    from: DateField.optional(), to: DateField.optional(),
    limit: z.number().int().min(LIMITS.flowsLimit.min).max(LIMITS.flowsLimit.max).default(LIMITS.flowsLimit.default),
    dateRange: RollingRangeField, projectId: ProjectIdField,
  })
  .strict()
  .openapi('FlowsQuery');
export type FlowsQuery = z.infer<typeof FlowsQuerySchema>;
export const FlowsResultSchema = z.object({ paths: z.array(z.object({ path: z.array(z.string()), count: z.number().int() })), total: z.number().int() }).openapi('FlowsResult');
export type FlowsResult = z.infer<typeof FlowsResultSchema>;

export const SessionsQuerySchema = z
  .object({ from: DateField, to: DateField, unit: UnitSchema.default('day'), projectId: ProjectIdField })
  .strict()
  .openapi('SessionsQuery');
export type SessionsQuery = z.infer<typeof SessionsQuerySchema>;
export const SessionsResultSchema = z
  .object({ series: z.array(z.object({ bucket: z.string(), sessions: z.number().int(), avgDurationSec: z.number() })) })
  .openapi('SessionsResult');
export type SessionsResult = z.infer<typeof SessionsResultSchema>;

export const MetricQuerySchema = z
  .object({ definitionId: z.number().int().positive(), from: DateField, to: DateField, unit: UnitSchema, projectId: ProjectIdField })
  .strict()
  .openapi('MetricQuery');
export type MetricQuery = z.infer<typeof MetricQuerySchema>;
