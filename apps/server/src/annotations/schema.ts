import { z } from 'zod';
import { DaySchema, text } from '../http/columns.js';

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
