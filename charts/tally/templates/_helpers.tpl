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

{{- define "tally.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
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
  valueFrom: { secretKeyRef: { name: {{ include "tally.credentialsSecret" . }}, key: POSTGRES_PASSWORD } }
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
  valueFrom: { secretKeyRef: { name: {{ include "tally.credentialsSecret" . }}, key: CLICKHOUSE_PASSWORD } }
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
{{- if not (hasKey .Values.extraEnv "NATS_STREAM_REPLICAS") }}
- name: NATS_STREAM_REPLICAS
  value: {{ .Values.externalNats.streamReplicas | quote }}
{{- end }}
{{- end }}
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
{{- range $k, $v := .Values.extraEnv }}
- name: {{ $k }}
  value: {{ $v | quote }}
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
