import '../../http/route.js'; // registers `.openapi()` before the schemas below are declared
import { z } from 'zod';
import { ANALYSES, IR_KINDS } from '../registry.js';
import { BreakdownSchema, DateRangeSpecSchema, GlobalFilters, IR_VERSION, METRIC_IDS, MAX_QUERY_COHORTS, MetricSchema, isCohortBreakdown, isCohortFilter } from './schema.js';

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
    /** Applied to every metric: property filters and cohort filters. */
    filters: GlobalFilters.optional(),
    /** At least one for trends and funnels (checked when the document is resolved). */
    metrics: z.array(MetricSchema).max(METRIC_IDS.length),
    breakdown: BreakdownSchema.optional(),
    analysis: AnalysisSchema,
  })
  .strict()
  .superRefine((doc, ctx) => {
    const named = new Set([...(doc.filters ?? []).flatMap((f) => (isCohortFilter(f) ? [f.cohort] : [])), ...(isCohortBreakdown(doc.breakdown) ? doc.breakdown.cohorts : [])]);
    if (named.size > MAX_QUERY_COHORTS) ctx.addIssue({ code: 'custom', path: ['filters'], message: `a query names at most ${MAX_QUERY_COHORTS} cohorts in its filters and breakdown together (${named.size})` });
  })
  .openapi('QueryV2');
export type QueryV2 = z.infer<typeof QueryV2Schema>;
