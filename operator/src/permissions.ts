/**
 * Every Kubernetes call the operator makes, as RBAC rules: the one list the Helm chart's
 * ClusterRole/Role are checked against, and the rules the scenario tests' fake API enforces (a call
 * missing here fails there). `cluster`: wherever the operator watches (a ClusterRole, or a Role in
 * WATCH_NAMESPACE when that is set); `own-namespace`: a Role in POD_NAMESPACE only.
 *
 * Where each comes from (operator/src/kube.ts):
 * - the three kinds: list + watch (informers), patch (finalizers); their /status: patch (merge-patch)
 * - secrets: list + watch (rotation of referenced Secrets), get (read a referenced or minted Secret),
 *   create (mint `<name>-flag-secret`); in POD_NAMESPACE also update (the tenant config Secret)
 * - events: create (Warning events on failures)
 * - leases: get, create, update (leader election, Lease `tally-operator`)
 */
export interface PermissionRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  scope: 'cluster' | 'own-namespace';
}

export const OPERATOR_PERMISSIONS: readonly PermissionRule[] = [
  { apiGroups: ['analytics.tally.dev'], resources: ['projects', 'flagsecrets', 'featureflags'], verbs: ['list', 'watch', 'patch'], scope: 'cluster' },
  { apiGroups: ['analytics.tally.dev'], resources: ['projects/status', 'flagsecrets/status', 'featureflags/status'], verbs: ['patch'], scope: 'cluster' },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch', 'create'], scope: 'cluster' },
  { apiGroups: [''], resources: ['events'], verbs: ['create'], scope: 'cluster' },
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'update'], scope: 'own-namespace' },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'], scope: 'own-namespace' },
];
