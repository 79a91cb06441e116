import { keyOf, type BaseStatus, type DeletionPolicy, type Resource } from '../kinds.js';
import { FEATURE_FLAG } from '../resources/featureflag.js';
import { ApiError, type ApiFlag, type FlagBody } from '../tally-api.js';
import { apiFailure, ensureFinalizer, hasFinalizer, ready, referencedProject, type Outcome, type ReconcileContext } from '../reconcile/context.js';
import { finalizeProjectScoped, managedAmong } from '../reconcile/finalize.js';
import { changedMembers } from '../reconcile/compare.js';
import { appearedOrGone, referringTo, throughProject, type OperatorKind } from './kind.js';

export interface FeatureFlagSpec {
  projectRef: { name: string };
  key: string;
  name: string;
  description?: string | null;
  active?: boolean;
  type?: string;
  variants?: { key: string; rolloutPct: number; payload?: unknown }[];
  rules?: { rolloutPct: number; cohortId?: number; distinctIds?: string[]; variant?: string }[];
  deletionPolicy?: DeletionPolicy;
}
export interface FeatureFlagStatus extends BaseStatus { projectId?: number; flagId?: number }
export type FeatureFlagResource = Resource<'FeatureFlag', FeatureFlagSpec, FeatureFlagStatus>;

declare module '../kinds.js' {
  interface KindResources { FeatureFlag: FeatureFlagResource }
}

/** FeatureFlag: enqueued when its Project appears, goes or changes its record. */
export const featureFlag: OperatorKind<'FeatureFlag'> = {
  definition: FEATURE_FLAG,
  reconciler: (ctx) => ({ reconcile: (obj) => reconcileFeatureFlag(ctx, obj), finalize: (obj) => finalizeFlag(ctx, obj, keyOf(obj)) }),
  watches: [{ kind: 'Project', when: appearedOrGone, afterRecordChange: true, map: (ctx, project) => referringTo(ctx.cache('FeatureFlag'), project) }],
  actsFor: throughProject,
};

/**
 * FeatureFlag ↔ a flag of the referenced Project's project, written through the flags API (so
 * every change has its audit row). Only the members that differ are sent. On deletion `Delete`
 * (the default) archives then deletes the flag, `Retain` releases it.
 */
export async function reconcileFeatureFlag(ctx: ReconcileContext, obj: FeatureFlagResource): Promise<Outcome> {
  const resource = keyOf(obj);

  const ref = referencedProject(ctx, obj);
  if (!('projectId' in ref)) return ref;
  const { projectId } = ref;
  // No finalizer yet means nothing was ever done outside for this resource (the finalizer comes
  // first), so there is no flag to look for: create it straight away (a 409 still falls back to a lookup).
  const fresh = !hasFinalizer(obj) && !obj.status?.flagId;
  obj = await ensureFinalizer(ctx, obj);
  const desired = flagBody(obj);
  let flag: ApiFlag | undefined;
  try {
    // The Project's project changed: the flag this resource has elsewhere follows the deletion policy.
    const own = await ownFlags(ctx, obj, resource);
    for (const elsewhere of own) if (elsewhere.project_id !== projectId) await applyDeletionPolicy(ctx, policyOf(obj), resource, elsewhere.id);
    flag = fresh ? undefined : own.find((f) => f.project_id === projectId) ?? await ctx.api.findFlag(projectId, resource);
    if (!flag) {
      try {
        flag = await ctx.api.createFlag(projectId, desired, resource);
      } catch (err) {
        if (!(fresh && err instanceof ApiError && err.kind === 'conflict')) throw err;
        flag = await ctx.api.findFlag(projectId, resource);
        if (!flag) throw err;
      }
    }
    if (flag.archived_at !== null) flag = await ctx.api.reviveFlag(flag.id, resource);
    // Only what differs is sent (the key included, so a changed key meets the API's refusal).
    const changes = changedMembers(flag, desired);
    if (Object.keys(changes).length > 0) flag = await ctx.api.updateFlag(flag.id, changes, resource);
  } catch (err) {
    const outcome = apiFailure(err, `flag ${desired.key} of project ${projectId}`);
    return flag ? { ...outcome, fields: { projectId, flagId: flag.id } } : outcome;
  }
  ctx.records.featureFlags.set(resource, { projectId, flagId: flag.id });
  return ready(`flag ${flag.id} (${flag.key}) of project ${projectId}`, { projectId, flagId: flag.id });
}

/** The API's flag body from the spec, with the API's defaults for what the spec leaves out. */
export function flagBody(obj: FeatureFlagResource): FlagBody {
  const s = obj.spec;
  return {
    key: s.key,
    name: s.name,
    description: s.description ?? null,
    active: s.active ?? true,
    type: s.type ?? 'release',
    variants: s.variants ?? [],
    rules: s.rules ?? [],
  };
}

/** The flags the service says this resource manages (the record's flagId, and the status's as a hint). */
const ownFlags = (ctx: ReconcileContext, obj: FeatureFlagResource, resource: string): Promise<ApiFlag[]> =>
  managedAmong([ctx.records.featureFlags.get(resource)?.flagId, obj.status?.flagId], (id) => ctx.api.getFlag(id), (f) => f.managed_by, resource);

const policyOf = (obj: FeatureFlagResource): DeletionPolicy => obj.spec?.deletionPolicy ?? 'Delete';

/** `Delete` archives then deletes the flag (the API deletes archived flags only), `Retain` releases it; a flag gone is done. */
async function applyDeletionPolicy(ctx: ReconcileContext, policy: DeletionPolicy, resource: string, flagId: number): Promise<void> {
  try {
    if (policy === 'Retain') {
      await ctx.api.releaseFlag(flagId, resource);
    } else {
      await ctx.api.archiveFlag(flagId, resource);
      await ctx.api.deleteFlag(flagId, resource);
    }
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === 'not_found')) throw err;
  }
}

function finalizeFlag(ctx: ReconcileContext, obj: FeatureFlagResource, resource: string): Promise<Outcome | 'gone'> {
  return finalizeProjectScoped(ctx, obj, resource, {
    what: 'flag',
    policy: policyOf(obj),
    own: () => ownFlags(ctx, obj, resource),
    recordedProjectId: ctx.records.featureFlags.get(resource)?.projectId,
    find: (projectId, by) => ctx.api.findFlag(projectId, by),
    apply: (policy, id, by) => applyDeletionPolicy(ctx, policy, by, id),
  });
}
