/**
 * Names of the Kubernetes contract (docs/decisions.md, "Kubernetes contract"): outside tests and the chart rely on
 * them. Group, version and finalizer come from resources/ (the schemas the CRDs are generated from);
 * the shapes here (ObjectMeta, Resource) are those objects as the operator reads them (names and
 * namespaces always set); each kind's own type is in its module in kinds/.
 */
export { GROUP, VERSION, API_VERSION, FINALIZER } from './resources/meta.js';
export const LEASE_NAME = 'tally-operator';
export const TENANT_CONFIG_KEY = 'tenants.json';
export const FIELD_MANAGER = 'tally-operator';

export { ADOPT_ANNOTATION } from './resources/meta.js';

/**
 * The resource type of each kind, by kind name. Nothing is listed here: each kind module adds its
 * own entry (`declare module '../kinds.js' { interface KindResources { Project: ProjectResource } }`),
 * so KindName and AnyResource follow the registry (registry.ts) without a second list.
 */
export interface KindResources {}
export type KindName = keyof KindResources & string;
export type ResourceOf<K extends KindName> = KindResources[K];
export type AnyResource = KindResources[KindName];

export interface ObjectMeta {
  name: string;
  /** '' for cluster-scoped kinds (Organization). */
  namespace: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean }[];
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export interface BaseStatus {
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface Resource<Kind extends string, Spec, Status extends BaseStatus> {
  apiVersion: string;
  kind: Kind;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

export type DeletionPolicy = 'Retain' | 'Delete';

/**
 * The owner the service records in `managed_by`: `<Kind>/<namespace>/<name>`, or `<Kind>/<name>`
 * for a cluster-scoped kind (Organization: its objects have namespace '').
 */
export const resourceName = (kind: KindName, namespace: string, name: string) =>
  namespace ? `${kind}/${namespace}/${name}` : `${kind}/${name}`;
/** The queue key of an object (same text as its `managed_by`). */
export const keyOf = (o: { kind: KindName; metadata: { namespace: string; name: string } }) => resourceName(o.kind, o.metadata.namespace, o.metadata.name);
/** A key's parts (the controller checks that the kind is registered and its scope matches). */
export function parseKey(key: string): { kind: KindName; namespace: string; name: string } | undefined {
  const parts = key.split('/');
  const kind = parts[0] as KindName;
  if (!kind) return undefined;
  if (parts.length === 2) return parts[1] ? { kind, namespace: '', name: parts[1] } : undefined;
  const [, namespace, name] = parts;
  if (!namespace || !name || parts.length !== 3) return undefined;
  return { kind, namespace, name };
}
