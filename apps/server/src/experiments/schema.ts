import { z } from 'zod';
import { text } from '../http/columns.js';
import { LIMITS } from '../limits.js';

/**
 * The experiments API's shapes. The body checks that need only the body are here (a `400` naming
 * the field); the ones that need the flag (it exists, has variants, the control is one) are the
 * service's.
 */

const Key = text().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const Name = text().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const Time = z.number().int('must be a whole number of milliseconds').min(0, 'must be ≥ 0').max(253_402_300_799_999, 'must be before year 10000');

export const METRIC_KINDS = ['conversion', 'count', 'sum'] as const;
export const ENGINES = ['bayesian', 'frequentist'] as const;
export const CORRECTIONS = ['none', 'holm', 'bh'] as const;

export const ExperimentMetricSchema = z
  .object({
    id: Key,
    name: Name.optional(),
    kind: z.enum(METRIC_KINDS),
    event: text().min(1, 'must not be empty').max(255, 'must be at most 255 characters'),
    /** The numeric property a `sum` adds up (non-numbers are ignored). */
    property: text().min(1, 'must not be empty').max(255, 'must be at most 255 characters').optional(),
    /** Events count only before exposure + windowHours. */
    windowHours: z.number().positive('must be > 0').max(LIMITS.experimentWindowHours, `must be at most ${LIMITS.experimentWindowHours}`).optional(),
  })
  .strict()
  .openapi('ExperimentMetric');
export type ExperimentMetric = z.infer<typeof ExperimentMetricSchema>;

const Metrics = z
  .array(ExperimentMetricSchema)
  .min(1, 'at least one metric is required')
  .max(LIMITS.metricsPerExperiment, `at most ${LIMITS.metricsPerExperiment} metrics`);

/** The level must leave a two-sided interval narrower than the whole line and wider than nothing. */
const Level = z.number().gt(0.5, 'must be in (0.5, 1)').lt(1, 'must be in (0.5, 1)');

const settings = {
  primaryMetricId: Key.optional(),
  engine: z.enum(ENGINES).optional(),
  confidenceLevel: Level.optional(),
  sequential: z.boolean().optional(),
  correction: z.enum(CORRECTIONS).optional(),
  startAt: Time.nullable().optional(),
  endAt: Time.nullable().optional(),
};

export const CreateExperimentBody = z
  .object({
    projectId: z.union([z.string(), z.number()]).optional(),
    key: Key,
    name: Name.optional(),
    flagKey: Key,
    control: Key.optional(),
    metrics: Metrics,
    ...settings,
  })
  .strict()
  .openapi('CreateExperimentBody');
export type CreateExperimentInput = z.infer<typeof CreateExperimentBody>;

export const UpdateExperimentBody = z
  .object({ key: Key.optional(), name: Name.optional(), flagKey: Key.optional(), control: Key.optional(), metrics: Metrics.optional(), ...settings })
  .strict()
  .openapi('UpdateExperimentBody');
export type UpdateExperimentInput = z.infer<typeof UpdateExperimentBody>;

export const ExperimentSchema = z
  .object({
    id: z.number().int(),
    projectId: z.number().int(),
    key: z.string(),
    name: z.string(),
    flagKey: z.string(),
    control: z.string(),
    metrics: z.array(ExperimentMetricSchema),
    primaryMetricId: z.string(),
    engine: z.enum(ENGINES),
    confidenceLevel: z.number(),
    sequential: z.boolean(),
    correction: z.enum(CORRECTIONS),
    startAt: z.number().int().nullable(),
    endAt: z.number().int().nullable(),
    status: z.enum(['running', 'stopped']),
    stoppedAt: z.number().int().nullable(),
    createdBy: z.number().int().nullable(),
    /** The Kubernetes resource (`Experiment/<namespace>/<name>`) that manages it; other writers get 409. */
    managedBy: z.string().nullable(),
    createdAt: z.number().int(),
    updatedAt: z.number().int(),
  })
  .openapi('Experiment');
export type Experiment = z.infer<typeof ExperimentSchema>;

export const ExperimentListQuery = z.object({ projectId: z.string().optional() });

const Flag = z.enum(['true', 'false']).transform((s) => s === 'true');
/** Recompute with other settings than the experiment's. */
export const ResultsQuery = z.object({ engine: z.enum(ENGINES).optional(), sequential: Flag.optional(), correction: z.enum(CORRECTIONS).optional() });

const LiftSchema = z.object({ mean: z.number(), low: z.number(), high: z.number() });
export const VariantResultSchema = z
  .object({
    key: z.string(),
    units: z.number().int(),
    total: z.number().nullable(),
    mean: z.number().nullable(),
    variance: z.number().nullable(),
    lift: LiftSchema.nullable().optional(),
    chanceToWin: z.number().nullable().optional(),
    pValue: z.number().nullable().optional(),
    sequentialPValue: z.number().nullable().optional(),
    adjustedPValue: z.number().nullable().optional(),
    significant: z.boolean().nullable().optional(),
    reason: z.string().optional(),
  })
  .openapi('ExperimentVariantResult');

export const MetricResultSchema = z
  .object({ id: z.string(), kind: z.enum(METRIC_KINDS), variants: z.array(VariantResultSchema) })
  .openapi('ExperimentMetricResult');

export const ExposuresOverTimeSchema = z
  .object({
    /** UTC days (`YYYY-MM-DD`) from the first exposure's to the last one's. */
    days: z.array(z.string()),
    /** Per variant, per day: units first exposed that day (`new`, units in two variants left out) and the running sum. */
    variants: z.array(z.object({ key: z.string(), new: z.array(z.number().int()), cumulative: z.array(z.number().int()) })),
  })
  .openapi('ExperimentExposuresOverTime');
export type ExposuresOverTime = z.infer<typeof ExposuresOverTimeSchema>;

export const ExperimentResultsSchema = z
  .object({
    experimentId: z.number().int(),
    computedAt: z.number().int(),
    engine: z.enum(ENGINES),
    confidenceLevel: z.number(),
    sequential: z.boolean(),
    correction: z.enum(CORRECTIONS),
    control: z.string(),
    exposures: z.record(z.string(), z.number().int()),
    excludedMultipleVariants: z.number().int(),
    srm: z.object({ pValue: z.number(), ok: z.boolean() }),
    metrics: z.array(MetricResultSchema),
    exposuresOverTime: ExposuresOverTimeSchema,
    /** Present when the answer came from the results cache: when it was computed (Unix ms). */
    cached_at: z.number().int().optional(),
  })
  .openapi('ExperimentResults');
export type ExperimentResults = z.infer<typeof ExperimentResultsSchema>;

export const DECISIONS = ['Inconclusive', 'Winner', 'Loser', 'SampleRatioMismatch'] as const;
export const ExperimentAnalysisSchema = z
  .object({
    ok: z.boolean(),
    srmOk: z.boolean(),
    decision: z.enum(DECISIONS),
    winner: z.string().nullable(),
    primary: MetricResultSchema,
  })
  .openapi('ExperimentAnalysis');
