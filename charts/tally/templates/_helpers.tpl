{{/* Names: "<release>-tally" unless the release name already says tally; every object and selector carries the release. */}}
{{- define "tally.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "tally.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "tally.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "tally.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tally.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "tally.labels" -}}
{{ include "tally.selectorLabels" . }}
app.kubernetes.io/part-of: tally
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* An image reference: [global.imageRegistry/]repository, then @digest when set (the tag is then only
     informative), else :tag. Takes (dict "root" $ "image" <image values> "tag" <default tag>). */}}
{{- define "tally.imageRef" -}}
{{- $registry := ((.root.Values.global | default dict).imageRegistry | default "") -}}
{{- $repo := .image.repository -}}
{{- if $registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" $registry) $repo }}{{ end -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $repo .image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .tag .image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "tally.image" -}}
{{- include "tally.imageRef" (dict "root" . "image" .Values.image "tag" .Chart.AppVersion) -}}
{{- end -}}

{{/* The key of a credential in the credentials Secret: credentials.secretKeys maps the chart's names
     (superadminKey, operatorKey, postgresPassword, clickhousePassword) to an existing Secret's keys. */}}
{{- define "tally.secretKey" -}}
{{- $names := dict "superadminKey" "SUPERADMIN_KEY" "operatorKey" "OPERATOR_KEY" "postgresPassword" "POSTGRES_PASSWORD" "clickhousePassword" "CLICKHOUSE_PASSWORD" "natsPassword" "NATS_PASSWORD" -}}
{{- $mapped := "" -}}
{{- if hasKey .root.Values.credentials "existingSecret" -}}{{- $mapped = get (.root.Values.credentials.secretKeys | default dict) .key -}}{{- end -}}
{{- default (get $names .key) $mapped -}}
{{- end -}}

{{/* Pod metadata additions of a component: podLabels, podAnnotations. (dict "root" $ "component" "api" "values" .Values.api) */}}
{{- define "tally.podLabels" -}}
{{- with .values.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}
{{- define "tally.podAnnotations" -}}
{{- with .values.podAnnotations }}
annotations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Scheduling of a component's pods: nodeSelector, tolerations, affinity, priorityClassName and
     topologySpreadConstraints; with none given and more than one replica (or an HPA), pods are spread
     over zones and nodes when the scheduler can (ScheduleAnyway: never blocks scheduling). */}}
{{- define "tally.scheduling" -}}
{{- $v := .values -}}
{{- with $v.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- if $v.topologySpreadConstraints }}
topologySpreadConstraints: {{- toYaml $v.topologySpreadConstraints | nindent 2 }}
{{- else if or (gt (int $v.replicas) 1) (and $v.autoscaling $v.autoscaling.enabled) }}
topologySpreadConstraints:
  {{- range $key := list "topology.kubernetes.io/zone" "kubernetes.io/hostname" }}
  - maxSkew: 1
    topologyKey: {{ $key }}
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels: {{- include "tally.selectorLabels" $ | nindent 8 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* A component's ServiceAccount name: serviceAccount.name, or "<fullname>-<component>". */}}
{{- define "tally.serviceAccountName" -}}
{{- default (printf "%s-%s" (include "tally.fullname" .root) .component) .values.serviceAccount.name -}}
{{- end -}}

{{/* extraEnv (list of EnvVar, valueFrom allowed) and extraEnvFrom of a component. */}}
{{- define "tally.extraEnv" -}}
{{- with .values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The Secret holding SUPERADMIN_KEY, and the generated one (always created: it also keeps bundled stores' passwords). */}}
{{- define "tally.generatedSecret" -}}{{ include "tally.fullname" . }}-credentials{{- end -}}
{{- define "tally.credentialsSecret" -}}
{{- if hasKey .Values.credentials "existingSecret" -}}{{ .Values.credentials.existingSecret }}{{- else -}}{{ include "tally.generatedSecret" . }}{{- end -}}
{{- end -}}

{{- define "tally.tenantConfigSecret" -}}
{{- default (printf "%s-tenant-config" (include "tally.fullname" .)) .Values.tenantConfig.secretName -}}
{{- end -}}

{{- define "tally.apiServiceUrl" -}}
{{- printf "http://%s-api:%v" (include "tally.fullname" .) .Values.service.port -}}
{{- end -}}

{{/* Store connection env for the API and the worker (bundled or external; passwords from Secrets). */}}
{{- define "tally.storeEnv" -}}
{{- $full := include "tally.fullname" . -}}
{{- if .Values.postgresql.enabled }}
- name: PGPASSWORD
  valueFrom: { secretKeyRef: { name: {{ include "tally.credentialsSecret" . }}, key: {{ include "tally.secretKey" (dict "root" . "key" "postgresPassword") }} } }
- name: DATABASE_URL
  value: {{ printf "postgres://%s@%s-postgresql:5432/%s" .Values.postgresql.username $full .Values.postgresql.database | quote }}
{{- else }}
- name: PGPASSWORD
  valueFrom: { secretKeyRef: { name: {{ required "externalPostgresql.existingSecret is required when postgresql.enabled=false (a Secret holding the database password)" .Values.externalPostgresql.existingSecret }}, key: {{ .Values.externalPostgresql.passwordKey }} } }
- name: DATABASE_URL
  value: {{ required "externalPostgresql.url is required when postgresql.enabled=false (postgres://user@host:5432/db)" .Values.externalPostgresql.url | quote }}
{{- end }}
{{- if .Values.clickhouse.enabled }}
- name: CLICKHOUSE_URL
  value: {{ printf "http://%s-clickhouse:8123" $full | quote }}
- name: CLICKHOUSE_DATABASE
  value: {{ .Values.clickhouse.database | quote }}
- name: CLICKHOUSE_USER
  value: {{ .Values.clickhouse.username | quote }}
- name: CLICKHOUSE_PASSWORD
  valueFrom: { secretKeyRef: { name: {{ include "tally.credentialsSecret" . }}, key: {{ include "tally.secretKey" (dict "root" . "key" "clickhousePassword") }} } }
{{- else }}
- name: CLICKHOUSE_URL
  value: {{ required "externalClickhouse.url is required when clickhouse.enabled=false (http://host:8123)" .Values.externalClickhouse.url | quote }}
- name: CLICKHOUSE_DATABASE
  value: {{ .Values.externalClickhouse.database | quote }}
- name: CLICKHOUSE_USER
  value: {{ .Values.externalClickhouse.username | quote }}
- name: CLICKHOUSE_PASSWORD
  valueFrom: { secretKeyRef: { name: {{ required "externalClickhouse.existingSecret is required when clickhouse.enabled=false (a Secret holding the ClickHouse password)" .Values.externalClickhouse.existingSecret }}, key: {{ .Values.externalClickhouse.passwordKey }} } }
{{- with .Values.externalClickhouse.cluster }}
- name: CLICKHOUSE_CLUSTER
  value: {{ . | quote }}
- name: CLICKHOUSE_REPLICATED
  value: {{ ternary "1" "0" $.Values.externalClickhouse.replicated | quote }}
{{- end }}
{{- end }}
- name: NATS_URL
{{- if .Values.nats.enabled }}
  value: {{ printf "nats://%s-nats:4222" $full | quote }}
{{- else }}
  value: {{ required "externalNats.url or externalNats.servers is required when nats.enabled=false (nats://host:4222)" (default (join "," .Values.externalNats.servers) .Values.externalNats.url) | quote }}
{{- if not (and (kindIs "map" .Values.extraEnv) (hasKey .Values.extraEnv "NATS_STREAM_REPLICAS")) }}
- name: NATS_STREAM_REPLICAS
  value: {{ .Values.externalNats.streamReplicas | quote }}
{{- end }}
{{- end }}
{{- include "tally.natsClientEnv" . }}
{{- with .Values.oidc.issuer }}
- name: OIDC_ISSUER
  value: {{ . | quote }}
- name: OIDC_AUDIENCE
  value: {{ required "oidc.audience is required when oidc.issuer is set" $.Values.oidc.audience | quote }}
{{- end }}
{{- with .Values.oidc.jwksUrl }}
- name: OIDC_JWKS_URL
  value: {{ . | quote }}
{{- end }}
- name: DATA_DIR
  value: /var/lib/tally
{{- if kindIs "slice" .Values.extraEnv }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- else }}
{{- range $k, $v := .Values.extraEnv }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Writable scratch space for a read-only root filesystem. */}}
{{- define "tally.scratchVolumes" -}}
- name: tmp
  emptyDir: { sizeLimit: 256Mi }
- name: data
  emptyDir: { sizeLimit: 64Mi }
{{- end -}}
{{- define "tally.scratchMounts" -}}
- { name: tmp, mountPath: /tmp }
- { name: data, mountPath: /var/lib/tally }
{{- end -}}

{{/* Bundled store StatefulSet security: non-root, read-only root, nothing extra. */}}
{{- define "tally.storeContainerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities: { drop: [ALL] }
seccompProfile: { type: RuntimeDefault }
{{- end -}}

{{- define "tally.pvcSpec" -}}
accessModes: [ReadWriteOnce]
{{- with .storageClass }}
storageClassName: {{ . | quote }}
{{- end }}
resources: { requests: { storage: {{ .size | quote }} } }
{{- end -}}
