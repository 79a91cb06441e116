import { ADOPT_ANNOTATION, keyOf, type BaseStatus, type DeletionPolicy, type Resource } from '../kinds.js';
import { PROJECT } from '../resources/project.js';
import { ApiError, type ApiProject, type ProjectLimits } from '../tally-api.js';
import {
  adoptId, apiFailure, deletionPolicyNow, ensureFinalizer, hasFinalizer, notReady, organizationFor, ready, removeFinalizer, type Outcome, type ProjectRecord,
  type ReconcileContext,
} from '../reconcile/context.js';
import { adoptByAnnotation } from '../reconcile/adopt.js';
import { namesOrganization, specChanged, type OperatorKind } from './kind.js';

export interface RateLimit { requestsPer10Seconds: number }
export interface ProjectSpec {
  displayName: string;
  organizationRef?: { name: string };
  organizationId?: number;
  retentionDays?: number;
  rateLimit?: RateLimit;
  deletionPolicy?: DeletionPolicy;
}
export interface ProjectStatus extends BaseStatus { projectId?: number; organizationId?: number; token?: string }
export type ProjectResource = Resource<'Project', ProjectSpec, ProjectStatus>;

declare module '../kinds.js' {
  interface KindResources { Project: ProjectResource }
}

/**
 * Project: enqueued by a change of its Organization (named by organizationRef, or managing its
 * organizationId; before that organisation is known, every Project that names an id), and when
 * that Organization's record changes; what acts in the Project's project follows (cascade).
 */
export const project: OperatorKind<'Project'> = {
  definition: PROJECT,
  reconciler: (ctx) => ({ reconcile: (obj) => reconcileProject(ctx, obj), finalize: (obj) => finalizeProject(ctx, obj, keyOf(obj)) }),
  watches: [{
    kind: 'Organization',
    when: (type, obj, old) => type !== 'update' || specChanged(obj, old),
    afterRecordChange: true,
    cascade: true,
    map: (ctx, org) => {
      const ids = new Set([ctx.records.organizations.get(keyOf(org))].filter((x): x is number => !!x));
      return ctx.cache('Project').list().filter((p) => p.spec?.organizationRef?.name === org.metadata.name
        || (p.spec?.organizationId && (ids.has(p.spec.organizationId) || ids.size === 0)));
    },
  }],
  feedsTenantConfig: true,
  actsFor: (_ctx, p, org) => namesOrganization(p.spec, org),
};

/**
 * Project ↔ a project of its organisation. The organisation comes from `organizationRef` or
 * `organizationId`, through the namespace boundary (organizationFor): nothing reaches the service
 * from a namespace the Organization does not list. Found again by `managed_by` (never by status,
 * which is output only), or adopted by the adopt-id annotation when the target is a project of
 * that very organisation (else AdoptionRefused, checked before anything changes); name, retention
 * and rate limit follow the spec. On deletion `Retain` releases the project (it stays, no longer
 * managed) and `Delete` removes it: only ever the project the service records as this resource's.
 */
export async function reconcileProject(ctx: ReconcileContext, obj: ProjectResource): Promise<Outcome> {
  const resource = keyOf(obj);
  return recorded(ctx, resource, await reconcileLive(ctx, obj, resource));
}

/**
 * Keeps the record from what the reconcile found and writes the status fields from it: a transient
 * failure keeps the last record, anything else not Ready drops it. Fields absent from the record go
 * as null, which removes them (so a status written by anyone else does not survive).
 */
function recorded(ctx: ReconcileContext, resource: string, result: { outcome: Outcome; record?: ProjectRecord }): Outcome {
  const { outcome, record } = result;
  if (record && outcome.ready?.status === 'True') ctx.records.projects.set(resource, record);
  else if (!outcome.retry) ctx.records.projects.delete(resource);
  const kept = ctx.records.projects.get(resource);
  return { ...outcome, fields: { projectId: kept?.projectId ?? null, organizationId: kept?.organizationId ?? null, token: kept?.token ?? null } };
}

