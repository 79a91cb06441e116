import { z } from 'zod';
import './openapi-zod.js';
import { CreateExperimentBody, DECISIONS } from '@tally-analytics/server/schemas';
import { BaseStatusShape, DELETION_POLICIES, ObjectName, ProjectRefSchema, type KindDefinition, type Resource } from './meta.js';

/**
 * The service's body checks that need no flag, as CEL, so `kubectl apply --dry-run=server`
 * refuses them at admission (the flag's own checks, such as the control being a variant, are the
 * service's: the operator reports them as `Invalid`).
 */
export const EXPERIMENT_CEL_RULES = [
  { rule: 'has(self.flagRef) != has(self.flagKey)', message: 'exactly one of flagRef and flagKey is required' },
  { rule: 'self.metrics.all(m, self.metrics.exists_one(n, n.id == m.id))', message: 'metrics: metric ids must be unique' },
  { rule: 'self.metrics.all(m, m.kind != \'sum\' || has(m.property))', message: 'metrics: a sum metric needs its property' },
  { rule: '!has(self.primaryMetricId) || self.metrics.exists(m, m.id == self.primaryMetricId)', message: 'primaryMetricId: must be the id of one of the metrics' },
  { rule: '!has(self.startAt) || !has(self.endAt) || self.startAt == null || self.endAt == null || self.endAt > self.startAt', message: 'endAt: must be after startAt' },
];

/**
 * Experiment: the experiments API's body (the service's own schema, same names and bounds), with
 * `projectRef` instead of `projectId`, and the flag named by a FeatureFlag of the namespace
 * (`flagRef`) or by its key (`flagKey`).
 */
export const ExperimentSpecSchema = CreateExperimentBody.omit({ projectId: true, flagKey: true })
  .extend({
    projectRef: ProjectRefSchema,
    flagRef: z.object({ name: ObjectName }).strict().optional(),
    flagKey: CreateExperimentBody.shape.flagKey.optional(),
    deletionPolicy: z.enum(DELETION_POLICIES).default('Delete'),
  })
  .superRefine((spec, ctx) => {
    if (!spec.flagRef === !spec.flagKey) ctx.addIssue({ code: 'custom', message: 'exactly one of flagRef and flagKey is required' });
  })
  .meta({ 'x-kubernetes-validations': EXPERIMENT_CEL_RULES });
export type ExperimentSpec = z.output<typeof ExperimentSpecSchema>;

const LiftSchema = z.object({ mean: z.number(), low: z.number(), high: z.number() });

/** The primary metric per variant, as the results give it (the control has no comparison fields). */
export const ExperimentVariantStatusSchema = z.object({
  key: z.string(),
  units: z.number().int().min(0),
  mean: z.number().nullable().optional(),
  lift: LiftSchema.nullable().optional(),
  chanceToWin: z.number().nullable().optional(),
  pValue: z.number().nullable().optional(),
  significant: z.boolean().nullable().optional(),
});

export const ExperimentStatusSchema = z.object({
  ...BaseStatusShape,
  projectId: z.number().int().positive().optional(),
  experimentId: z.number().int().positive().optional(),
  flagKey: z.string().optional(),
  /** Exposed units per variant. */
  exposures: z.record(z.string(), z.number().int().min(0)).optional(),
  /** The sum of `exposures` (the EXPOSURES column). */
  totalExposures: z.number().int().min(0).optional(),
  srm: z.object({ pValue: z.number(), ok: z.boolean() }).optional(),
  primary: z.object({ metricId: z.string(), variants: z.array(ExperimentVariantStatusSchema) }).optional(),
  decision: z.enum(DECISIONS).optional(),
  winner: z.string().nullable().optional(),
  /** When the results shown were computed (RFC 3339). */
  resultsAt: z.string().optional(),
});
export type ExperimentStatus = z.infer<typeof ExperimentStatusSchema>;

export type Experiment = Resource<'Experiment', ExperimentSpec, ExperimentStatus>;

export const EXPERIMENT: KindDefinition<'Experiment'> = {
  kind: 'Experiment',
  plural: 'experiments',
  singular: 'experiment',
  shortNames: ['texp'],
  spec: ExperimentSpecSchema,
  status: ExperimentStatusSchema,
  readyLast: true,
  columns: [
    { name: 'Flag', type: 'string', jsonPath: '.status.flagKey' },
    { name: 'Exposures', type: 'integer', jsonPath: '.status.totalExposures' },
    { name: 'Decision', type: 'string', jsonPath: '.status.decision' },
    { name: 'Experiment ID', type: 'integer', jsonPath: '.status.experimentId', priority: 1 },
  ],
};
