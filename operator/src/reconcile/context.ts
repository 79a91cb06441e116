import type { Logger } from '@tally-analytics/server/logging';
import type { Cache } from '../cache.js';
import type { OperatorConfig } from '../config.js';
import type { ReadyReason } from '../conditions.js';
import { ADOPT_ANNOTATION, FINALIZER, keyOf, type AnyResource, type DeletionPolicy, type KindName, type ResourceOf } from '../kinds.js';
import type { ApiTokenResource } from '../kinds/apitoken.js';
import type { AnyOperatorKind } from '../kinds/kind.js';
import type { FlagSecretResource } from '../kinds/flagsecret.js';
import type { OrganizationResource } from '../kinds/organization.js';
import type { ProjectResource } from '../kinds/project.js';
import type { Kube } from '../kube.js';
import type { OperatorMetrics } from '../metrics.js';
import { ApiError, type BoundaryReason, type TallyApi } from '../tally-api.js';

/** What the cache keeps of a Secret: its identity and a SHA-256 per key (never the values). */
export interface SecretDigest {
  metadata: { namespace: string; name: string; uid: string; resourceVersion: string; ownerUids: string[] };
  sha256: Record<string, string>;
}

/** What the service said about a Project's project (found by `managed_by`, never read from status). */
export interface ProjectRecord { projectId: number; organizationId: number; token: string }

/**
 * Status is output only: what the service said each resource manages, kept in memory per resource
 * key and refreshed at each reconcile. Every decision (the boundary, references, the tenant config,
 * deletion) reads these, never a status a tenant may have written. A reconcile that ends in a
 * transient failure (`retry`: the API is down, or an Organization not reconciled yet since start)
 * keeps the last record, so an outage never drops a project from the tenant config; any other
 * ending (refused, gone, invalid) drops it.
 */
export class ManagedRecords {
  readonly projects = new Map<string, ProjectRecord>();
  readonly organizations = new Map<string, number>();
  /** FlagSecret key → the project whose flag secret it set. */
  readonly flagSecrets = new Map<string, number>();
  /** FeatureFlag key → its flag (a hint only: always checked against the service's managed_by). */
  readonly featureFlags = new Map<string, { projectId: number; flagId: number }>();
  /** ApiToken key → the organisation its token was minted in. */
  readonly apiTokens = new Map<string, number>();
  /** Each kind's own records, which no other kind reads (see `of`). */
  private readonly byKind = new Map<KindName, Map<string, unknown>>();
  /** Keys reconciled at least once since start (the tenant config waits for all of them). */
  readonly reconciled = new Set<string>();
  /** Keys whose last reconcile ended in a transient failure (their records are last known, not fresh). */
  readonly retrying = new Set<string>();

  /** Not yet known for sure: never reconciled since start, or its last reconcile failed transiently. */
  undecided(key: string): boolean {
    return !this.reconciled.has(key) || this.retrying.has(key);
  }

  /** One key's record as a string, to see whether a reconcile changed it. */
  signature(key: string): string {
    return JSON.stringify([this.projects.get(key), this.organizations.get(key), this.flagSecrets.get(key)]);
  }

  /** A kind's own records by resource key (forgotten with the resource, like the ones above). */
  of<T>(kind: KindName): Map<string, T> {
    let m = this.byKind.get(kind);
    if (!m) this.byKind.set(kind, m = new Map<string, unknown>());
    return m as Map<string, T>;
  }

  forget(key: string): void {
    for (const m of [this.projects, this.organizations, this.flagSecrets, this.featureFlags, this.apiTokens, ...this.byKind.values()] as Map<string, unknown>[]) m.delete(key);
    this.reconciled.delete(key);
    this.retrying.delete(key);
  }
}

