import { z } from 'zod';

export const ProjectSchema = z
  .object({
    id: z.number().int(),
    org_id: z.number().int().nullable().openapi({ description: 'the organisation the project belongs to' }),
    name: z.string(),
    token: z.string().uuid(),
    created_at: z.number().int(),
    managed_by: z.string().nullable().openapi({ description: 'the Kubernetes resource `<Kind>/<namespace>/<name>` that owns the project, or null' }),
    retention_days: z.number().int().nullable().openapi({ description: 'events older than this many days are deleted by the worker; null: kept forever' }),
    rate_limit: z.object({ requestsPer10Seconds: z.number().int() }).nullable()
      .openapi({ description: "this project's ingestion requests per 10 s (instead of RATE_LIMIT_PER_PROJECT); null: the default" }),
  })
  .openapi('Project');

export const ProjectListItemSchema = ProjectSchema.extend({
  event_count: z.number().int(),
  has_flag_secret: z.boolean(),
}).openapi('ProjectListItem');

export const ProjectName = z.string().trim().min(1).max(200);
/** Days of events kept (1..3650), or null: kept forever. */
export const RetentionDays = z.number().int().min(1).max(3650).nullable();
/** A project's own ingestion bucket, or null: RATE_LIMIT_PER_PROJECT. */
export const ProjectRateLimit = z.object({ requestsPer10Seconds: z.number().int().min(1).max(1_000_000) }).strict().nullable();
export const CreateProjectBody = z.object({ name: ProjectName, retentionDays: RetentionDays.optional(), rateLimit: ProjectRateLimit.optional() }).strict();
export const UpdateProjectBody = z
  .object({ name: ProjectName.optional(), retentionDays: RetentionDays.optional(), rateLimit: ProjectRateLimit.optional() })
  .strict();
export const ListProjectsQuery = z.object({ managedBy: z.string().min(1).max(400).optional() });
export const IdParams = z.object({ id: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER) });
