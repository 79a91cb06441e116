/**
 * Names of the Kubernetes contract (product.md, "Kubernetes"): outside tests and the chart rely on
 * them. Group, version and finalizer come from resources/ (the schemas the CRDs are generated from);
 * the shapes here are those objects as the operator reads them (names and namespaces always set).
 */
export { GROUP, VERSION, API_VERSION, FINALIZER } from './resources/meta.js';
export const LEASE_NAME = 'tally-operator';
export const TENANT_CONFIG_KEY = 'tenants.json';
export const FIELD_MANAGER = 'tally-operator';

export type KindName = 'Project' | 'FlagSecret' | 'FeatureFlag';
export const KINDS: Record<KindName, { plural: string }> = {
  Project: { plural: 'projects' },
  FlagSecret: { plural: 'flagsecrets' },
  FeatureFlag: { plural: 'featureflags' },
};

export interface ObjectMeta {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }[];
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

export interface Resource<Spec, Status extends BaseStatus> {
  apiVersion: string;
  kind: KindName;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

export type DeletionPolicy = 'Retain' | 'Delete';

export interface ProjectSpec { displayName: string; organizationId: number; deletionPolicy?: DeletionPolicy }
export interface ProjectStatus extends BaseStatus { projectId?: number; token?: string }
export type ProjectResource = Resource<ProjectSpec, ProjectStatus>;

export interface FlagSecretSpec { projectRef: { name: string }; secretRef?: { name: string; key?: string } }
export interface FlagSecretStatus extends BaseStatus { projectId?: number; secretName?: string }
export type FlagSecretResource = Resource<FlagSecretSpec, FlagSecretStatus>;

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
export type FeatureFlagResource = Resource<FeatureFlagSpec, FeatureFlagStatus>;

export type AnyResource = ProjectResource | FlagSecretResource | FeatureFlagResource;

/** `<Kind>/<namespace>/<name>`: the owner the service records in `managed_by`. */
export const resourceName = (kind: KindName, namespace: string, name: string) => `${kind}/${namespace}/${name}`;
/** The queue key of an object (same text as its `managed_by`). */
export const keyOf = (o: { kind: KindName; metadata: { namespace: string; name: string } }) => resourceName(o.kind, o.metadata.namespace, o.metadata.name);
export function parseKey(key: string): { kind: KindName; namespace: string; name: string } | undefined {
  const [kind, namespace, name] = key.split('/');
  if (!name || !(kind in KINDS)) return undefined;
  return { kind: kind as KindName, namespace, name };
}
