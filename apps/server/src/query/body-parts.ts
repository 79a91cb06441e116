/**
 * The parts the v0 query bodies share (each kind's body and answer are in kinds/<kind>/schema.ts;
 * schema.ts exports them all under their old names).
 */
import { z } from 'zod';
import { LIMITS } from '../limits.js';
import { DateRangeSpecSchema } from './date-range-spec.js';

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
export const EventName = z.string().min(1).max(255);
/** Dates are validated (and refused with `invalid date range`) by the handlers, so any string passes here. */
export const DateField = z.unknown().openapi({ type: 'string', format: 'date' });
export const ProjectIdField = z.union([z.string(), z.number()]).optional();
/**
 * Instead of from/to (not both): a range resolved on the day the query runs, so a saved report of
 * "the last 30 days" keeps rolling (query/ir/range.ts's bodyRange). Retention and flows take it.
 */
export const RollingRangeField = DateRangeSpecSchema.optional();
