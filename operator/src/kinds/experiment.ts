import { keyOf, type BaseStatus, type DeletionPolicy, type Resource } from '../kinds.js';
import { EXPERIMENT } from '../resources/experiment.js';
import { ApiError } from '../tally-api.js';
import { experimentsApi, type ApiExperiment, type ExperimentBody } from './experiment-api.js';
import { apiFailure, ensureFinalizer, notReady, ready, referencedProject, type Outcome, type ReconcileContext } from '../reconcile/context.js';
import { finalizeProjectScoped, managedAmong } from '../reconcile/finalize.js';
import { changedMembers } from '../reconcile/compare.js';
import { appearedOrGone, changedItself, referringTo, throughProject, type OperatorKind } from './kind.js';

export interface ExperimentSpec {
  projectRef: { name: string };
  flagRef?: { name: string };
  flagKey?: string;
  key: string;
  name?: string;
  control?: string;
  metrics: { id: string; name?: string; kind: string; event: string; property?: string; windowHours?: number }[];
  primaryMetricId?: string;
  engine?: string;
  confidenceLevel?: number;
  sequential?: boolean;
  correction?: string;
  startAt?: number | null;
  endAt?: number | null;
  deletionPolicy?: DeletionPolicy;
}
export interface ExperimentStatus extends BaseStatus {
  projectId?: number;
  experimentId?: number;
  flagKey?: string;
  exposures?: Record<string, number>;
  totalExposures?: number;
  srm?: { pValue: number; ok: boolean };
  primary?: { metricId: string; variants: Record<string, unknown>[] };
  decision?: string;
  winner?: string | null;
  resultsAt?: string;
}
export type ExperimentResource = Resource<'Experiment', ExperimentSpec, ExperimentStatus>;

declare module '../kinds.js' {
  interface KindResources { Experiment: ExperimentResource }
}

/** What the operator keeps per Experiment: its experiment and the status last shown (a hint only: checked against managedBy). */
interface ExperimentRecord { projectId: number; experimentId: number; shown?: Record<string, unknown>; fetchedAt?: number }
const recordsOf = (ctx: ReconcileContext) => ctx.records.of<ExperimentRecord>('Experiment');

/**
 * Experiment: enqueued when its Project appears, goes or changes its record, and when the
 * FeatureFlag its flagRef names changes (it waits for that flag, or follows its key).
 */
export const experiment: OperatorKind<'Experiment'> = {
  definition: EXPERIMENT,
  reconciler: (ctx) => ({ reconcile: (obj) => reconcileExperiment(ctx, obj), finalize: (obj) => finalizeExperiment(ctx, obj, keyOf(obj)) }),
  watches: [
    { kind: 'Project', when: appearedOrGone, afterRecordChange: true, map: (ctx, project) => referringTo(ctx.cache('Experiment'), project) },
    {
      kind: 'FeatureFlag',
      when: changedItself,
      map: (ctx, ff) => ctx.cache('Experiment').list().filter((e) => e.metadata.namespace === ff.metadata.namespace && e.spec?.flagRef?.name === ff.metadata.name),
    },
  ],
  actsFor: throughProject,
};

/**
 * Experiment ↔ an experiment of the referenced Project's project, written through the experiments
 * API (managedBy: this resource). Its status shows the service's results, read again at most every
 * EXPERIMENT_STATUS_INTERVAL_MS. On deletion `Delete` (the default) deletes the experiment (its
 * events stay), `Retain` releases it.
 */
export async function reconcileExperiment(ctx: ReconcileContext, obj: ExperimentResource): Promise<Outcome> {
  const resource = keyOf(obj);

  const ref = referencedProject(ctx, obj);
  if (!('projectId' in ref)) return ref;
  const { projectId } = ref;
  const flagKey = flagKeyOf(ctx, obj, projectId);
  if (typeof flagKey !== 'string') return flagKey;
  obj = await ensureFinalizer(ctx, obj);
  const desired = experimentBody(obj, flagKey);
  let experiment: ApiExperiment | undefined;
  let changed = false;
  try {
    const own = await ownExperiments(ctx, obj, resource);
    for (const elsewhere of own) if (elsewhere.projectId !== projectId) await applyDeletionPolicy(ctx, policyOf(obj), resource, elsewhere.id);
    experiment = own.find((e) => e.projectId === projectId) ?? await experimentsApi(ctx.api).find(projectId, resource);
    if (!experiment) {
      experiment = await experimentsApi(ctx.api).create(projectId, desired, resource);
      changed = true;
    }
    const changes = changedMembers(experiment, desired);
    if (Object.keys(changes).length > 0) {
      experiment = await experimentsApi(ctx.api).update(experiment.id, changes, resource);
      changed = true;
    }
  } catch (err) {
    const outcome = apiFailure(err, `experiment ${desired.key} of project ${projectId}`);
    return experiment ? { ...outcome, fields: { projectId, flagKey, experimentId: experiment.id } } : outcome;
  }
  const ids = { projectId, flagKey, experimentId: experiment.id };
  const intervalMs = ctx.config.timing.experimentStatusIntervalMs;
  const last = recordsOf(ctx).get(resource);
  const fresh = last?.experimentId === experiment.id && last.shown && last.fetchedAt !== undefined && Date.now() - last.fetchedAt < intervalMs;
  let shown = fresh && !changed ? last!.shown! : undefined;
  if (!shown) {
    try {
      shown = await resultsStatus(ctx, experiment);
    } catch (err) {
      // The experiment is there; only its results are not (yet): keep the last ones shown, look again later.
      recordsOf(ctx).set(resource, { projectId, experimentId: experiment.id, shown: last?.shown });
      const outcome = apiFailure(err, `results of experiment ${experiment.id}`);
      return { ...outcome, fields: { ...ids, ...(last?.shown ?? {}) } };
    }
    recordsOf(ctx).set(resource, { projectId, experimentId: experiment.id, shown, fetchedAt: Date.now() });
  }
  const waited = Date.now() - (recordsOf(ctx).get(resource)?.fetchedAt ?? Date.now());
  return {
    ...ready(`experiment ${experiment.id} (${experiment.key}) on flag ${flagKey} of project ${projectId}`, { ...ids, ...shown }),
    afterMs: Math.max(1000, intervalMs - waited),
  };
}

