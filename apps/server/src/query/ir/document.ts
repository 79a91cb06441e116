import '../../http/route.js'; // registers `.openapi()` before the schemas below are declared
import { z } from 'zod';
import { ANALYSES, IR_KINDS } from '../registry.js';
import { BreakdownSchema, DateRangeSpecSchema, IR_VERSION, IrFilters, METRIC_IDS, MetricSchema } from './schema.js';

/** Each declared analysis's IR analysis schema (duplicates, such as trend, only in the type). */
type IrSchemasOf<T extends readonly unknown[]> = { -readonly [K in keyof T]: T[K] extends { ir: { analysis: infer S } } ? S : never };
type AnalysisSchemas = IrSchemasOf<typeof ANALYSES>;

/** The `analysis` member: one schema per IR kind of the registry (registry.ts), told apart by `kind`. */
export const AnalysisSchema = z.discriminatedUnion('kind', IR_KINDS.map((k) => k.analysis) as unknown as AnalysisSchemas);

/** The Query IR document, version 2 (current): schema.ts holds its parts, docs/query-ir.md its prose. */
export const QueryV2Schema = z
  .object({
    v: z.literal(IR_VERSION),
    dateRange: DateRangeSpecSchema,
    /** Applied to every metric. */
    filters: IrFilters.optional(),
    /** At least one for trends and funnels (checked when the document is resolved). */
    metrics: z.array(MetricSchema).max(METRIC_IDS.length),
    breakdown: BreakdownSchema.optional(),
    analysis: AnalysisSchema,
  })
  .strict()
  .openapi('QueryV2');
export type QueryV2 = z.infer<typeof QueryV2Schema>;
