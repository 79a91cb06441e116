import { z } from 'zod';
import { LIMITS } from '../limits.js';
import { PropertyFilterSchema } from '../query/schema.js';

export const CohortCriterionSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('property'), filter: PropertyFilterSchema }).strict(),
  z.object({
    kind: z.literal('behavior'),
    event: z.string().min(1).max(255),
    op: z.enum(['gte', 'lte', 'gt', 'lt', 'eq']),
    count: z.number().int().min(LIMITS.cohortBehaviorCount.min).max(LIMITS.cohortBehaviorCount.max),
    windowDays: z.number().int().min(LIMITS.cohortBehaviorWindowDays.min).max(LIMITS.cohortBehaviorWindowDays.max),
  }).strict(),
  // A list of people fixed when it was saved (a drill-down's or a funnel drop-off's people): each
  // listed distinct id's identity, as it is resolved now, belongs to the cohort.
  z.object({
    kind: z.literal('static'),
    ids: z.array(z.string().min(1).max(LIMITS.overrideIdLength)).min(1).max(LIMITS.cohortStaticIds),
  }).strict(),
]);
export type CohortCriterion = z.infer<typeof CohortCriterionSchema>;

export const CohortDefinitionSchema = z
  .object({ op: z.enum(['and', 'or']), criteria: z.array(CohortCriterionSchema).max(LIMITS.cohortCriteria) })
  .strict() // a definition is stored as sent: a member it does not know is refused, not dropped
  .superRefine((d, ctx) => {
    const ids = d.criteria.flatMap((c) => (c.kind === 'static' ? c.ids : []));
    const chars = ids.reduce((n, id) => n + id.length, 0);
    if (ids.length > LIMITS.cohortStaticIds || chars > LIMITS.cohortStaticIdsChars) {
      ctx.addIssue({
        code: z.ZodIssueCode.custom, path: ['criteria'],
        message: `static criteria list at most ${LIMITS.cohortStaticIds} ids of ${LIMITS.cohortStaticIdsChars} characters in all (${ids.length} ids, ${chars} characters)`,
      });
    }
  })
  .openapi('CohortDefinition');
export type CohortDefinition = z.infer<typeof CohortDefinitionSchema>;

export const CohortSchema = z
  .object({
    id: z.number().int(), project_id: z.number().int(), created_by: z.number().int().nullable(), name: z.string(),
    description: z.string().nullable(), definition: CohortDefinitionSchema, size: z.number().int(),
    created_at: z.number().int(), updated_at: z.number().int(),
  })
  .openapi('Cohort');

export const CreateCohortBody = z
  .object({
    projectId: z.union([z.string(), z.number()]).optional(),
    name: z.string().trim().min(1).max(200),
    description: z.string().max(5000).nullable().optional(),
    definition: CohortDefinitionSchema,
  })
  .strict();
export const UpdateCohortBody = z
  .object({ name: z.string().trim().min(1).max(200).optional(), description: z.string().max(5000).nullable().optional(), definition: CohortDefinitionSchema.optional() })
  .strict();
export const PreviewBody = z.object({ projectId: z.union([z.string(), z.number()]).optional(), definition: CohortDefinitionSchema }).strict();
export const CohortPreviewSchema = z.object({ count: z.number().int(), sample: z.array(z.string()).max(LIMITS.cohortPreviewSample) }).openapi('CohortPreview');
export const CohortMembersSchema = z.object({ members: z.array(z.string()) }).openapi('CohortMembers');
export const ProjectQuery = z.object({ projectId: z.string().optional() });
