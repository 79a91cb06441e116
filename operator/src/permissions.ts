import { GROUP } from './kinds.js';
import { operatorKinds } from './registry.js';

const definitions = operatorKinds().map((k) => k.definition);
const plurals = (scope: 'Cluster' | 'Namespaced', sub = '') =>
  definitions.filter((d) => (d.scope ?? 'Namespaced') === scope).map((d) => d.plural + sub);

/**
 * Every Kubernetes call the operator makes, as RBAC rules: the one list the Helm chart's
 * ClusterRole/Role are checked against, and the rules the scenario tests' fake API enforces (a call
 * missing here fails there). `cluster`: wherever the operator watches (a ClusterRole, or a Role in
 * each WATCH_NAMESPACE namespace when that is set); `cluster-scoped`: always a ClusterRole
 * (Organizations are cluster-scoped); `own-namespace`: a Role in POD_NAMESPACE only.
 * `reason` says why each verb is there (the chart prints it as a comment).
 */
export interface PermissionRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  /** When set, the rule allows only these object names. */
  resourceNames?: string[];
  scope: 'cluster' | 'cluster-scoped' | 'own-namespace';
  reason: string;
}

export const OPERATOR_PERMISSIONS: readonly PermissionRule[] = [
  {
    apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get'], scope: 'cluster-scoped',
    resourceNames: definitions.map((d) => `${d.plural}.${GROUP}`),
    reason: 'get: whether a kind\'s CRD is being deleted (a deletionPolicy Delete is then not run: removing a CRD never deletes a tenant\'s data)',
  },
  {
    apiGroups: ['analytics.tally.dev'], resources: plurals('Cluster'), verbs: ['list', 'watch', 'patch'], scope: 'cluster-scoped',
    reason: 'list+watch: the Organization informer; patch: add/remove the finalizer',
  },
  {
    apiGroups: ['analytics.tally.dev'], resources: plurals('Cluster', '/status'), verbs: ['patch'], scope: 'cluster-scoped',
    reason: 'patch: organizationId, usage and conditions',
  },
  {
    apiGroups: ['analytics.tally.dev'], resources: plurals('Namespaced'), verbs: ['list', 'watch', 'patch'], scope: 'cluster',
    reason: 'list+watch: informers; patch: add/remove the finalizer',
  },
  {
    apiGroups: ['analytics.tally.dev'], resources: plurals('Namespaced', '/status'), verbs: ['patch'], scope: 'cluster',
    reason: 'patch: status fields and conditions',
  },
  {
    apiGroups: ['analytics.tally.dev'], resources: operatorKinds().filter((k) => k.secretName).map((k) => `${k.definition.plural}/finalizers`), verbs: ['update'], scope: 'cluster',
    reason: 'update: the minted Secrets set blockOwnerDeletion on their owner (OwnerReferencesPermissionEnforcement, e.g. OpenShift, requires it)',
  },
  {
    apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'update'], scope: 'cluster',
    reason: 'list+watch: only Secrets labelled app.kubernetes.io/managed-by=tally-operator, and Secrets a FlagSecret names (by name); get: read a referenced or minted Secret; create: mint <name>-flag-secret and <name>-api-token; update: write a re-minted ApiToken token',
  },
  {
    apiGroups: [''], resources: ['events'], verbs: ['create'], scope: 'cluster',
    reason: 'create: Normal (created, rotated, deleted) and Warning (failures) Events on the resources',
  },
  {
    apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create', 'update'], scope: 'own-namespace',
    reason: 'the tenant config Secret: get+create+update to write it, list+watch (labelled) to notice changes',
  },
  {
    apiGroups: [''], resources: ['events'], verbs: ['create'], scope: 'own-namespace',
    reason: 'create: Events about Organizations (cluster-scoped objects have theirs in the operator namespace)',
  },
  {
    apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'], scope: 'own-namespace',
    reason: 'leader election (Lease tally-operator)',
  },
];
