/**
 * Names of the Kubernetes contract (docs/decisions.md, "Kubernetes contract"): outside tests and the chart rely on
 * them. Group, version and finalizer come from resources/ (the schemas the CRDs are generated from);
 * the shapes here are those objects as the operator reads them (names and namespaces always set).
 */
export { GROUP, VERSION, API_VERSION, FINALIZER } from './resources/meta.js';
export const LEASE_NAME = 'tally-operator';
export const TENANT_CONFIG_KEY = 'tenants.json';
export const FIELD_MANAGER = 'tally-operator';

export { ADOPT_ANNOTATION } from './resources/meta.js';

export type KindName = 'Organization' | 'Project' | 'FlagSecret' | 'FeatureFlag' | 'ApiToken' | 'Experiment';
export const KINDS: Record<KindName, { plural: string; cluster?: boolean }> = {
  Organization: { plural: 'organizations', cluster: true },
  Project: { plural: 'projects' },
  FlagSecret: { plural: 'flagsecrets' },
  FeatureFlag: { plural: 'featureflags' },
  ApiToken: { plural: 'apitokens' },
  Experiment: { plural: 'experiments' },
};
/** The kinds that live in a namespace and act for an Organization that lists it. */
export const NAMESPACED_KINDS = ['Project', 'FlagSecret', 'FeatureFlag', 'ApiToken', 'Experiment'] as const;

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

export interface Resource<Spec, Status extends BaseStatus> {
  apiVersion: string;
  kind: KindName;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

export type DeletionPolicy = 'Retain' | 'Delete';

export interface OrganizationSpec {
  displayName: string;
  namespaces: string[];
  monthlyEventQuota?: number;
  members?: { email: string; role: string }[];
  groups?: { name: string; role: string }[];
  deletionPolicy?: DeletionPolicy;
}
export interface OrganizationUsage { month: string; events: number; monthlyEventQuota?: number }
export interface OrganizationStatus extends BaseStatus { organizationId?: number; usage?: OrganizationUsage }
export type OrganizationResource = Resource<OrganizationSpec, OrganizationStatus>;

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

export interface ApiTokenSpec { organizationRef: { name: string }; role: 'viewer' | 'member' | 'admin'; secretName?: string }
export interface ApiTokenStatus extends BaseStatus { organizationId?: number; tokenId?: number; secretName?: string }
export type ApiTokenResource = Resource<ApiTokenSpec, ApiTokenStatus>;

export interface ExperimentSpec {
  projectRef: { name: string };
  flagRef?: { name: string };
  flagKey?: string;
  key: string;
  name?: string;
  control?: string;
  metrics: { id: string; name?: string; kind: string; event: string; property?: string; windowHours?: number }[];
  primaryMetricId?: string;
  engine?: string;
  confidenceLevel?: number;
  sequential?: boolean;
  correction?: string;
  startAt?: number | null;
  endAt?: number | null;
  deletionPolicy?: DeletionPolicy;
}
export interface ExperimentStatus extends BaseStatus {
  projectId?: number;
  experimentId?: number;
  flagKey?: string;
  exposures?: Record<string, number>;
  totalExposures?: number;
  srm?: { pValue: number; ok: boolean };
  primary?: { metricId: string; variants: Record<string, unknown>[] };
  decision?: string;
  winner?: string | null;
  resultsAt?: string;
}
export type ExperimentResource = Resource<ExperimentSpec, ExperimentStatus>;

export type AnyResource = OrganizationResource | ProjectResource | FlagSecretResource | FeatureFlagResource | ApiTokenResource | ExperimentResource;

/**
 * The owner the service records in `managed_by`: `<Kind>/<namespace>/<name>`, or `<Kind>/<name>`
 * for a cluster-scoped kind (Organization).
 */
export const resourceName = (kind: KindName, namespace: string, name: string) =>
  KINDS[kind].cluster ? `${kind}/${name}` : `${kind}/${namespace}/${name}`;
/** The queue key of an object (same text as its `managed_by`). */
export const keyOf = (o: { kind: KindName; metadata: { namespace: string; name: string } }) => resourceName(o.kind, o.metadata.namespace, o.metadata.name);
export function parseKey(key: string): { kind: KindName; namespace: string; name: string } | undefined {
  const parts = key.split('/');
  const kind = parts[0] as KindName;
  if (!(kind in KINDS)) return undefined;
  if (KINDS[kind].cluster) return parts.length === 2 && parts[1] ? { kind, namespace: '', name: parts[1] } : undefined;
  const [, namespace, name] = parts;
  if (!name || parts.length !== 3) return undefined;
  return { kind, namespace, name };
}
