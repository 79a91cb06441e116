import { keyOf, type AnyResource, type DeletionPolicy } from '../kinds.js';
import { ApiError } from '../tally-api.js';
import { apiFailure, deletionPolicyNow, hasFinalizer, removeFinalizer, type Outcome, type ReconcileContext } from './context.js';

/** How a kind that manages one object inside its Project's project (a flag, an experiment) lets go of it. */
export interface ProjectScopedFinalizer<T extends { id: number }> {
  /** `flag`, `experiment`: for the condition's message. */
  what: string;
  /** The deletion policy the spec asks for (before the CRD check). */
  policy: DeletionPolicy;
  /** The objects the service records as this resource's, found by the ids the operator knows. */
  own(): Promise<T[]>;
  /** The project id the operator last recorded for this resource, if any. */
  recordedProjectId: number | undefined;
  /** The service's object managed by `resource` in a project, if any. */
  find(projectId: number, resource: string): Promise<T | undefined>;
  /** Runs the policy on one object: `Retain` releases it, `Delete` deletes it; an object already gone is done. */
  apply(policy: DeletionPolicy, id: number, resource: string): Promise<void>;
}

/**
 * The finalizer of such a kind: acts only on what the service records as managed by this very
 * resource (never an id from status alone), falling back to a lookup by owner in the Project's
 * project; a `Delete` policy becomes `Retain` while the kind's CRD is being deleted
 * (deletionPolicyNow). 409 (someone else manages it now) leaves nothing of ours.
 */
export async function finalizeProjectScoped<T extends { id: number }>(
  ctx: ReconcileContext, obj: AnyResource & { spec?: { projectRef?: { name: string } } }, resource: string, f: ProjectScopedFinalizer<T>,
): Promise<Outcome | 'gone'> {
  if (!hasFinalizer(obj)) return 'gone';
  const policy = await deletionPolicyNow(ctx, obj, f.policy);
  try {
    const found = await f.own();
    if (found.length === 0) {
      const project = ctx.cache('Project').get(obj.metadata.namespace, obj.spec?.projectRef?.name ?? '');
      const projectId = f.recordedProjectId ?? (project && ctx.records.projects.get(keyOf(project))?.projectId);
      const one = projectId ? await f.find(projectId, resource).catch((err) => {
        if (err instanceof ApiError && err.kind === 'not_found') return undefined;
        throw err;
      }) : undefined;
      if (one) found.push(one);
    }
    for (const o of found) await f.apply(policy, o.id, resource);
  } catch (err) {
    if (!(err instanceof ApiError && err.kind === 'conflict')) return apiFailure(err, `${policy === 'Retain' ? 'releasing' : 'deleting'} ${f.what} of ${resource}`);
  }
  await removeFinalizer(ctx, obj);
  return 'gone';
}

/**
 * The objects the service says `resource` manages, among the ids known for it: the record's, and
 * the status's as a mere hint (each is read back and kept only when the service names this very
 * resource as its manager, so a forged status names nothing the operator acts on).
 */
export async function managedAmong<T>(
  ids: (number | undefined)[], read: (id: number) => Promise<T | undefined>, managedBy: (o: T) => string | null | undefined, resource: string,
): Promise<T[]> {
  const known = new Set(ids.filter((x): x is number => Number.isSafeInteger(x) && (x as number) > 0));
  const out: T[] = [];
  for (const id of known) {
    const o = await read(id);
    if (o && managedBy(o) === resource) out.push(o);
  }
  return out;
}
