import { z } from 'zod';
import { PropertyFilterSchema, Filters } from '../query/schema.js';

const EventName = z.string().min(1).max(255);
const Name = z.string().trim().min(1).max(200);
const Description = z.string().max(5000).nullable().optional();
const ProjectIdField = z.union([z.string(), z.number()]).optional();

/** A derived event: matches events of any source (each source an event name with optional filters). */
export const DerivedEventDefinitionSchema = z.object({
  sources: z.array(z.object({ event: EventName, filters: z.array(PropertyFilterSchema).max(20).optional() }).strict()).min(1).max(20),
});
export type DerivedEventDefinition = z.infer<typeof DerivedEventDefinitionSchema>;

export const METRIC_LETTERS = ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J'] as const;
/** A calculated metric: a formula over lettered event metrics, each a total or unique count. */
export const CalculatedMetricDefinitionSchema = z.object({
  formula: z.string().min(1).max(500),
  metrics: z
    .array(z.object({ id: z.enum(METRIC_LETTERS), event: EventName, type: z.enum(['total', 'unique']), filters: Filters.optional() }).strict())
    .min(1).max(METRIC_LETTERS.length),
});
export type CalculatedMetricDefinition = z.infer<typeof CalculatedMetricDefinitionSchema>;

export const CreateDerivedEventBody = z.object({ projectId: ProjectIdField, name: Name, description: Description }).merge(DerivedEventDefinitionSchema).strict();
export const UpdateDerivedEventBody = z.object({ name: Name.optional(), description: Description, sources: DerivedEventDefinitionSchema.shape.sources.optional() }).strict();
export const CreateMetricBody = z.object({ projectId: ProjectIdField, name: Name, description: Description }).merge(CalculatedMetricDefinitionSchema).strict();
export const UpdateMetricBody = z
  .object({ name: Name.optional(), description: Description, formula: z.string().min(1).max(500).optional(), metrics: CalculatedMetricDefinitionSchema.shape.metrics.optional() })
  .strict();

const Common = { id: z.number().int(), project_id: z.number().int(), created_by: z.number().int().nullable(), name: z.string(), description: z.string().nullable(), created_at: z.number().int(), updated_at: z.number().int() };
export const DerivedEventSchema = z.object({ ...Common, ...DerivedEventDefinitionSchema.shape }).openapi('DerivedEvent');
export const CalculatedMetricSchema = z.object({ ...Common, ...CalculatedMetricDefinitionSchema.shape }).openapi('CalculatedMetric');
