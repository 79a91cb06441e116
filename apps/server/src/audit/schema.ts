import { z } from 'zod';
import { LIMITS } from '../limits.js';

export const ACTOR_KINDS = ['user', 'token', 'superadmin', 'operator'] as const;

/** What a row is about. */
export const TARGET_KINDS = [
  'organization', 'membership', 'group_mapping', 'project', 'token', 'flag_secret', 'flag', 'experiment',
  'report', 'board', 'cohort', 'derived_event', 'calculated_metric', 'annotation', 'lexicon', 'privacy_request',
] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

export const AuditEntrySchema = z
  .object({
    id: z.number().int(),
    at: z.number().int(),
    actor: z.object({
      kind: z.enum(ACTOR_KINDS),
      id: z.number().int().nullable().openapi({ description: 'the user or machine-access token; null for the superadmin and operator keys' }),
      resource: z.string().optional().openapi({ description: 'the Kubernetes resource the change came through (`<Kind>/<namespace>/<name>`)' }),
    }),
    organizationId: z.number().int().nullable(),
    projectId: z.number().int().optional(),
    action: z.string().openapi({ description: '`<target kind>.<verb>`, e.g. `project.created`, `membership.role_changed`' }),
    target: z.object({ kind: z.enum(TARGET_KINDS), id: z.number().int().nullable() }),
    before: z.unknown().nullable().openapi({ description: 'the object before the change (secrets redacted), null for a creation' }),
    after: z.unknown().nullable().openapi({ description: 'the object after the change (secrets redacted), null for a deletion' }),
  })
  .openapi('AuditEntry');

export const AuditPageSchema = z
  .object({
    entries: z.array(AuditEntrySchema),
    nextCursor: z.string().nullable().openapi({ description: 'pass as `cursor` for the next (older) page; null on the last page' }),
  })
  .openapi('AuditPage');

const Id = z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const Ms = z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Filters of both audit routes; `organizationId` only on the superadmin's. Newest first. */
const AuditFilterFields = z.object({
  projectId: Id.optional(),
  action: z.string().trim().min(1).max(60).regex(/^[a-z_]+\.[a-z_]+$/, 'action: must be `<target kind>.<verb>`, e.g. project.created').optional(),
  actorKind: z.enum(ACTOR_KINDS).optional(),
  targetKind: z.enum(TARGET_KINDS).optional(),
  from: Ms.optional().openapi({ description: 'Unix ms, inclusive' }),
  to: Ms.optional().openapi({ description: 'Unix ms, exclusive' }),
  cursor: z.string().regex(/^\d{1,16}$/, 'cursor: the nextCursor of a previous page').optional(),
  limit: z.coerce.number().int().min(1).max(LIMITS.auditLogLimit.max).default(LIMITS.auditLogLimit.default),
});
const fromBeforeTo = (q: { from?: number; to?: number }) => q.from === undefined || q.to === undefined || q.from < q.to;
const fromBeforeToIssue = { message: 'from: must be before to', path: ['from'] };

export const AuditQuery = AuditFilterFields.strict().refine(fromBeforeTo, fromBeforeToIssue);
export const AdminAuditQuery = AuditFilterFields.extend({ organizationId: Id.optional() }).strict().refine(fromBeforeTo, fromBeforeToIssue);
export type AuditFilters = z.infer<typeof AuditFilterFields> & { organizationId?: number };
