import '../../http/route.js'; // registers `.openapi()` before ../schema.js declares its schemas
import { z } from 'zod';
import { LIMITS } from '../../limits.js';
import { PropertyFilterSchema, UnitSchema } from '../schema.js';
import { AggregationSchema, BreakdownSchema, CalculatedMetricSchema, DATE_PRESETS, DateRangeSpecSchema, METRIC_IDS } from './schema.js';

/**
 * The IR's older shapes, kept so stored documents (saved reports, dashboards, links) still run.
 *
 * v0: no `v`; the bodies of the stable endpoints (`/api/query/segmentation`, `funnel`, `retention`,
 *     `flows`, `sessions`, `metric`), validated by their own schemas in ../schema.ts.
 * v1: the first lettered-metric document (below). Looser than v2: `math` strings with an optional
 *     `property`, `breakdown` a bare key, one `analysis` object whose members were shared by every
 *     kind, `compare: true`, `windowDays` 0 meaning "no window", steps as letters or 0-based
 *     indices, a free-form `chart`. upgrade.ts repairs the pairings v2 made illegal, with warnings,
 *     and carries over the v2 members a v1 document holds when they are valid in v2.
 */
export const V1_MATHS = ['total', 'unique', 'sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99'] as const;

/**
 * v1's members, read leniently: the grammar of v1 was never fixed, so a v1 document may also carry
 * the members every IR document has in v2 (`dateRange` as a spec, `metrics[].kind`,
 * `metrics[].aggregation`, a breakdown object, a compare object). Those are taken as v2 reads them;
 * members neither version has are dropped with a warning by upgrade.ts, not refused.
 */
export const V1MetricSchema = z
  .object({
    id: z.enum(METRIC_IDS).optional(),
    kind: z.literal('event').optional(),
    event: z.string().min(1).max(255),
    math: z.enum(V1_MATHS).optional(),
    property: z.string().min(1).max(500).optional(),
    aggregation: AggregationSchema.optional(),
    filters: z.array(PropertyFilterSchema).max(LIMITS.filtersPerQuery).optional(),
    name: z.string().min(1).max(200).optional(),
  })
  .strict();
/** A v2 calculated metric inside a v1 document (its letter may be left to its position). */
export const V1CalculatedMetricSchema = CalculatedMetricSchema.extend({ id: z.enum(METRIC_IDS).optional() }).strict();

export const V1AnalysisSchema = z
  .object({
    /** One of the registry's IR kinds (checked by upgrade.ts). */
    kind: z.string().min(1).max(50),
    unit: UnitSchema.optional(),
    chart: z.string().max(50).optional(),
    formula: z.string().min(1).max(500).optional(),
    compare: z.boolean().optional(),
    steps: z.array(z.union([z.enum(METRIC_IDS), z.number().int().min(0).max(METRIC_IDS.length - 1)])).min(2).max(LIMITS.funnelSteps.max).optional(),
    windowDays: z.number().int().min(0).max(LIMITS.funnelWindowDays.max).optional(),
    direction: z.enum(['after', 'before']).optional(),
    buckets: z.number().int().min(LIMITS.retentionBuckets.min).max(LIMITS.retentionBuckets.max).optional(),
    depth: z.number().int().min(LIMITS.flowsSteps.min).max(LIMITS.flowsSteps.max).optional(),
  })
  .strict();

export const QueryV1Schema = z
  .object({
    v: z.literal(1),
    dateRange: z.union([
      z.enum(DATE_PRESETS),
      z.object({ from: z.string().max(32), to: z.string().max(32) }).strict(),
      DateRangeSpecSchema,
    ]),
    /** Each read by its own schema (V1MetricSchema, or V1CalculatedMetricSchema for `kind: calculated`) in upgrade.ts. */
    metrics: z.array(z.unknown()).min(1).max(METRIC_IDS.length),
    filters: z.array(PropertyFilterSchema).max(LIMITS.filtersPerQuery).optional(),
    breakdown: z.union([z.string().min(1).max(500), BreakdownSchema]).optional(),
    analysis: V1AnalysisSchema,
  })
  .strict();
export type QueryV1 = Omit<z.infer<typeof QueryV1Schema>, 'metrics'> & { metrics: Array<z.infer<typeof V1MetricSchema> | z.infer<typeof V1CalculatedMetricSchema>> };

/** A v1 analysis as v1's own members make it (upgrade.ts sets aside the members only v2 has). */
export type V1Analysis = z.infer<typeof V1AnalysisSchema>;
