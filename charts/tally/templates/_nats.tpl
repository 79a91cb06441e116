{{/* How the API and the worker reach NATS securely: credentials in the environment, CA, client
     certificate and .creds files mounted under /etc/tally/nats. Bundled NATS: the user nats.auth.user
     with the password NATS_PASSWORD of the credentials Secret, and the CA of nats.tls.secretName.
     External NATS: externalNats.auth and externalNats.tls name the user's own Secrets. */}}

{{- define "tally.natsFilesDir" -}}/etc/tally/nats{{- end -}}

{{/* The files to mount: a list of (dict "secret" "key" "path"). */}}
{{- define "tally.natsClientFiles" -}}
{{- $files := list -}}
{{- if .Values.nats.enabled -}}
{{- with .Values.nats.tls.secretName }}{{ $files = append $files (dict "secret" . "key" $.Values.nats.tls.caKey "path" "ca.crt") }}{{ end -}}
{{- else -}}
{{- $a := .Values.externalNats.auth -}}
{{- $t := .Values.externalNats.tls -}}
{{- with $a.credsKey }}{{ $files = append $files (dict "secret" $a.existingSecret "key" . "path" "user.creds") }}{{ end -}}
{{- with $t.caSecret }}{{ $files = append $files (dict "secret" . "key" $t.caKey "path" "ca.crt") }}{{ end -}}
{{- with $t.clientCertSecret }}{{ $files = concat $files (list (dict "secret" . "key" "tls.crt" "path" "tls.crt") (dict "secret" . "key" "tls.key" "path" "tls.key")) }}{{ end -}}
{{- end -}}
{{- toJson $files -}}
{{- end -}}

{{/* NATS_USER/NATS_PASSWORD, NATS_TOKEN, NATS_CREDS and NATS_TLS_* for the API and the worker. */}}
{{- define "tally.natsClientEnv" -}}
{{- $dir := include "tally.natsFilesDir" . -}}
{{- if .Values.nats.enabled }}
{{- if .Values.nats.auth.enabled }}
- name: NATS_USER
  value: {{ .Values.nats.auth.user | quote }}
- name: NATS_PASSWORD
  valueFrom: { secretKeyRef: { name: {{ include "tally.credentialsSecret" . }}, key: {{ include "tally.secretKey" (dict "root" . "key" "natsPassword") }} } }
{{- end }}
{{- if .Values.nats.tls.secretName }}
- name: NATS_TLS_CA
  value: {{ printf "%s/ca.crt" $dir | quote }}
{{- end }}
{{- else }}
{{- $a := .Values.externalNats.auth -}}
{{- $t := .Values.externalNats.tls -}}
{{- $ways := list -}}
{{- if $a.passwordKey }}{{ $ways = append $ways "passwordKey" }}{{ end -}}
{{- if $a.tokenKey }}{{ $ways = append $ways "tokenKey" }}{{ end -}}
{{- if $a.credsKey }}{{ $ways = append $ways "credsKey" }}{{ end -}}
{{- if gt (len $ways) 1 }}{{ fail (printf "externalNats.auth: set only one of passwordKey, tokenKey and credsKey (got %s)" (join ", " $ways)) }}{{ end -}}
{{- if and $ways (not $a.existingSecret) }}{{ fail (printf "externalNats.auth.existingSecret is required with externalNats.auth.%s (the Secret holding it)" (first $ways)) }}{{ end -}}
{{- if and $a.passwordKey (not $a.user) }}{{ fail "externalNats.auth.user is required with externalNats.auth.passwordKey" }}{{ end -}}
{{- if and $a.user (not $a.passwordKey) }}{{ fail "externalNats.auth.passwordKey is required with externalNats.auth.user (the key of the password in externalNats.auth.existingSecret)" }}{{ end -}}
{{- if $a.passwordKey }}
- name: NATS_USER
  value: {{ $a.user | quote }}
- name: NATS_PASSWORD
  valueFrom: { secretKeyRef: { name: {{ $a.existingSecret }}, key: {{ $a.passwordKey }} } }
{{- end }}
{{- if $a.tokenKey }}
- name: NATS_TOKEN
  valueFrom: { secretKeyRef: { name: {{ $a.existingSecret }}, key: {{ $a.tokenKey }} } }
{{- end }}
{{- if $a.credsKey }}
- name: NATS_CREDS
  value: {{ printf "%s/user.creds" $dir | quote }}
{{- end }}
{{- if $t.caSecret }}
- name: NATS_TLS_CA
  value: {{ printf "%s/ca.crt" $dir | quote }}
{{- end }}
{{- if $t.clientCertSecret }}
- name: NATS_TLS_CERT
  value: {{ printf "%s/tls.crt" $dir | quote }}
- name: NATS_TLS_KEY
  value: {{ printf "%s/tls.key" $dir | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The volume and mount of those files (nothing when there are none). */}}
{{- define "tally.natsClientVolumes" -}}
{{- $files := include "tally.natsClientFiles" . | fromJsonArray -}}
{{- if $files -}}
- name: nats-client
  projected:
    defaultMode: 288 # 0440: read by the pod's group only
    sources:
      {{- range $files }}
      - secret: { name: {{ .secret }}, items: [{ key: {{ .key | quote }}, path: {{ .path }} }] }
      {{- end }}
{{- end }}
{{- end -}}
{{- define "tally.natsClientMounts" -}}
{{- if (include "tally.natsClientFiles" . | fromJsonArray) -}}
- { name: nats-client, mountPath: {{ include "tally.natsFilesDir" . }}, readOnly: true }
{{- end }}
{{- end -}}
