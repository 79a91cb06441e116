{{/* The operator's Kubernetes calls, as RBAC rules (must equal operator/src/permissions.ts). */}}
{{- define "tally.operatorWatchRules" -}}
- apiGroups: [analytics.tally.dev]
  resources: [projects, flagsecrets, featureflags]
  verbs: [list, watch, patch]
- apiGroups: [analytics.tally.dev]
  resources: [projects/status, flagsecrets/status, featureflags/status]
  verbs: [patch]
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch, create]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
{{- end -}}

{{- define "tally.operatorSelfRules" -}}
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get, create, update]
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create, update]
{{- end -}}
