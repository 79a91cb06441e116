import { z } from 'zod';
import './openapi-zod.js';
import { ProjectName } from '../../../apps/server/src/projects/schema.js';
import { BaseStatusShape, DELETION_POLICIES, type KindDefinition, type Resource } from './meta.js';

/** Project: a project of an organisation, created through the service's API. */
export const ProjectSpecSchema = z.object({
  displayName: ProjectName,
  organizationId: z
    .number()
    .int()
    .positive()
    .max(Number.MAX_SAFE_INTEGER)
    .meta({ 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'organizationId is immutable' }] }),
  deletionPolicy: z.enum(DELETION_POLICIES).default('Retain'),
})
  // Unknown members are refused, as the API server does for kubectl (fieldValidation=Strict).
  .strict();
/** The spec as read back (defaults applied by the API server). */
export type ProjectSpec = z.output<typeof ProjectSpecSchema>;

export const ProjectStatusSchema = z.object({
  ...BaseStatusShape,
  projectId: z.number().int().positive().optional(),
  /** The public project token (the one browsers send to /track). */
  token: z.string().optional(),
});
export type ProjectStatus = z.infer<typeof ProjectStatusSchema>;

export type Project = Resource<'Project', ProjectSpec, ProjectStatus>;

export const PROJECT: KindDefinition = {
  kind: 'Project',
  plural: 'projects',
  singular: 'project',
  shortNames: ['tproj'],
  spec: ProjectSpecSchema,
  status: ProjectStatusSchema,
  columns: [
    { name: 'Display Name', type: 'string', jsonPath: '.spec.displayName' },
    { name: 'Project ID', type: 'integer', jsonPath: '.status.projectId' },
  ],
};
