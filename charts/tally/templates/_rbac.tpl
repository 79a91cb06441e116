{{/* The operator's Kubernetes calls, as RBAC rules (must equal operator/src/permissions.ts, whose
     `reason`s the comments repeat; test/packaging/chart.test.ts compares them). */}}

{{/* In each namespace it watches (a ClusterRole when it watches all of them, else a Role per namespace). */}}
{{- define "tally.operatorWatchRules" -}}
# list+watch: the informers; patch: add/remove the finalizer analytics.tally.dev/finalizer.
- apiGroups: [analytics.tally.dev]
  resources: [projects, flagsecrets, featureflags, apitokens, experiments]
  verbs: [list, watch, patch]
# patch: status fields and conditions (merge-patch on /status).
- apiGroups: [analytics.tally.dev]
  resources: [projects/status, flagsecrets/status, featureflags/status, apitokens/status, experiments/status]
  verbs: [patch]
# update: the Secrets it mints set blockOwnerDeletion on their FlagSecret/ApiToken owner, which
# OwnerReferencesPermissionEnforcement (OpenShift, hardened clusters) allows only with this.
- apiGroups: [analytics.tally.dev]
  resources: [flagsecrets/finalizers, apitokens/finalizers]
  verbs: [update]
# list+watch: only Secrets labelled app.kubernetes.io/managed-by=tally-operator, and a Secret a
# FlagSecret names (field selector on its name): never all Secrets into memory. get: read a
# referenced or minted Secret; create: mint <name>-flag-secret and <name>-api-token; update:
# write a re-minted ApiToken token. (RBAC cannot narrow list/watch by label; the operator does.)
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch, create, update]
# create: Normal (created, rotated, deleted) and Warning (failures) Events on the resources.
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- end -}}

{{/* Cluster-scoped kinds: always a ClusterRole (Organizations belong to no namespace). */}}
{{- define "tally.operatorClusterScopedRules" -}}
# list+watch: the Organization informer; patch: add/remove the finalizer.
- apiGroups: [analytics.tally.dev]
  resources: [organizations]
  verbs: [list, watch, patch]
# patch: organizationId, usage and conditions.
- apiGroups: [analytics.tally.dev]
  resources: [organizations/status]
  verbs: [patch]
# get: whether a kind's CRD is being deleted (a deletionPolicy Delete is then not run: removing a
# CRD never deletes a tenant's data).
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  resourceNames: [organizations.analytics.tally.dev, projects.analytics.tally.dev, flagsecrets.analytics.tally.dev, featureflags.analytics.tally.dev, apitokens.analytics.tally.dev, experiments.analytics.tally.dev]
  verbs: [get]
{{- end -}}

{{/* In its own namespace (POD_NAMESPACE). */}}
{{- define "tally.operatorSelfRules" -}}
# get+create+update: leader election on the Lease tally-operator.
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
# The tenant config Secret, by name: get+update to write it, list+watch (field selector on its name)
# to notice changes. No other Secret of this namespace can be read (the credentials Secret is here).
- apiGroups: [""]
  resources: [secrets]
  resourceNames: [{{ include "tally.tenantConfigSecret" . | quote }}]
  verbs: [get, list, watch, update]
# create: the tenant config Secret when it is missing (RBAC cannot name a Secret to create; create
# reads nothing).
- apiGroups: [""]
  resources: [secrets]
  verbs: [create]
# create: Events about Organizations (a cluster-scoped object's Events go to this namespace).
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- end -}}
