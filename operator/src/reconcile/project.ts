import { ADOPT_ANNOTATION, keyOf, type ProjectResource } from '../kinds.js';
import { ApiError, type ApiProject, type ProjectLimits } from '../tally-api.js';
import {
  adoptId, apiFailure, ensureFinalizer, hasFinalizer, notReady, organizationFor, ready, removeFinalizer, type Outcome, type ReconcileContext,
} from './context.js';
import { adoptByAnnotation } from './adopt.js';

/**
 * Project ↔ a project of its organisation. The organisation comes from `organizationRef` or
 * `organizationId`, through the namespace boundary (organizationFor): nothing reaches the service
 * from a namespace the Organization does not list. Found again by `managed_by` (never a second
 * create after a crash between create and status), or adopted by the adopt-id annotation; name,
 * retention and rate limit follow the spec. On deletion `Retain` releases the project (it stays,
 * no longer managed) and `Delete` removes it.
 */
export async function reconcileProject(ctx: ReconcileContext, obj: ProjectResource): Promise<Outcome | 'gone'> {
  const resource = keyOf(obj);
  if (obj.metadata.deletionTimestamp) return finalizeProject(ctx, obj, resource);

  const spec = obj.spec ?? ({} as ProjectResource['spec']);
  if (typeof spec.displayName !== 'string' || spec.displayName.trim() === '') return notReady('Invalid', 'spec.displayName: required');
  const boundary = organizationFor(ctx, obj.metadata.namespace, spec);
  if (!('organizationId' in boundary)) return boundary;
  const { organizationId } = boundary;
  const adopt = adoptId(obj, ADOPT_ANNOTATION);
  if (typeof adopt === 'object') return adopt;
  const limits: ProjectLimits = { retentionDays: spec.retentionDays ?? null, rateLimit: spec.rateLimit ?? null };

  obj = await ensureFinalizer(ctx, obj);
  let project: ApiProject | undefined;
  try {
    project = await findProject(ctx, obj, resource);
    if (!project && adopt !== undefined) {
      const taken = await adoptByAnnotation(ctx, obj, 'project', adopt, (id) => ctx.api.adoptProject(id, resource));
      if ('outcome' in taken) return taken.outcome;
      project = taken.adopted;
    }
    if (!project) {
      try {
        project = await ctx.api.createProject(organizationId, spec.displayName, resource, limitsToSend(limits));
      } catch (err) {
        if (err instanceof ApiError && err.kind === 'not_found') {
          return notReady('OrganizationNotFound', `organization ${organizationId} does not exist`, { retry: true });
        }
        throw err;
      }
      ctx.event(obj, 'Created', `project ${project.id} created in organization ${organizationId}`);
    }
    if (project.org_id != null && project.org_id !== organizationId) {
      return notReady('Invalid', `the organisation is immutable (project ${project.id} belongs to organization ${project.org_id}, the spec names ${organizationId})`,
        { fields: { projectId: project.id, token: project.token } });
    }
    const changes: { name?: string } & Partial<ProjectLimits> = {};
    if (project.name !== spec.displayName) changes.name = spec.displayName;
    if ((project.retention_days ?? null) !== limits.retentionDays) changes.retentionDays = limits.retentionDays;
    if (JSON.stringify(project.rate_limit ?? null) !== JSON.stringify(limits.rateLimit)) changes.rateLimit = limits.rateLimit;
    if (Object.keys(changes).length > 0) project = { ...project, ...(await ctx.api.updateProject(project.id, changes, resource)) };
  } catch (err) {
    return apiFailure(err, `project of ${resource}`);
  }
  return ready(`project ${project.id}`, { projectId: project.id, organizationId, token: project.token });
}

/** Only the limits the spec sets (so a service that predates them still creates plain projects). */
function limitsToSend(limits: ProjectLimits): Partial<ProjectLimits> {
  const out: Partial<ProjectLimits> = {};
  if (limits.retentionDays !== null) out.retentionDays = limits.retentionDays;
  if (limits.rateLimit !== null) out.rateLimit = limits.rateLimit;
  return out;
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
      ctx.event(obj, policy === 'Delete' ? 'Deleted' : 'Released', `project ${project.id} ${policy === 'Delete' ? 'deleted' : 'released (kept, no longer managed)'}`);
    }
  } catch (err) {
    if (!(err instanceof ApiError && (err.kind === 'not_found' || err.kind === 'conflict'))) return apiFailure(err, `${policy === 'Delete' ? 'deleting' : 'releasing'} project of ${resource}`);
  }
  await removeFinalizer(ctx, obj);
  return 'gone';
}
