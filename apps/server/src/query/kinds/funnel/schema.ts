import { z } from 'zod';
import { LIMITS } from '../../../limits.js';
import { EventName, DateField, ProjectIdField, Filters } from '../../body-parts.js';

/** The v0 funnel body and answer: what a client sends and gets back. */
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
