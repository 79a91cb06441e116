import { keyOf, type FeatureFlagResource } from '../kinds.js';
import { ApiError, type ApiFlag, type FlagBody } from '../tally-api.js';
import { apiFailure, ensureFinalizer, hasFinalizer, notReady, ready, referencedProject, removeFinalizer, type Outcome, type ReconcileContext } from './context.js';

/**
 * FeatureFlag ↔ a flag of the referenced Project's project, written through the flags API (so
 * every change has its audit row). Only the members that differ are sent. On deletion `Delete`
 * (the default) archives then deletes the flag, `Retain` releases it.
 */
export async function reconcileFeatureFlag(ctx: ReconcileContext, obj: FeatureFlagResource): Promise<Outcome | 'gone'> {
  const resource = keyOf(obj);
  if (obj.metadata.deletionTimestamp) return finalizeFlag(ctx, obj, resource);

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
    const moved = obj.status?.projectId && obj.status.projectId !== projectId && obj.status.flagId;
    if (moved) await applyDeletionPolicy(ctx, obj, resource, obj.status!.flagId!);
    flag = fresh ? undefined : await findFlag(ctx, obj, resource, projectId);
    if (!flag) {
      try {
        flag = await ctx.api.createFlag(projectId, desired, resource);
      } catch (err) {
        if (!(fresh && err instanceof ApiError && err.kind === 'conflict')) throw err;
        flag = await findFlag(ctx, obj, resource, projectId);
        if (!flag) throw err;
      }
    }
    if (flag.archived_at !== null) flag = await ctx.api.reviveFlag(flag.id, resource);
    const changes = diff(flag, desired);
    if (Object.keys(changes).length > 0) flag = await ctx.api.updateFlag(flag.id, changes, resource);
  } catch (err) {
    const outcome = apiFailure(err, `flag ${desired.key} of project ${projectId}`);
    return flag ? { ...outcome, fields: { projectId, flagId: flag.id } } : outcome;
  }
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

/** Members of `desired` that differ from the flag (key included, so a changed key meets the API's refusal). */
function diff(flag: ApiFlag, desired: FlagBody): Partial<FlagBody> {
  const out: Partial<FlagBody> = {};
  for (const k of Object.keys(desired) as (keyof FlagBody)[]) {
    if (canonical(flag[k]) !== canonical(desired[k])) (out as Record<string, unknown>)[k] = desired[k];
  }
  return out;
}

/** JSON with sorted keys and no undefined members, for comparing what the API stored with the spec. */
function canonical(v: unknown): string {
  return JSON.stringify(v ?? null, (_k, val) => {
    if (val && typeof val === 'object' && !Array.isArray(val)) {
      return Object.fromEntries(Object.entries(val).filter(([, x]) => x !== undefined).sort(([a], [b]) => a.localeCompare(b)));
    }
    return val;
  });
}

async function findFlag(ctx: ReconcileContext, obj: FeatureFlagResource, resource: string, projectId: number): Promise<ApiFlag | undefined> {
  const known = obj.status?.projectId === projectId ? obj.status?.flagId : undefined;
  if (known) {
    const f = await ctx.api.getFlag(known);
    if (f && f.managed_by === resource && f.project_id === projectId) return f;
  }
  return ctx.api.findFlag(projectId, resource);
}

async function applyDeletionPolicy(ctx: ReconcileContext, obj: FeatureFlagResource, resource: string, flagId: number): Promise<void> {
  try {
    if ((obj.spec?.deletionPolicy ?? 'Delete') === 'Retain') {
      await ctx.api.releaseFlag(flagId, resource);
    } else {
      await ctx.api.archiveFlag(flagId, resource);
      await ctx.api.deleteFlag(flagId, resource);
    }
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === 'not_found')) throw err;
  }
}

async function finalizeFlag(ctx: ReconcileContext, obj: FeatureFlagResource, resource: string): Promise<Outcome | 'gone'> {
  if (!hasFinalizer(obj)) return 'gone';
  try {
    let flagId = obj.status?.flagId;
    if (!flagId) {
      const project = ctx.projects.get(obj.metadata.namespace, obj.spec?.projectRef?.name ?? '');
      const projectId = obj.status?.projectId ?? project?.status?.projectId;
      if (projectId) flagId = (await ctx.api.findFlag(projectId, resource).catch((err) => {
        if (err instanceof ApiError && err.kind === 'not_found') return undefined;
        throw err;
      }))?.id;
    }
    if (flagId) await applyDeletionPolicy(ctx, obj, resource, flagId);
  } catch (err) {
    // 409: the flag is managed by someone else now (released, then taken): nothing of ours to remove.
    if (!(err instanceof ApiError && err.kind === 'conflict')) return apiFailure(err, `${(obj.spec?.deletionPolicy ?? 'Delete') === 'Retain' ? 'releasing' : 'deleting'} flag of ${resource}`);
  }
  await removeFinalizer(ctx, obj);
  return 'gone';
}
