{{/* Names, labels and the options every authbench pod shares. */}}

{{- define "authbench.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Kubernetes' recommended labels; pass (dict "root" $ "component" "master"). */}}
{{- define "authbench.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/component: {{ .component }}
app.kubernetes.io/part-of: authbench
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end -}}

{{- define "authbench.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "authbench.image" -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end -}}

{{- define "authbench.runId" -}}
{{ .Values.results.runId | default (printf "%s-%d" .Release.Name (int .Release.Revision)) }}
{{- end -}}

{{/* The lab's port for a backend: base + 100 * (index in the lab's backend order + 1) + offset. */}}
{{- define "authbench.labPort" -}}
{{- $order := dict "terracotta" 1 "memcached" 2 "repcached" 3 "stateless" 4 "local" 5 -}}
{{- $offsets := dict "lb" 0 "node-a" 1 "node-b" 2 "sp" 3 -}}
{{- add .root.Values.lab.basePort (mul 100 (get $order .backend)) (get $offsets .port) -}}
{{- end -}}

{{- define "authbench.labHost" -}}
{{ include "authbench.fullname" . }}-lab
{{- end -}}

{{- define "authbench.labUrl" -}}
https://{{ include "authbench.labHost" .root }}:{{ include "authbench.labPort" . }}
{{- end -}}

{{- define "authbench.target" -}}
{{- if .Values.target -}}
{{ .Values.target }}
{{- else if .Values.lab.enabled -}}
{{ include "authbench.labUrl" (dict "root" . "backend" (first .Values.lab.backends) "port" "sp") }}/secure/
{{- else -}}
{{ fail "set target (the SP's protected URL, or oidc+https://ISSUER, …) or lab.enabled=true" }}
{{- end -}}
{{- end -}}

{{/* An OpenID Connect target (oidc+https://ISSUER): authbench is the RP registered at the provider. */}}
{{- define "authbench.isOidc" -}}
{{- if hasPrefix "oidc+" (.Values.target | default "") }}true{{ end -}}
{{- end -}}

{{/* The Secret holding the OIDC RP's client secret (never a ConfigMap, never argv): yours or the chart's. */}}
{{- define "authbench.oidcSecret" -}}
{{- if .Values.oidc.clientSecret.existingSecret -}}
{{ .Values.oidc.clientSecret.existingSecret }}
{{- else if .Values.oidc.clientSecret.value -}}
{{ include "authbench.fullname" . }}-oidc
{{- end -}}
{{- end -}}

{{- define "authbench.caConfigMap" -}}
{{- if .Values.caBundle.existingConfigMap -}}
{{ .Values.caBundle.existingConfigMap }}
{{- else if .Values.caBundle.pem -}}
{{ include "authbench.fullname" . }}-ca
{{- end -}}
{{- end -}}

{{- define "authbench.accountsSecret" -}}
{{- if .Values.accounts.existingSecret -}}
{{ .Values.accounts.existingSecret }}
{{- else if .Values.accounts.csv -}}
{{ include "authbench.fullname" . }}-accounts
{{- end -}}
{{- end -}}

{{/* Options shared by the master and the workers of a run (and by compare): TLS, accounts, journey. */}}
{{- define "authbench.commonArgs" -}}
{{- if include "authbench.caConfigMap" . }}
- --ca-bundle
- /etc/authbench/ca/ca.crt
{{- else if and .Values.lab.enabled (not .Values.target) }}
- --ca-bundle
- /etc/authbench/lab-ca/ca.crt
{{- end }}
{{- if .Values.journey.insecure }}
- --insecure
{{- end }}
{{- if include "authbench.accountsSecret" . }}
- --accounts-csv
- /etc/authbench/accounts/accounts.csv
{{- else if .Values.accounts.template }}
- --accounts-template
- {{ .Values.accounts.template | quote }}
- --password-rule
- {{ .Values.accounts.passwordRule | quote }}
{{- else if .Values.lab.enabled }}
- --accounts-template
{{- $last := sub (int .Values.lab.users) 1 }}
- {{ printf "user{%0*d..%d}" (max 3 (len (toString $last))) 0 $last | quote }}
- --password-rule
- "pw-{user}"
{{- else if and (include "authbench.isOidc" .) (eq .Values.oidc.grant "client-credentials") }}
{{- /* no user: the client's own token */}}
{{- else }}
{{- fail "give the journeys accounts: accounts.existingSecret, accounts.csv or accounts.template" }}
{{- end }}
- --order
- {{ .Values.accounts.order }}
- --timeout
- {{ .Values.journey.timeout | quote }}
{{- end -}}

{{- define "authbench.journeyArgs" -}}
{{- if include "authbench.isOidc" . }}
- --client-id
- {{ required "an oidc+ target needs oidc.clientId: the RP's client_id at the provider" .Values.oidc.clientId | quote }}
- --grant
- {{ .Values.oidc.grant }}
- --client-auth
- {{ .Values.oidc.clientAuth }}
- --scope
- {{ .Values.oidc.scope | quote }}
{{- with .Values.oidc.redirectUri }}
- --redirect-uri
- {{ . | quote }}
{{- end }}
{{- with .Values.oidc.postLogoutRedirectUri }}
- --post-logout-redirect-uri
- {{ . | quote }}
{{- end }}
{{- if .Values.oidc.validateIdToken }}
- --validate-id-token
{{- end }}
{{- if .Values.oidc.userinfo }}
- --userinfo
{{- end }}
{{- if include "authbench.oidcSecret" . }}
- --client-secret-file
- /etc/authbench/oidc/client-secret
{{- end }}
{{- else }}
- --sp
- {{ .Values.journey.sp }}
{{- end }}
- --login-form
- {{ .Values.journey.loginForm }}
{{- if .Values.journey.reuseSession }}
- --reuse-session
{{- end }}
{{- if .Values.journey.newConnection }}
- --new-connection
{{- end }}
{{- if .Values.journey.file }}
- --locustfile
- /etc/authbench/journey/journey.py
{{- with .Values.journey.userClass }}
- --user-class
- {{ . }}
{{- end }}
{{- end }}
{{- range .Values.journey.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Volumes for the CA bundle and the accounts, and their mounts. */}}
{{- define "authbench.inputVolumes" -}}
- name: tmp
  emptyDir: {}
{{- with include "authbench.caConfigMap" . }}
- name: ca
  configMap:
    name: {{ . }}
{{- end }}
{{- if and .Values.lab.enabled (not .Values.target) }}
- name: lab-ca
  secret:
    secretName: {{ include "authbench.fullname" . }}-lab-ca
    items: [{key: ca.crt, path: ca.crt}]
{{- end }}
{{- if .Values.journey.file }}
- name: journey
  configMap:
    name: {{ include "authbench.fullname" . }}-journey
{{- end }}
{{- with include "authbench.accountsSecret" . }}
- name: accounts
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- include "authbench.oidcSecretVolume" . }}
{{- end -}}

{{/* The OIDC client secret as the file /etc/authbench/oidc/client-secret (--client-secret-file). */}}
{{- define "authbench.oidcSecretVolume" -}}
{{- with include "authbench.oidcSecret" . }}
- name: oidc-client
  secret:
    secretName: {{ . }}
    defaultMode: 0440
    items: [{key: {{ $.Values.oidc.clientSecret.key | quote }}, path: client-secret}]
{{- end }}
{{- end -}}

{{- define "authbench.oidcSecretMount" -}}
{{- if include "authbench.oidcSecret" . }}
- name: oidc-client
  mountPath: /etc/authbench/oidc
  readOnly: true
{{- end }}
{{- end -}}

{{- define "authbench.inputMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if include "authbench.caConfigMap" . }}
- name: ca
  mountPath: /etc/authbench/ca
  readOnly: true
{{- end }}
{{- if and .Values.lab.enabled (not .Values.target) }}
- name: lab-ca
  mountPath: /etc/authbench/lab-ca
  readOnly: true
{{- end }}
{{- if .Values.journey.file }}
- name: journey
  mountPath: /etc/authbench/journey
  readOnly: true
{{- end }}
{{- if include "authbench.accountsSecret" . }}
- name: accounts
  mountPath: /etc/authbench/accounts
  readOnly: true
{{- end }}
{{- include "authbench.oidcSecretMount" . }}
{{- end -}}

{{- define "authbench.resultsVolume" -}}
- name: results
{{- if .Values.results.persistence.enabled }}
  persistentVolumeClaim:
    claimName: {{ .Values.results.persistence.existingClaim | default (printf "%s-results" (include "authbench.fullname" .)) }}
{{- else }}
  emptyDir: {}
{{- end }}
{{- end -}}

{{/* Environment of every authbench container: HOME and matplotlib's cache on the writable /tmp. */}}
{{- define "authbench.env" -}}
- name: HOME
  value: /tmp
- name: MPLCONFIGDIR
  value: /tmp/matplotlib
{{- end -}}

{{- define "authbench.podPlacement" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* compare mode: --target/--lb/--node per target; the lab's clusters when no targets are given. */}}
{{- define "authbench.compareTargets" -}}
{{- $targets := .Values.compare.targets }}
{{- if and (not $targets) .Values.lab.enabled }}
{{- $targets = list }}
{{- range .Values.lab.backends }}
{{- $sp := include "authbench.labUrl" (dict "root" $ "backend" . "port" "sp") }}
{{- $lb := include "authbench.labUrl" (dict "root" $ "backend" . "port" "lb") }}
{{- $a := include "authbench.labUrl" (dict "root" $ "backend" . "port" "node-a") }}
{{- $b := include "authbench.labUrl" (dict "root" $ "backend" . "port" "node-b") }}
{{- $targets = append $targets (dict "name" . "url" (printf "%s/secure/" $sp) "lb" $lb "nodes" (list $a $b)) }}
{{- end }}
{{- end }}
{{- if not $targets }}
{{- fail "compare mode needs compare.targets (or lab.enabled=true)" }}
{{- end }}
{{- range $targets }}
{{- $name := .name }}
- --target
- {{ printf "%s=%s" $name .url | quote }}
{{- with .lb }}
- --lb
- {{ printf "%s=%s" $name . | quote }}
{{- end }}
{{- range .nodes }}
- --node
- {{ printf "%s=%s" $name . | quote }}
{{- end }}
{{- end }}
{{- end -}}
