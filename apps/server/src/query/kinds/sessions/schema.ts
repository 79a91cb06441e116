import { z } from 'zod';
import { DateField, ProjectIdField, UnitSchema } from '../../body-parts.js';

/** The v0 sessions body and answer: what a client sends and gets back. */
export const SessionsQuerySchema = z
  .object({ from: DateField, to: DateField, unit: UnitSchema.default('day'), projectId: ProjectIdField })
  .strict()
  .openapi('SessionsQuery');
export type SessionsQuery = z.infer<typeof SessionsQuerySchema>;
export const SessionsResultSchema = z
  .object({ series: z.array(z.object({ bucket: z.string(), sessions: z.number().int(), avgDurationSec: z.number() })) })
  .openapi('SessionsResult');
export type SessionsResult = z.infer<typeof SessionsResultSchema>;
