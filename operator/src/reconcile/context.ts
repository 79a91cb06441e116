import type { Logger } from '@tally-analytics/server/logging';
import type { Cache } from '../cache.js';
import type { OperatorConfig } from '../config.js';
import type { ReadyReason } from '../conditions.js';
import {
  FINALIZER, type AnyResource, type ApiTokenResource, type FeatureFlagResource, type FlagSecretResource, type OrganizationResource, type ProjectResource,
} from '../kinds.js';
import type { Kube } from '../kube.js';
import type { OperatorMetrics } from '../metrics.js';
import { ApiError, type TallyApi } from '../tally-api.js';

/** What the cache keeps of a Secret: its identity and a SHA-256 per key (never the values). */
export interface SecretDigest {
  metadata: { namespace: string; name: string; uid: string; resourceVersion: string; ownerUids: string[] };
  sha256: Record<string, string>;
}

export interface ReconcileContext {
  config: OperatorConfig;
  kube: Kube;
  api: TallyApi;
  log: Logger;
  metrics: OperatorMetrics;
  organizations: Cache<OrganizationResource>;
  projects: Cache<ProjectResource>;
  flagSecrets: Cache<FlagSecretResource>;
  featureFlags: Cache<FeatureFlagResource>;
  apiTokens: Cache<ApiTokenResource>;
  /** The Secrets the operator made (labelled) and the ones FlagSecrets refer to: never all of them. */
  secrets: Cache<SecretDigest>;
  enqueue(key: string): void;
  enqueueTenantConfig(): void;
  /** Kubernetes Events for failures (deduplicated per object, reason and message). */
  warn(obj: AnyResource, reason: string, message: string): void;
  /** Normal Events: created, adopted, rotated, revoked, deleted. */
  event(obj: AnyResource, reason: string, message: string): void;
}

/**
 * How a reconcile ended. `fields` are the kind's own status fields; `ready` the Ready condition;
 * `retry`: backoff (something outside may come back), `afterMs`: look again later, otherwise wait
 * for the next change of the object or of what it refers to.
 */
export interface Outcome {
  fields?: Record<string, unknown>;
  ready?: { status: 'True' | 'False'; reason: ReadyReason; message: string };
  retry?: boolean;
  afterMs?: number;
}

export const ready = (message: string, fields: Record<string, unknown>): Outcome =>
  ({ fields, ready: { status: 'True', reason: 'Reconciled', message } });

export const notReady = (reason: ReadyReason, message: string, extra: Partial<Outcome> = {}): Outcome =>
  ({ ...extra, ready: { status: 'False', reason, message } });

/** The outcome for an API failure: ApiUnavailable retries with backoff, a refusal waits for a change. */
export function apiFailure(err: unknown, what: string): Outcome {
  if (err instanceof ApiError) {
    if (err.kind === 'invalid') return notReady('Invalid', err.message);
    if (err.kind === 'conflict') {
      const owner = (err.body as { resource?: unknown } | undefined)?.resource;
      return notReady('Conflict', owner ? `${what}: ${err.message} ${String(owner)}` : `${what}: ${err.message}`);
    }
    return notReady('ApiUnavailable', `${what}: ${err.message}`, { retry: true });
  }
  throw err;
}

/** Adds the finalizer (before any outside effect); guarded by resourceVersion so it never drops another's. */
export async function ensureFinalizer<T extends AnyResource>(ctx: ReconcileContext, obj: T): Promise<T> {
  const finalizers = obj.metadata.finalizers ?? [];
  if (finalizers.includes(FINALIZER)) return obj;
  const patched = await ctx.kube.patchResource(obj.kind, obj.metadata.namespace, obj.metadata.name, {
    metadata: { finalizers: [...finalizers, FINALIZER], resourceVersion: obj.metadata.resourceVersion },
  });
  return { ...obj, metadata: { ...obj.metadata, ...patched.metadata } } as T;
}

export async function removeFinalizer(ctx: ReconcileContext, obj: AnyResource): Promise<void> {
  const finalizers = obj.metadata.finalizers ?? [];
  if (!finalizers.includes(FINALIZER)) return;
  await ctx.kube.patchResource(obj.kind, obj.metadata.namespace, obj.metadata.name, {
    metadata: { finalizers: finalizers.filter((f) => f !== FINALIZER), resourceVersion: obj.metadata.resourceVersion },
  });
}

export const hasFinalizer = (obj: AnyResource) => (obj.metadata.finalizers ?? []).includes(FINALIZER);

