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

/** The same shapes as TypeScript types (what the kinds' IR runners return). */
export interface TrendSeries {
  /** The metric's letter, or `formula`. */
  metricId: string;
  name: string;
  /** Breakdown value; null when the event lacks the property; absent without a breakdown. */
  segment?: string | null;
  range: 'primary' | 'comparison';
  /** One value per bucket of its range (`buckets` or `comparison.buckets`). */
  data: number[];
  /** The figure over the whole range: events (count), identities (unique), the aggregate (property ops); null for calculated metrics. */
  total: number | null;
  /** With a comparison range, event metrics only: identities behind the metric in the comparison range that are absent from the primary range. */
  dropped?: number;
}

export interface TrendResult {
  kind: 'trend';
  unit: string;
  range: { from: string; to: string };
  buckets: string[];
  comparison?: { from: string; to: string; buckets: string[] };
  series: TrendSeries[];
  /** Breakdown segments beyond `breakdown.limit`, not shown. */
  omittedSegments: number;
  /** The project's annotations on days inside the primary range. */
  annotations: Array<{ id: number; date: string; description: string }>;
}

export interface IrFunnelStep {
  metricId: string;
  event: string;
  name: string;
  /** Identities reaching the step. */
  count: number;
  conversionFromPrevious: number;
  conversionFromStart: number;
  droppedCount: number;
  dropoffRate: number;
  /** Per breakdown value of the path's step-0 event (null: property missing). */
  segments: Array<{ segment: string | null; count: number; conversionFromStart: number }>;
  meanSecondsToConvert: number | null;
  medianSecondsToConvert: number | null;
}

export interface IrFunnelResult {
  kind: 'funnel';
  range: { from: string; to: string };
  windowDays: number;
  steps: IrFunnelStep[];
  comparison?: { from: string; to: string; steps: IrFunnelStep[] };
}

export type IrResult = TrendResult | IrFunnelResult;
