import { z } from 'zod';

/** Most ids one request may name (each expands to its whole identity cluster). */
export const MAX_REQUEST_IDS = 100;
/** Longest distinct_id stored anywhere (the identity tables' column). */
export const MAX_ID_LENGTH = 255;

export const PRIVACY_TYPES = ['access', 'export', 'delete'] as const;
export type PrivacyType = (typeof PRIVACY_TYPES)[number];
export type PrivacyStatus = 'pending' | 'running' | 'completed' | 'failed';

export const CreatePrivacyRequestBody = z
  .object({
    projectId: z.union([z.string(), z.number()]).optional(),
    type: z.enum(PRIVACY_TYPES, { message: `must be one of ${PRIVACY_TYPES.join(', ')}` }),
    distinctIds: z
      .array(z.string().min(1, 'must not be empty').max(MAX_ID_LENGTH, `must be at most ${MAX_ID_LENGTH} characters`))
      .min(1, 'must name at least one id')
      .max(MAX_REQUEST_IDS, `must name at most ${MAX_REQUEST_IDS} ids`),
  })
  .strict();

export const ProjectQuery = z.object({ projectId: z.string().optional() });

export const PrivacyRequestSchema = z
  .object({
    id: z.number().int(),
    project_id: z.number().int(),
    type: z.enum(PRIVACY_TYPES),
    status: z.enum(['pending', 'running', 'completed', 'failed']),
    created_at: z.number().int(),
    completed_at: z.number().int().nullable(),
    error: z.string().nullable(),
  })
  .openapi('PrivacyRequest');
export type PrivacyRequestView = z.infer<typeof PrivacyRequestSchema>;
