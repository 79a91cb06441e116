import type { Cache } from '../cache.js';
import type { ChangeType } from '../informer.js';
import type { AnyResource, KindName, ResourceOf } from '../kinds.js';
import type { Outcome, ReconcileContext } from '../reconcile/context.js';
import type { KindDefinition } from '../resources/meta.js';

/**
 * One kind of the operator, as the controller runs it: the CRD facts and schemas (from
 * resources/<kind>.ts), what changes enqueue it, and its reconciler. A kind module exports one
 * value of this type and registry.ts lists it; the controller has no per-kind code.
 */
export interface OperatorKind<K extends KindName> {
  /** Group/version/plural/short names and the zod spec/status the CRD is generated from. */
  definition: KindDefinition & { kind: K };
  /** Builds the kind's reconciler for one controller (it may keep memory between reconciles). */
  reconciler(ctx: ReconcileContext): KindReconciler<ResourceOf<K>>;
  /**
   * Changes of other kinds (or of this one) that enqueue objects of this kind. The kind's own
   * informer always enqueues an object when it appears, goes, or its spec, annotations, deletion
   * or status change.
   */
  watches?: KindWatch<K>[];
  /** Its changes and reconciles feed the tenant config Secret (the tenant config waits for its cache too). */
  feedsTenantConfig?: boolean;
  /** The Secret (in the object's namespace) it mints or reads: a change of that Secret enqueues the object. */
  secretName?(obj: ResourceOf<K>): string;
  /** Secrets it reads that the operator did not label, watched one by one: (namespace, name) pairs. */
  referencedSecrets?(objs: ResourceOf<K>[]): [string, string][];
  /**
   * Whether the object acts for the organisation of Organization `org` (by reference, or through
   * the Project it names). An Organization being deleted waits for those that are being deleted
   * too (once it is released they could no longer let go of what they manage), so every kind must
   * say it: `namesOrganization` and `throughProject` below cover the kinds so far.
   */
  actsFor(ctx: ReconcileContext, obj: ResourceOf<K>, org: OrganizationRef): boolean;
}

/** An Organization as its dependents name it: its name, and the organisation it manages (by the records). */
export interface OrganizationRef { name: string; id: number | undefined }

/** A spec that names `org` by `organizationRef`, or its organisation by `organizationId`. */
export const namesOrganization = (spec: { organizationRef?: { name: string }; organizationId?: number } | undefined, org: OrganizationRef) =>
  spec?.organizationRef?.name === org.name || (org.id !== undefined && spec?.organizationId === org.id);

/** An object whose `spec.projectRef` names a Project (in its namespace) that acts for `org`. */
export const throughProject = (ctx: ReconcileContext, obj: AnyResource & { spec: { projectRef?: { name: string } } }, org: OrganizationRef) => {
  const project = ctx.cache('Project').get(obj.metadata.namespace, obj.spec?.projectRef?.name ?? '');
  return !!project && namesOrganization(project.spec, org);
};

/** Every kind, for code that iterates the registry. */
export type AnyOperatorKind = { [K in KindName]: OperatorKind<K> }[KindName];

export interface KindReconciler<R> {
  /** Brings what the object manages in line with its spec (the object is not being deleted). */
  reconcile(obj: R): Promise<Outcome | 'gone'>;
  /** The object is being deleted: runs its deletion policy, then removes the finalizer ('gone'). */
  finalize(obj: R): Promise<Outcome | 'gone'>;
}

/**
 * "A change of a `kind` object enqueues these objects of mine" (controller-runtime's Watches with
 * a map function). `when` filters the watched kind's informer changes (default: any change);
 * `afterRecordChange` also maps after a reconcile of the watched object changed its record (what
 * the service said it manages); `cascade` treats the objects mapped as changed for their own
 * watchers too (an Organization's namespaces reach the flags of its Projects).
 */
export type KindWatch<K extends KindName> = {
  [W in KindName]: {
    kind: W;
    when?(type: ChangeType, obj: ResourceOf<W>, old: ResourceOf<W> | undefined): boolean;
    afterRecordChange?: boolean;
    cascade?: boolean;
    map(ctx: ReconcileContext, obj: ResourceOf<W>): ResourceOf<K>[];
  }
}[KindName];

/** An informer change that is an appearance, a disappearance, or the start or end of a deletion. */
export const appearedOrGone = (type: ChangeType, obj: AnyResource, old: AnyResource | undefined) =>
  type !== 'update' || !!old?.metadata.deletionTimestamp !== !!obj.metadata.deletionTimestamp;

/** An informer change the reconciler must look at: spec (generation), annotations or deletion changed. */
export function specChanged(obj: AnyResource, old: AnyResource | undefined): boolean {
  if (!old) return true;
  return obj.metadata.generation !== old.metadata.generation || !!obj.metadata.deletionTimestamp !== !!old.metadata.deletionTimestamp
    || JSON.stringify(obj.metadata.annotations ?? {}) !== JSON.stringify(old.metadata.annotations ?? {})
    || (obj.metadata.generation === undefined && obj.metadata.resourceVersion !== old.metadata.resourceVersion);
}

/** A status that is not what it was: the operator's own write, or someone else's, which it rewrites. */
export function statusChanged(obj: AnyResource, old: AnyResource | undefined): boolean {
  return JSON.stringify(obj.status ?? {}) !== JSON.stringify(old?.status ?? {});
}

/** The change that enqueues an object itself: it appeared or went, or its spec or status changed. */
export const changedItself = (type: ChangeType, obj: AnyResource, old: AnyResource | undefined) =>
  type !== 'update' || specChanged(obj, old) || statusChanged(obj, old);

/** Objects of `cache` in `namespace` whose `spec.projectRef` names `project` (the kinds that act in a Project's project). */
export const referringTo = <R extends AnyResource & { spec: { projectRef?: { name: string } } }>(cache: Cache<R>, project: { metadata: { namespace: string; name: string } }) =>
  cache.list().filter((o) => o.metadata.namespace === project.metadata.namespace && o.spec?.projectRef?.name === project.metadata.name);
