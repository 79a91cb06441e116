import { z } from 'zod';
import { DateField, ProjectIdField, UnitSchema } from '../../body-parts.js';

/** The v0 calculated-metric body: what a client sends. */
export const MetricQuerySchema = z
  .object({ definitionId: z.number().int().positive(), from: DateField, to: DateField, unit: UnitSchema, projectId: ProjectIdField })
  .strict()
  .openapi('MetricQuery');
export type MetricQuery = z.infer<typeof MetricQuerySchema>;