async function reconcileLive(ctx: ReconcileContext, obj: ProjectResource, resource: string): Promise<{ outcome: Outcome; record?: ProjectRecord }> {
  const spec = obj.spec ?? ({} as ProjectResource['spec']);
  if (typeof spec.displayName !== 'string' || spec.displayName.trim() === '') return { outcome: notReady('Invalid', 'spec.displayName: required') };
  const boundary = organizationFor(ctx, obj.metadata.namespace, spec);
  if (!('organizationId' in boundary)) return { outcome: boundary };
  const { organizationId } = boundary;
  const adopt = adoptId(obj, ADOPT_ANNOTATION);
  if (typeof adopt === 'object') return { outcome: adopt };
  const limits: ProjectLimits = { retentionDays: spec.retentionDays ?? null, rateLimit: spec.rateLimit ?? null };

  let project: ApiProject | undefined;
  try {
    project = await ctx.api.findProject(resource);
    if (!project && adopt !== undefined) {
      // Checked before the finalizer or any write: a refused adoption leaves no trace in the service.
      const refused = await adoptionRefusal(ctx, adopt, organizationId, resource);
      if (refused) return { outcome: refused };
    }
    obj = await ensureFinalizer(ctx, obj);
    if (!project && adopt !== undefined) {
      const taken = await adoptByAnnotation(ctx, obj, 'project', adopt, (id) => ctx.api.adoptProject(id, resource));
      if ('outcome' in taken) return { outcome: taken.outcome };
      project = taken.adopted;
    }
    if (!project) {
      try {
        project = await ctx.api.createProject(organizationId, spec.displayName, resource, limitsToSend(limits));
      } catch (err) {
        if (err instanceof ApiError && err.kind === 'not_found') {
          return { outcome: notReady('OrganizationNotFound', `organization ${organizationId} does not exist`, { retry: true }) };
        }
        throw err;
      }
      ctx.event(obj, 'Created', `project ${project.id} created in organization ${organizationId}`);
    }
    if (project.org_id != null && project.org_id !== organizationId) {
      return { outcome: notReady('Invalid', `the organisation is immutable (project ${project.id} belongs to organization ${project.org_id}, the spec names ${organizationId})`) };
    }
    const changes: { name?: string } & Partial<ProjectLimits> = {};
    if (project.name !== spec.displayName) changes.name = spec.displayName;
    if ((project.retention_days ?? null) !== limits.retentionDays) changes.retentionDays = limits.retentionDays;
    if (JSON.stringify(project.rate_limit ?? null) !== JSON.stringify(limits.rateLimit)) changes.rateLimit = limits.rateLimit;
    if (Object.keys(changes).length > 0) project = { ...project, ...(await ctx.api.updateProject(project.id, changes, resource)) };
  } catch (err) {
    return { outcome: apiFailure(err, `project of ${resource}`) };
  }
  return { outcome: ready(`project ${project.id}`, {}), record: { projectId: project.id, organizationId, token: project.token } };
}

/**
 * Why adopting project `id` is refused, if it is: it must be a project of the resource's own
 * organisation (which organizationFor has already checked lists the namespace). A body without
 * `org_id` cannot prove that, so it is refused too (fail closed). A project managed by another
 * resource is left to the service's 409 (Conflict, as before).
 */
async function adoptionRefusal(ctx: ReconcileContext, id: number, organizationId: number, resource: string): Promise<Outcome | undefined> {
  const target = await ctx.api.getProject(id);
  if (!target) return notReady('Invalid', `${ADOPT_ANNOTATION}: project ${id} does not exist`);
  if (target.managed_by && target.managed_by !== resource) return undefined;
  if (target.org_id == null) {
    return notReady('AdoptionRefused', `${ADOPT_ANNOTATION}: the service did not say which organisation project ${id} belongs to, so it is not adopted`);
  }
  if (target.org_id !== organizationId) {
    return notReady('AdoptionRefused', `${ADOPT_ANNOTATION}: project ${id} is not a project of organization ${organizationId} (this Project's organisation); only a project of its own organisation can be adopted`);
  }
  return undefined;
}

/** Only the limits the spec sets (so a service that predates them still creates plain projects). */
function limitsToSend(limits: ProjectLimits): Partial<ProjectLimits> {
  const out: Partial<ProjectLimits> = {};
  if (limits.retentionDays !== null) out.retentionDays = limits.retentionDays;
  if (limits.rateLimit !== null) out.rateLimit = limits.rateLimit;
  return out;
}

export async function finalizeProject(ctx: ReconcileContext, obj: ProjectResource, resource: string): Promise<Outcome | 'gone'> {
  if (!hasFinalizer(obj)) {
    ctx.records.projects.delete(resource);
    return 'gone';
  }
  const policy = await deletionPolicyNow(ctx, obj, obj.spec?.deletionPolicy ?? 'Retain');
  try {
    // The service's record of what this resource manages, and nothing else (never a status id).
    const project = await ctx.api.findProject(resource);
    if (project && project.managed_by === resource) {
      if (policy === 'Delete') await ctx.api.deleteProject(project.id, resource);
      else await ctx.api.releaseProject(project.id, resource);
      ctx.event(obj, policy === 'Delete' ? 'Deleted' : 'Released', `project ${project.id} ${policy === 'Delete' ? 'deleted' : 'released (kept, no longer managed)'}`);
    }
  } catch (err) {
    if (!(err instanceof ApiError && (err.kind === 'not_found' || err.kind === 'conflict'))) return apiFailure(err, `${policy === 'Delete' ? 'deleting' : 'releasing'} project of ${resource}`);
  }
  ctx.records.projects.delete(resource);
  await removeFinalizer(ctx, obj);
  return 'gone';
}
