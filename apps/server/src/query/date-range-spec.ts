import { z } from 'zod';
import '../http/zod-openapi.js';

/**
 * A date range as a document keeps it: a preset that rolls with the day it runs on (`30d`: the 30
 * days ending today) or fixed days. The Query IR's `dateRange` (ir/schema.ts re-exports it) and the
 * retention and flows bodies' `dateRange` (schema.ts) are this schema; it lives on its own so both
 * can import it without importing each other.
 */
export const DATE_PRESETS = ['today', 'yesterday', '7d', '30d', '3m', '6m', '12m'] as const;
/** Dates are checked (and refused with a plain `invalid date range`) when the range is resolved. */
export const DateRangeSpecSchema = z
  .discriminatedUnion('kind', [
    z.object({ kind: z.literal('preset'), preset: z.enum(DATE_PRESETS) }).strict(),
    z.object({ kind: z.literal('absolute'), from: z.string().max(32), to: z.string().max(32) }).strict(),
  ])
  .openapi('DateRangeSpec');
export type DateRangeSpec = z.infer<typeof DateRangeSpecSchema>;
