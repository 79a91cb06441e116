import { keyOf, type ProjectResource } from '../kinds.js';
import { ApiError, type ApiProject } from '../tally-api.js';
import { apiFailure, ensureFinalizer, hasFinalizer, notReady, ready, removeFinalizer, type Outcome, type ReconcileContext } from './context.js';

/**
 * Project ↔ a project of its organisation. Found again by `managed_by` (never a second create
 * after a crash between create and status), renamed when displayName changes; on deletion,
 * `Retain` releases the project (it stays, no longer managed) and `Delete` removes it.
 */
export async function reconcileProject(ctx: ReconcileContext, obj: ProjectResource): Promise<Outcome | 'gone'> {
  const resource = keyOf(obj);
  if (obj.metadata.deletionTimestamp) return finalizeProject(ctx, obj, resource);

  const { displayName, organizationId } = obj.spec ?? ({} as ProjectResource['spec']);
  if (typeof displayName !== 'string' || displayName.trim() === '') return notReady('Invalid', 'spec.displayName: required');
  if (!Number.isInteger(organizationId) || organizationId <= 0) return notReady('Invalid', 'spec.organizationId: must be a positive integer');

  obj = await ensureFinalizer(ctx, obj);
  let project: ApiProject | undefined;
  try {
    project = await findProject(ctx, obj, resource);
    if (!project) {
      try {
        project = await ctx.api.createProject(organizationId, displayName, resource);
      } catch (err) {
        if (err instanceof ApiError && err.kind === 'not_found') {
          return notReady('OrganizationNotFound', `organization ${organizationId} does not exist`, { retry: true });
        }
        throw err;
      }
    } else if (project.org_id != null && project.org_id !== organizationId) {
      return notReady('Invalid', `spec.organizationId: is immutable (project ${project.id} belongs to organization ${project.org_id})`,
        { fields: { projectId: project.id, token: project.token } });
    } else if (project.name !== displayName) {
      project = { ...project, ...(await ctx.api.renameProject(project.id, displayName, resource)) };
    }
  } catch (err) {
    return apiFailure(err, `project of ${resource}`);
  }
  return ready(`project ${project.id}`, { projectId: project.id, token: project.token });
}

async function findProject(ctx: ReconcileContext, obj: ProjectResource, resource: string): Promise<ApiProject | undefined> {
  const known = obj.status?.projectId;
  if (known) {
    const p = await ctx.api.getProject(known);
    if (p && p.managed_by === resource) return p;
  }
  return ctx.api.findProject(resource);
}

async function finalizeProject(ctx: ReconcileContext, obj: ProjectResource, resource: string): Promise<Outcome | 'gone'> {
  if (!hasFinalizer(obj)) return 'gone';
  const policy = obj.spec?.deletionPolicy ?? 'Retain';
  try {
    const project = await findProject(ctx, obj, resource);
    if (project) {
      if (policy === 'Delete') await ctx.api.deleteProject(project.id, resource);
      else await ctx.api.releaseProject(project.id, resource);
    }
  } catch (err) {
    if (!(err instanceof ApiError && (err.kind === 'not_found' || err.kind === 'conflict'))) return apiFailure(err, `${policy === 'Delete' ? 'deleting' : 'releasing'} project of ${resource}`);
  }
  await removeFinalizer(ctx, obj);
  return 'gone';
}
