import { z } from 'zod';
import './openapi-zod.js';
import { CreateFlagBody } from '../../../apps/server/src/flags/schema.js';
import { BaseStatusShape, DELETION_POLICIES, ProjectRefSchema, type KindDefinition, type Resource } from './meta.js';

/**
 * FeatureFlag: the API's own flag body (same names, same bounds: it is the service's schema, minus
 * `projectId`, which `projectRef` replaces) plus where it lives and what deleting it does.
 * The cross-field rules (variant percentages summing to 100, rule variants that exist) are the
 * service's `flagConsistencyError`: a CRD cannot express them, so the operator reports them as
 * `Ready=False, reason Invalid`.
 */
export const FeatureFlagSpecSchema = CreateFlagBody.omit({ projectId: true }).extend({
  projectRef: ProjectRefSchema,
  deletionPolicy: z.enum(DELETION_POLICIES).default('Delete'),
});
export type FeatureFlagSpec = z.output<typeof FeatureFlagSpecSchema>;

export const FeatureFlagStatusSchema = z.object({
  ...BaseStatusShape,
  projectId: z.number().int().positive().optional(),
  flagId: z.number().int().positive().optional(),
});
export type FeatureFlagStatus = z.infer<typeof FeatureFlagStatusSchema>;

export type FeatureFlag = Resource<'FeatureFlag', FeatureFlagSpec, FeatureFlagStatus>;

export const FEATURE_FLAG: KindDefinition = {
  kind: 'FeatureFlag',
  plural: 'featureflags',
  singular: 'featureflag',
  shortNames: ['ff'],
  spec: FeatureFlagSpecSchema,
  status: FeatureFlagStatusSchema,
  columns: [
    { name: 'Key', type: 'string', jsonPath: '.spec.key' },
    { name: 'Active', type: 'boolean', jsonPath: '.spec.active' },
    { name: 'Project ID', type: 'integer', jsonPath: '.status.projectId' },
    { name: 'Flag ID', type: 'integer', jsonPath: '.status.flagId', priority: 1 },
  ],
};
