import { z } from 'zod';
import { LIMITS } from '../../../limits.js';
import { EventName, DateField, ProjectIdField, RollingRangeField } from '../../body-parts.js';

/** The v0 retention body and answer: what a client sends and gets back. */
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