/** The adopt-id annotation as a positive integer; undefined when absent; an Outcome when malformed. */
export function adoptId(obj: AnyResource, annotation: string): number | undefined | Outcome {
  const raw = obj.metadata.annotations?.[annotation];
  if (raw === undefined) return undefined;
  const id = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(id) || id <= 0) return notReady('Invalid', `annotation ${annotation}: "${raw}" is not a positive integer id`);
  return id;
}

/** The Organization resource that manages organisation `id`, if any (its status says so). */
export function organizationManaging(ctx: ReconcileContext, id: number): OrganizationResource | undefined {
  return ctx.organizations.list().find((o) => o.status?.organizationId === id && !o.metadata.deletionTimestamp);
}

/**
 * The boundary between teams: the organisation a namespaced resource in `namespace` may act for.
 * By `organizationRef`: the Organization must exist, list the namespace and have its organisation.
 * By `organizationId` (as before): an organisation that an Organization manages is reachable only
 * from the namespaces it lists; one that no Organization manages stays reachable by id (installs
 * that have not moved to Organizations; adopting it with an Organization closes that door).
 */
export function organizationFor(ctx: ReconcileContext, namespace: string, spec: { organizationRef?: { name: string }; organizationId?: number }):
  { organizationId: number; organization?: OrganizationResource } | Outcome {
  const refName = spec.organizationRef?.name;
  if (refName) {
    const org = ctx.organizations.get('', refName);
    if (!org || org.metadata.deletionTimestamp) return notReady('OrganizationNotFound', `Organization ${refName} does not exist`);
    if (!(org.spec?.namespaces ?? []).includes(namespace)) {
      return notReady('NamespaceNotAllowed', `Organization ${refName} does not list namespace ${namespace} in spec.namespaces`);
    }
    const id = org.status?.organizationId;
    if (!id) return notReady('OrganizationNotFound', `Organization ${refName} has no organisation yet (not Ready)`);
    return { organizationId: id, organization: org };
  }
  const id = spec.organizationId;
  if (!Number.isInteger(id) || (id as number) <= 0) return notReady('Invalid', 'spec: exactly one of organizationRef and organizationId is required');
  const managing = organizationManaging(ctx, id as number);
  if (managing && !(managing.spec?.namespaces ?? []).includes(namespace)) {
    return notReady('NamespaceNotAllowed', `organization ${id} is managed by Organization ${managing.metadata.name}, which does not list namespace ${namespace}`);
  }
  return { organizationId: id as number, organization: managing };
}

/** The Project a FlagSecret or FeatureFlag refers to, if it exists, may act from here, and has its project id. */
export function referencedProject(ctx: ReconcileContext, obj: FlagSecretResource | FeatureFlagResource):
  { project: ProjectResource; projectId: number } | Outcome {
  const name = obj.spec.projectRef?.name;
  const project = name ? ctx.projects.get(obj.metadata.namespace, name) : undefined;
  if (!project) return notReady('ProjectNotFound', `Project ${obj.metadata.namespace}/${name} does not exist`);
  if (project.metadata.deletionTimestamp) return notReady('ProjectNotFound', `Project ${obj.metadata.namespace}/${name} is being deleted`);
  // The Project's organisation must still accept this namespace (a namespace removed from an
  // Organization stops its flags and flag secrets too).
  const boundary = organizationFor(ctx, obj.metadata.namespace, project.spec ?? {});
  if (!('organizationId' in boundary)) return boundary.ready?.reason === 'NamespaceNotAllowed' ? boundary : notReady('ProjectNotFound', `Project ${obj.metadata.namespace}/${name}: ${boundary.ready?.message}`);
  const projectId = project.status?.projectId;
  if (!projectId) return notReady('ProjectNotFound', `Project ${obj.metadata.namespace}/${name} has no project yet (not Ready)`);
  return { project, projectId };
}

/** The FlagSecret that provides a Project's flag secret: the oldest one naming it (then by name). */
export function winningFlagSecret(ctx: ReconcileContext, namespace: string, projectName: string): FlagSecretResource | undefined {
  const candidates = ctx.flagSecrets.list().filter((f) =>
    f.metadata.namespace === namespace && f.spec?.projectRef?.name === projectName && !f.metadata.deletionTimestamp);
  candidates.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name));
  return candidates[0];
}

export const flagSecretSecretName = (fs: FlagSecretResource) => fs.spec.secretRef?.name ?? `${fs.metadata.name}-flag-secret`;
export const flagSecretSecretKey = (fs: FlagSecretResource) => fs.spec.secretRef?.key ?? 'secret';
export const apiTokenSecretName = (t: ApiTokenResource) => t.spec?.secretName ?? `${t.metadata.name}-api-token`;
