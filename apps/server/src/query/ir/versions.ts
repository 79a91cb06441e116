import '../../http/route.js'; // registers `.openapi()` before ../schema.js declares its schemas
import { z } from 'zod';
import { LIMITS } from '../../limits.js';
import { PropertyFilterSchema, UnitSchema } from '../schema.js';
import { METRIC_IDS } from './schema.js';

/**
 * The IR's older shapes, kept so stored documents (saved reports, dashboards, links) still run.
 *
 * v0: no `v`; the bodies of the stable endpoints (`/api/query/segmentation`, `funnel`, `retention`,
 *     `flows`, `sessions`, `metric`), validated by their own schemas in ../schema.ts.
 * v1: the first lettered-metric document (below). Looser than v2: `math` strings with an optional
 *     `property`, `breakdown` a bare key, one `analysis` object whose members were shared by every
 *     kind, `compare: true`, `windowDays` 0 meaning "no window", steps as letters or 0-based
 *     indices, a free-form `chart`. upgrade.ts repairs the pairings v2 made illegal, with warnings.
 */
export const V1_MATHS = ['total', 'unique', 'sum', 'avg', 'min', 'max', 'median', 'p75', 'p90', 'p95', 'p99'] as const;

const V1Metric = z
  .object({
    id: z.enum(METRIC_IDS).optional(),
    event: z.string().min(1).max(255),
    math: z.enum(V1_MATHS).default('total'),
    property: z.string().min(1).max(500).optional(),
    filters: z.array(PropertyFilterSchema).max(LIMITS.filtersPerQuery).optional(),
    name: z.string().min(1).max(200).optional(),
  })
  .strict();

export const QueryV1Schema = z
  .object({
    v: z.literal(1),
    dateRange: z.union([
      z.enum(['today', 'yesterday', '7d', '30d', '3m', '6m', '12m']),
      z.object({ from: z.string().max(32), to: z.string().max(32) }).strict(),
    ]),
    metrics: z.array(V1Metric).min(1).max(METRIC_IDS.length),
    filters: z.array(PropertyFilterSchema).max(LIMITS.filtersPerQuery).optional(),
    breakdown: z.string().min(1).max(500).optional(),
    analysis: z
      .object({
        kind: z.enum(['trend', 'funnel', 'retention', 'flows']),
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
      .strict(),
  })
  .strict();
export type QueryV1 = z.infer<typeof QueryV1Schema>;

export const V0_TYPES = ['segmentation', 'funnel', 'retention', 'flows', 'sessions', 'metric'] as const;
export type V0Type = (typeof V0_TYPES)[number];

/** The v0 type a body without a hint most likely is (by its distinguishing members). */
export function guessV0Type(doc: Record<string, unknown>): V0Type {
  if ('steps' in doc && Array.isArray(doc.steps)) return 'funnel';
  if ('bornEvent' in doc || 'returnEvent' in doc) return 'retention';
  if ('direction' in doc) return 'flows';
  if ('definitionId' in doc) return 'metric';
  if ('event' in doc || 'type' in doc) return 'segmentation';
  return 'sessions';
}
