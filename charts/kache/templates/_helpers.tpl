{{/*
Names and labels. Every object is named FULLNAME, and its pods are
selected by app.kubernetes.io/name: FULLNAME, as config/deploy/ names them
(kache, kache-tier2, example-app): unique per release in a namespace, and
the selector never changes with the chart's version.
*/}}

{{- define "kache.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The pods' labels, and their selector. */}}
{{- define "kache.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kache.fullname" . }}
{{- end -}}

{{/* Every object's labels: the selector's, and the release's (which change with it). */}}
{{- define "kache.labels" -}}
{{ include "kache.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kache.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}

{{/* The mode's values: .Values.shared or .Values.sidecar. */}}
{{- define "kache.mode" -}}
{{- if eq .Values.mode "sidecar" -}}
{{- toYaml .Values.sidecar -}}
{{- else -}}
{{- toYaml .Values.shared -}}
{{- end -}}
{{- end -}}

{{/* --resources: RESOURCE for the core group, RESOURCE.GROUP otherwise. */}}
{{- define "kache.resources" -}}
{{- $out := list -}}
{{- range .cache -}}
{{- $group := .group -}}
{{- range .resources -}}
{{- $out = append $out (ternary . (printf "%s.%s" . $group) (eq $group "")) -}}
{{- end -}}
{{- end -}}
{{- join "," $out -}}
{{- end -}}

{{/*
--memory-budget in MiB: memoryBudgetMiB, or three quarters of the memory
limit (Mi or Gi), so that what the budget does not count has a quarter.
*/}}
{{- define "kache.memoryBudget" -}}
{{- if .memoryBudgetMiB -}}
{{- .memoryBudgetMiB -}}
{{- else -}}
{{- $limit := toString .resources.limits.memory -}}
{{- $mib := 0 -}}
{{- if hasSuffix "Gi" $limit -}}
{{- $mib = mul (trimSuffix "Gi" $limit | atoi) 1024 -}}
{{- else if hasSuffix "Mi" $limit -}}
{{- $mib = trimSuffix "Mi" $limit | atoi -}}
{{- end -}}
{{- if not $mib -}}
{{- fail (printf "resources.limits.memory %q is not in Mi or Gi: set memoryBudgetMiB" $limit) -}}
{{- end -}}
{{- div (mul $mib 3) 4 -}}
{{- end -}}
{{- end -}}

{{/* The arguments every kache container ends with. */}}
{{- define "kache.commonArgs" -}}
- --memory-budget={{ include "kache.memoryBudget" .mode }}
- --log-format=json
- --health-listen=0.0.0.0:{{ .root.Values.healthPort }}
- --state-dir=/var/lib/kache
{{- range .root.Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* The pod template's annotations: /metrics for a Prometheus that keeps pods by them. */}}
{{- define "kache.scrapeAnnotations" -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.healthPort | quote }}
prometheus.io/path: /metrics
{{- end -}}

{{/* The pod's security context: the image's non-root user 65532. */}}
{{- define "kache.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* A locked-down container: read-only root, no privilege, no capability. */}}
{{- define "kache.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* The pod's node selection, from the values: YAML, or nothing. */}}
{{- define "kache.scheduling" -}}
{{- $fields := dict -}}
{{- range $key := list "nodeSelector" "tolerations" "affinity" -}}
{{- with index $.Values $key -}}
{{- $_ := set $fields $key . -}}
{{- end -}}
{{- end -}}
{{- if $fields -}}
{{- toYaml $fields -}}
{{- end -}}
{{- end -}}
