import { z } from 'zod';

export const ProjectSchema = z
  .object({
    id: z.number().int(),
    name: z.string(),
    token: z.string().uuid(),
    created_at: z.number().int(),
    managed_by: z.string().nullable().openapi({ description: 'the Kubernetes resource `<Kind>/<namespace>/<name>` that owns the project, or null' }),
  })
  .openapi('Project');

export const ProjectListItemSchema = ProjectSchema.extend({
  org_id: z.number().int().nullable(),
  event_count: z.number().int(),
  has_flag_secret: z.boolean(),
}).openapi('ProjectListItem');

export const ProjectName = z.string().trim().min(1).max(200);
export const CreateProjectBody = z.object({ name: ProjectName }).strict();
export const UpdateProjectBody = z.object({ name: ProjectName }).strict();
export const ListProjectsQuery = z.object({ managedBy: z.string().min(1).max(400).optional() });
export const IdParams = z.object({ id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });
