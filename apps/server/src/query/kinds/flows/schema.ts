import { z } from 'zod';
import { LIMITS } from '../../../limits.js';
import { EventName, DateField, ProjectIdField, RollingRangeField } from '../../body-parts.js';

/** The v0 flows body and answer: what a client sends and gets back. */
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
