import { z } from 'zod';
import './openapi-zod.js';
import { CreateFlagBody, FlagKey, flagConsistencyError } from '@tally-analytics/server/schemas';
import { BaseStatusShape, DELETION_POLICIES, ProjectRefSchema, type KindDefinition, type Resource } from './meta.js';

/**
 * The service's cross-field flag rules (`flagConsistencyError`) as CEL, so the API server refuses
 * them at admission (a pull request's `kubectl apply --dry-run=server` catches them) instead of the
 * operator reporting `Invalid` after merge. `sum()` is the Kubernetes list library's.
 */
export const FLAG_CEL_RULES = [
  { rule: '!has(self.variants) || self.variants.all(v, self.variants.exists_one(w, w.key == v.key))', message: 'variants: variant keys must be unique' },
  { rule: '!has(self.variants) || size(self.variants) == 0 || self.variants.map(v, v.rolloutPct).sum() == 100', message: 'variants: rolloutPct must sum to exactly 100' },
  {
    rule: '!has(self.rules) || self.rules.all(r, !has(r.variant) || (has(self.variants) && self.variants.exists(v, v.key == r.variant)))',
    message: 'rules: a rule\'s variant must be one of variants[].key',
  },
  { rule: '!has(self.rules) || self.rules.all(r, !has(r.distinctIds) || size(r.distinctIds) == 0 || r.rolloutPct == 100)', message: 'rules: rolloutPct must be 100 when distinctIds is non-empty' },
];

/**
 * FeatureFlag: the API's own flag body (same names, same bounds: it is the service's schema, minus
 * `projectId`, which `projectRef` replaces) plus where it lives and what deleting it does. `key`
 * is immutable (the flag is found by it); the cross-field rules are checked by zod and by the CRD.
 */
export const FeatureFlagSpecSchema = CreateFlagBody.omit({ projectId: true })
  .extend({
    key: FlagKey.meta({ 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'key is immutable' }] }),
    projectRef: ProjectRefSchema,
    deletionPolicy: z.enum(DELETION_POLICIES).default('Delete'),
  })
  .superRefine((spec, ctx) => {
    const error = flagConsistencyError({ variants: spec.variants ?? [], rules: spec.rules ?? [] });
    if (error) ctx.addIssue({ code: 'custom', message: error });
  })
  .meta({ 'x-kubernetes-validations': FLAG_CEL_RULES });
export type FeatureFlagSpec = z.output<typeof FeatureFlagSpecSchema>;

export const FeatureFlagStatusSchema = z.object({
  ...BaseStatusShape,
  projectId: z.number().int().positive().optional(),
  flagId: z.number().int().positive().optional(),
});
export type FeatureFlagStatus = z.infer<typeof FeatureFlagStatusSchema>;

export type FeatureFlag = Resource<'FeatureFlag', FeatureFlagSpec, FeatureFlagStatus>;

export const FEATURE_FLAG: KindDefinition<'FeatureFlag'> = {
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
