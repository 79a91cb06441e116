import { z } from 'zod';
import './openapi-zod.js';
import { ProjectName } from '@tally-analytics/server/schemas';
import { BaseStatusShape, DELETION_POLICIES, OrganizationRefSchema, type KindDefinition, type Resource } from './meta.js';

/** Days of events kept (the worker deletes older ones); absent: kept forever. */
export const RetentionDays = z.number().int().min(1).max(3650);
/** This project's ingestion bucket (instead of RATE_LIMIT_PER_PROJECT). */
export const RateLimitSchema = z.object({ requestsPer10Seconds: z.number().int().min(1).max(1_000_000) }).strict();

/**
 * Project: a project of an organisation, created through the service's API. The organisation is
 * named by `organizationRef` (an Organization resource: no database id in Git) or, as before, by
 * `organizationId`; exactly one of the two (CEL), each immutable.
 */
export const ProjectSpecSchema = z.object({
  displayName: ProjectName,
  organizationRef: OrganizationRefSchema.optional(),
  organizationId: z
    .number()
    .int()
    .positive()
    .max(Number.MAX_SAFE_INTEGER)
    .meta({ 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'organizationId is immutable' }] })
    .optional(),
  retentionDays: RetentionDays.optional(),
  rateLimit: RateLimitSchema.optional(),
  deletionPolicy: z.enum(DELETION_POLICIES).default('Retain'),
})
  // Unknown members are refused, as the API server does for kubectl (fieldValidation=Strict).
  .strict()
  .meta({
    'x-kubernetes-validations': [
      { rule: 'has(self.organizationRef) != has(self.organizationId)', message: 'exactly one of organizationRef and organizationId is required' },
    ],
  })
  // The same rule for zod (the CEL rule above is what the API server runs).
  .refine((s) => (s.organizationRef === undefined) !== (s.organizationId === undefined), {
    message: 'exactly one of organizationRef and organizationId is required',
  });
/** The spec as read back (defaults applied by the API server). */
export type ProjectSpec = z.output<typeof ProjectSpecSchema>;

export const ProjectStatusSchema = z.object({
  ...BaseStatusShape,
  projectId: z.number().int().positive().optional(),
  /** The organisation the project belongs to (resolved from organizationRef). */
  organizationId: z.number().int().positive().optional(),
  /** The public project token (the one browsers send to /track). */
  token: z.string().optional(),
});
export type ProjectStatus = z.infer<typeof ProjectStatusSchema>;

export type Project = Resource<'Project', ProjectSpec, ProjectStatus>;

export const PROJECT: KindDefinition<'Project'> = {
  kind: 'Project',
  plural: 'projects',
  singular: 'project',
  shortNames: ['tproj'],
  spec: ProjectSpecSchema,
  status: ProjectStatusSchema,
  columns: [
    { name: 'Display Name', type: 'string', jsonPath: '.spec.displayName' },
    { name: 'Organization', type: 'string', jsonPath: '.spec.organizationRef.name', priority: 1 },
    { name: 'Project ID', type: 'integer', jsonPath: '.status.projectId' },
  ],
};