export interface ReconcileContext {
  config: OperatorConfig;
  records: ManagedRecords;
  kube: Kube;
  api: TallyApi;
  log: Logger;
  metrics: OperatorMetrics;
  /** The informer cache of a kind (every kind of the registry has one). */
  cache<K extends KindName>(kind: K): Cache<ResourceOf<K>>;
  /** The Secrets the operator made (labelled) and the ones FlagSecrets refer to: never all of them. */
  secrets: Cache<SecretDigest>;
  enqueue(key: string): void;
  enqueueTenantConfig(): void;
  /** The registered kinds (registry.ts), for a reconciler that looks across all of them. */
  kinds(): readonly AnyOperatorKind[];
  /** Whether the CRD of `kind` is being deleted (a fresh read unless it was seen being deleted just now). */
  crdBeingDeleted(kind: KindName): Promise<boolean>;
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
    if (err.kind === 'refused') {
      const reason = (err.body as { reason: BoundaryReason }).reason;
      return notReady(reason, `${what}: ${err.message}`);
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

/**
 * The deletion policy to run for a resource being deleted. When its CRD is being deleted,
 * Kubernetes deletes every resource of the kind: `Delete` is then not run but behaves as `Retain`
 * (what the resource manages is released, never deleted), with a Warning Event saying why, so
 * removing a CRD (by mistake, or by a tool that prunes it) never deletes a tenant's data.
 */
export async function deletionPolicyNow(ctx: ReconcileContext, obj: AnyResource, policy: DeletionPolicy): Promise<DeletionPolicy> {
  if (policy !== 'Delete' || !(await ctx.crdBeingDeleted(obj.kind))) return policy;
  ctx.warn(obj, 'CRDBeingDeleted', `deletionPolicy Delete not run: the CustomResourceDefinition ${ctx.kube.crdName(obj.kind)} is being deleted, `
    + 'so what this resource manages is released (kept, no longer managed) instead of deleted');
  return 'Retain';
}

/** The adopt-id annotation as a positive integer; undefined when absent; an Outcome when malformed. */
export function adoptId(obj: AnyResource, annotation: string): number | undefined | Outcome {
  const raw = obj.metadata.annotations?.[annotation];
  if (raw === undefined) return undefined;
  const id = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(id) || id <= 0) return notReady('Invalid', `annotation ${annotation}: "${raw}" is not a positive integer id`);
  return id;
}

/** The organisation an Organization manages, as the service said at its last reconcile. */
export const organizationIdOf = (ctx: ReconcileContext, org: OrganizationResource) => ctx.records.organizations.get(keyOf(org));

/** The Organization resource that manages organisation `id`, if any (by the records, never by status). */
export function organizationManaging(ctx: ReconcileContext, id: number): OrganizationResource | undefined {
  return ctx.cache('Organization').list().find((o) => !o.metadata.deletionTimestamp && organizationIdOf(ctx, o) === id);
}

/** An Organization not yet reconciled since start may still turn out to manage what is asked: not a refusal yet. */
const undecided = (ctx: ReconcileContext) => ctx.cache('Organization').list().filter((o) => !o.metadata.deletionTimestamp && ctx.records.undecided(keyOf(o)));

/**
 * The boundary between teams: the organisation a namespaced resource in `namespace` may act for.
 * By `organizationRef`: the Organization must exist, list the namespace and have its organisation.
 * By `organizationId` (as before): only an organisation that an Organization manages, from the
 * namespaces it lists; one that nothing manages is NamespaceNotAllowed (adopt it with an
 * Organization), unless TENANCY_ALLOW_UNMANAGED_ORGS restores the open behaviour for a migration.
 */
export function organizationFor(ctx: ReconcileContext, namespace: string, spec: { organizationRef?: { name: string }; organizationId?: number }):
  { organizationId: number; organization?: OrganizationResource } | Outcome {
  const refName = spec.organizationRef?.name;
  if (refName) {
    const org = ctx.cache('Organization').get('', refName);
    if (!org || org.metadata.deletionTimestamp) return notReady('OrganizationNotFound', `Organization ${refName} does not exist`);
    if (!(org.spec?.namespaces ?? []).includes(namespace)) {
      return notReady('NamespaceNotAllowed', `Organization ${refName} does not list namespace ${namespace} in spec.namespaces`);
    }
    const id = organizationIdOf(ctx, org);
    if (!id) {
      const pending = ctx.records.undecided(keyOf(org));
      return notReady('OrganizationNotFound', `Organization ${refName} has no organisation yet (not Ready)`, pending ? { retry: true } : {});
    }
    return { organizationId: id, organization: org };
  }
  const id = spec.organizationId;
  if (!Number.isInteger(id) || (id as number) <= 0) return notReady('Invalid', 'spec: exactly one of organizationRef and organizationId is required');
  const managing = organizationManaging(ctx, id as number);
  if (managing && !(managing.spec?.namespaces ?? []).includes(namespace)) {
    return notReady('NamespaceNotAllowed', `organization ${id} is managed by Organization ${managing.metadata.name}, which does not list namespace ${namespace}`);
  }
  if (!managing && !ctx.config.allowUnmanagedOrgs) {
    const pending = undecided(ctx);
    if (pending.length > 0) return notReady('OrganizationNotFound', `organization ${id}: waiting for Organization ${pending[0].metadata.name} to be reconciled`, { retry: true });
    return notReady('NamespaceNotAllowed', `organization ${id} is not managed by an Organization resource: a platform team adopts it with an Organization `
      + `(annotation ${ADOPT_ANNOTATION}) listing namespace ${namespace} in spec.namespaces`);
  }
  return { organizationId: id as number, organization: managing };
}

/** The Project that an object of a project-scoped kind names in spec.projectRef, if it exists, may act from here, and has its project (by the records). */
export function referencedProject(ctx: ReconcileContext, obj: AnyResource & { spec: { projectRef?: { name: string } } }):
  { project: ProjectResource; projectId: number } | Outcome {
  const name = obj.spec.projectRef?.name;
  const project = name ? ctx.cache('Project').get(obj.metadata.namespace, name) : undefined;
  if (!project) return notReady('ProjectNotFound', `Project ${obj.metadata.namespace}/${name} does not exist`);
  if (project.metadata.deletionTimestamp) return notReady('ProjectNotFound', `Project ${obj.metadata.namespace}/${name} is being deleted`);
  // The Project's organisation must still accept this namespace (a namespace removed from an
  // Organization stops its flags and flag secrets too).
  const boundary = organizationFor(ctx, obj.metadata.namespace, project.spec ?? {});
  if (!('organizationId' in boundary)) {
    if (boundary.ready?.reason === 'NamespaceNotAllowed') return boundary;
    return notReady('ProjectNotFound', `Project ${obj.metadata.namespace}/${name}: ${boundary.ready?.message}`, { retry: boundary.retry });
  }
  const record = ctx.records.projects.get(keyOf(project));
  if (!record || record.organizationId !== boundary.organizationId) {
    const pending = ctx.records.undecided(keyOf(project));
    return notReady('ProjectNotFound', `Project ${obj.metadata.namespace}/${name} has no project yet (not Ready)`, pending ? { retry: true } : {});
  }
  return { project, projectId: record.projectId };
}

/** The FlagSecret that provides a Project's flag secret: the oldest one naming it (then by name). */
export function winningFlagSecret(ctx: ReconcileContext, namespace: string, projectName: string, includeDeleting = false): FlagSecretResource | undefined {
  const candidates = ctx.cache('FlagSecret').list().filter((f) =>
    f.metadata.namespace === namespace && f.spec?.projectRef?.name === projectName && (includeDeleting || !f.metadata.deletionTimestamp));
  candidates.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') || a.metadata.name.localeCompare(b.metadata.name));
  return candidates[0];
}

export const flagSecretSecretName = (fs: FlagSecretResource) => fs.spec.secretRef?.name ?? `${fs.metadata.name}-flag-secret`;
export const flagSecretSecretKey = (fs: FlagSecretResource) => fs.spec.secretRef?.key ?? 'secret';
export const apiTokenSecretName = (t: ApiTokenResource) => t.spec?.secretName ?? `${t.metadata.name}-api-token`;
