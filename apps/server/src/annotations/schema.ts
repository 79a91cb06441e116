import { z } from 'zod';
import { text } from '../http/columns.js';

/** A calendar day, `YYYY-MM-DD`, that exists (2024-02-30 does not). */
export const DaySchema = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'expected a date YYYY-MM-DD')
  .refine((s) => {
    const ms = Date.parse(`${s}T00:00:00Z`);
    return Number.isFinite(ms) && new Date(ms).toISOString().slice(0, 10) === s;
  }, 'not a calendar date')
  .openapi({ type: 'string', format: 'date' });

export const AnnotationSchema = z
  .object({
    id: z.number().int(), project_id: z.number().int(), created_by: z.number().int().nullable(),
    date: z.string(), description: z.string(), created_at: z.number().int(), updated_at: z.number().int(),
  })
  .openapi('Annotation');

/** What trend results carry: the notes on days inside their range. */
export const AnnotationMarkSchema = z.object({ id: z.number().int(), date: z.string(), description: z.string() }).openapi('AnnotationMark');
export type AnnotationMark = z.infer<typeof AnnotationMarkSchema>;

const Description = text().trim().min(1).max(2000);
export const CreateAnnotationBody = z
  .object({ projectId: z.union([z.string(), z.number()]).optional(), date: DaySchema, description: Description })
  .strict();
export const UpdateAnnotationBody = z.object({ date: DaySchema.optional(), description: Description.optional() }).strict();
export const ListAnnotationsQuery = z.object({ projectId: z.string().optional(), from: DaySchema.optional(), to: DaySchema.optional() });
