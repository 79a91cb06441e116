import { keyOf, type DeletionPolicy, type ExperimentResource } from '../kinds.js';
import { ApiError, type ApiExperiment, type ExperimentBody } from '../tally-api.js';
import { apiFailure, ensureFinalizer, hasFinalizer, notReady, ready, referencedProject, type Outcome, type ReconcileContext } from './context.js';
import { finalizeProjectScoped } from './finalize.js';

/**
 * Experiment ↔ an experiment of the referenced Project's project, written through the experiments
 * API (managedBy: this resource). Its status shows the service's results, read again at most every
 * EXPERIMENT_STATUS_INTERVAL_MS. On deletion `Delete` (the default) deletes the experiment (its
 * events stay), `Retain` releases it.
 */
export async function reconcileExperiment(ctx: ReconcileContext, obj: ExperimentResource): Promise<Outcome | 'gone'> {
  const resource = keyOf(obj);
  if (obj.metadata.deletionTimestamp) return finalizeExperiment(ctx, obj, resource);

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
    experiment = own.find((e) => e.projectId === projectId) ?? await ctx.api.findExperiment(projectId, resource);
    if (!experiment) {
      experiment = await ctx.api.createExperiment(projectId, desired, resource);
      changed = true;
    }
    const changes = diff(experiment, desired);
    if (Object.keys(changes).length > 0) {
      experiment = await ctx.api.updateExperiment(experiment.id, changes, resource);
      changed = true;
    }
  } catch (err) {
    const outcome = apiFailure(err, `experiment ${desired.key} of project ${projectId}`);
    return experiment ? { ...outcome, fields: { projectId, flagKey, experimentId: experiment.id } } : outcome;
  }
  const ids = { projectId, flagKey, experimentId: experiment.id };
  const intervalMs = ctx.config.timing.experimentStatusIntervalMs;
  const last = ctx.records.experiments.get(resource);
  const fresh = last?.experimentId === experiment.id && last.shown && last.fetchedAt !== undefined && Date.now() - last.fetchedAt < intervalMs;
  let shown = fresh && !changed ? last!.shown! : undefined;
  if (!shown) {
    try {
      shown = await resultsStatus(ctx, experiment);
    } catch (err) {
      // The experiment is there; only its results are not (yet): keep the last ones shown, look again later.
      ctx.records.experiments.set(resource, { projectId, experimentId: experiment.id, shown: last?.shown });
      const outcome = apiFailure(err, `results of experiment ${experiment.id}`);
      return { ...outcome, fields: { ...ids, ...(last?.shown ?? {}) } };
    }
    ctx.records.experiments.set(resource, { projectId, experimentId: experiment.id, shown, fetchedAt: Date.now() });
  }
  const waited = Date.now() - (ctx.records.experiments.get(resource)?.fetchedAt ?? Date.now());
  return {
    ...ready(`experiment ${experiment.id} (${experiment.key}) on flag ${flagKey} of project ${projectId}`, { ...ids, ...shown }),
    afterMs: Math.max(1000, intervalMs - waited),
  };
}

/** The flag's key: `flagKey`, or the key of the FeatureFlag `flagRef` names, once it has its flag in the same project. */
function flagKeyOf(ctx: ReconcileContext, obj: ExperimentResource, projectId: number): string | Outcome {
  if (obj.spec.flagKey) return obj.spec.flagKey;
  const name = obj.spec.flagRef?.name ?? '';
  const ff = ctx.featureFlags.get(obj.metadata.namespace, name);
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

function diff(e: ApiExperiment, desired: ExperimentBody): Partial<ExperimentBody> {
  const out: Partial<ExperimentBody> = {};
  for (const k of Object.keys(desired) as (keyof ExperimentBody)[]) {
    if (canonical(e[k]) !== canonical(desired[k])) (out as Record<string, unknown>)[k] = desired[k];
  }
  return out;
}

function canonical(v: unknown): string {
  return JSON.stringify(v ?? null, (_k, val) => {
    if (val && typeof val === 'object' && !Array.isArray(val)) {
      return Object.fromEntries(Object.entries(val).filter(([, x]) => x !== undefined).sort(([a], [b]) => a.localeCompare(b)));
    }
    return val;
  });
}

/** The status fields from the results and the canary verdict (the same numbers as the API's). */
async function resultsStatus(ctx: ReconcileContext, e: ApiExperiment): Promise<Record<string, unknown>> {
  const results = await ctx.api.experimentResults(e.id);
  const analysis = await ctx.api.experimentAnalysis(e.id);
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

/**
 * The experiments the service says this resource manages, among the ids known for it (the record,
 * and the status's experimentId as a mere hint: kept only when its managedBy is this resource).
 */
async function ownExperiments(ctx: ReconcileContext, obj: ExperimentResource, resource: string): Promise<ApiExperiment[]> {
  const ids = new Set([ctx.records.experiments.get(resource)?.experimentId, obj.status?.experimentId].filter((x): x is number => Number.isSafeInteger(x) && (x as number) > 0));
  const out: ApiExperiment[] = [];
  for (const id of ids) {
    const e = await ctx.api.getExperiment(id);
    if (e && e.managedBy === resource) out.push(e);
  }
  return out;
}

const policyOf = (obj: ExperimentResource): DeletionPolicy => obj.spec?.deletionPolicy ?? 'Delete';

/** `Delete` deletes the experiment (its events stay), `Retain` releases it; an experiment gone is done. */
async function applyDeletionPolicy(ctx: ReconcileContext, policy: DeletionPolicy, resource: string, id: number): Promise<void> {
  try {
    if (policy === 'Retain') await ctx.api.releaseExperiment(id, resource);
    else await ctx.api.deleteExperiment(id, resource);
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === 'not_found')) throw err;
  }
}

function finalizeExperiment(ctx: ReconcileContext, obj: ExperimentResource, resource: string): Promise<Outcome | 'gone'> {
  return finalizeProjectScoped(ctx, obj, resource, {
    what: 'experiment',
    policy: policyOf(obj),
    own: () => ownExperiments(ctx, obj, resource),
    recordedProjectId: ctx.records.experiments.get(resource)?.projectId,
    find: (projectId, by) => ctx.api.findExperiment(projectId, by),
    apply: (policy, id, by) => applyDeletionPolicy(ctx, policy, by, id),
  });
}
