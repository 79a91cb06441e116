import { z } from 'zod';
import '../../http/route.js';

/** Result shapes of POST /api/query (documented in /openapi.json; kept stable). */
const Range = { from: z.string(), to: z.string() };
export const TrendResultSchema = z
  .object({
    kind: z.literal('trend'), unit: z.string(), range: z.object(Range), buckets: z.array(z.string()),
    comparison: z.object({ ...Range, buckets: z.array(z.string()) }).optional(),
    series: z.array(z.object({
      metricId: z.string(), name: z.string(), segment: z.string().nullable().optional(), range: z.enum(['primary', 'comparison']),
      data: z.array(z.number()), total: z.number().nullable(), dropped: z.number().int().optional(),
    })),
    omittedSegments: z.number().int(),
    /** The project's annotations on days inside the primary range. */
    annotations: z.array(z.object({ id: z.number().int(), date: z.string(), description: z.string() })),
    /** Repairs made while upgrading an older document. */
    warnings: z.array(z.string()).optional(),
  })
  .openapi('IrTrendResult');
const FunnelStep = z.object({
  metricId: z.string(), event: z.string(), name: z.string(), count: z.number().int(),
  conversionFromPrevious: z.number(), conversionFromStart: z.number(), droppedCount: z.number().int(), dropoffRate: z.number(),
  segments: z.array(z.object({ segment: z.string().nullable(), count: z.number().int(), conversionFromStart: z.number() })),
  meanSecondsToConvert: z.number().nullable(), medianSecondsToConvert: z.number().nullable(),
});
export const IrFunnelResultSchema = z
  .object({
    kind: z.literal('funnel'), range: z.object(Range), windowDays: z.number().int(), steps: z.array(FunnelStep),
    comparison: z.object({ ...Range, steps: z.array(FunnelStep) }).optional(),
    warnings: z.array(z.string()).optional(),
  })
  .openapi('IrFunnelResult');
export const IrResultSchema = z.discriminatedUnion('kind', [TrendResultSchema, IrFunnelResultSchema]).openapi('IrResult');