/** The flag's key: `flagKey`, or the key of the FeatureFlag `flagRef` names, once it has its flag in the same project. */
function flagKeyOf(ctx: ReconcileContext, obj: ExperimentResource, projectId: number): string | Outcome {
  if (obj.spec.flagKey) return obj.spec.flagKey;
  const name = obj.spec.flagRef?.name ?? '';
  const ff = ctx.cache('FeatureFlag').get(obj.metadata.namespace, name);
  if (!ff || ff.metadata.deletionTimestamp) return notReady('FlagNotFound', `FeatureFlag ${obj.metadata.namespace}/${name} does not exist`);
  const record = ctx.records.featureFlags.get(keyOf(ff));
  if (!record || record.projectId !== projectId) {
    const pending = ctx.records.undecided(keyOf(ff));
    return notReady('FlagNotFound', `FeatureFlag ${obj.metadata.namespace}/${name} has no flag in project ${projectId} yet (not Ready)`, pending ? { retry: true } : {});
  }
  return ff.spec.key;
}

/** The API's body from the spec, with the API's defaults for what the spec leaves out (so a diff is exact). */
export function experimentBody(obj: ExperimentResource, flagKey: string): ExperimentBody {
  const s = obj.spec;
  return {
    key: s.key,
    name: s.name ?? s.key,
    flagKey,
    control: s.control ?? 'control',
    metrics: s.metrics,
    primaryMetricId: s.primaryMetricId ?? s.metrics[0]?.id,
    engine: s.engine ?? 'bayesian',
    confidenceLevel: s.confidenceLevel ?? 0.95,
    sequential: s.sequential ?? false,
    correction: s.correction ?? 'none',
    startAt: s.startAt ?? null,
    endAt: s.endAt ?? null,
  };
}

/** The status fields from the results and the canary verdict (the same numbers as the API's). */
async function resultsStatus(ctx: ReconcileContext, e: ApiExperiment): Promise<Record<string, unknown>> {
  const results = await experimentsApi(ctx.api).results(e.id);
  const analysis = await experimentsApi(ctx.api).analysis(e.id);
  // The control has no comparison fields; pValue is the adjusted one when a correction applies.
  const primary = analysis.primary.variants.map((v) => Object.fromEntries(Object.entries({
    key: v.key, units: v.units, mean: v.mean, lift: v.lift, chanceToWin: v.chanceToWin, pValue: v.adjustedPValue ?? v.pValue, significant: v.significant,
  }).filter(([, x]) => x !== undefined)));
  return {
    exposures: results.exposures,
    totalExposures: Object.values(results.exposures).reduce((a, b) => a + b, 0),
    srm: results.srm,
    primary: { metricId: analysis.primary.id, variants: primary },
    decision: analysis.decision,
    winner: analysis.winner,
    resultsAt: new Date(results.computedAt).toISOString(),
  };
}

/** The experiments the service says this resource manages (the record's experimentId, and the status's as a hint). */
const ownExperiments = (ctx: ReconcileContext, obj: ExperimentResource, resource: string): Promise<ApiExperiment[]> =>
  managedAmong([recordsOf(ctx).get(resource)?.experimentId, obj.status?.experimentId], (id) => experimentsApi(ctx.api).get(id), (e) => e.managedBy, resource);

const policyOf = (obj: ExperimentResource): DeletionPolicy => obj.spec?.deletionPolicy ?? 'Delete';

/** `Delete` deletes the experiment (its events stay), `Retain` releases it; an experiment gone is done. */
async function applyDeletionPolicy(ctx: ReconcileContext, policy: DeletionPolicy, resource: string, id: number): Promise<void> {
  try {
    if (policy === 'Retain') await experimentsApi(ctx.api).release(id, resource);
    else await experimentsApi(ctx.api).delete(id, resource);
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === 'not_found')) throw err;
  }
}

function finalizeExperiment(ctx: ReconcileContext, obj: ExperimentResource, resource: string): Promise<Outcome | 'gone'> {
  return finalizeProjectScoped(ctx, obj, resource, {
    what: 'experiment',
    policy: policyOf(obj),
    own: () => ownExperiments(ctx, obj, resource),
    recordedProjectId: recordsOf(ctx).get(resource)?.projectId,
    find: (projectId, by) => experimentsApi(ctx.api).find(projectId, by),
    apply: (policy, id, by) => applyDeletionPolicy(ctx, policy, by, id),
  });
}
