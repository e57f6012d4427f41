{{- define "gw.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gw.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gw.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gw.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gw.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "gw.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The ConfigMap or Secret holding gw.yaml. */}}
{{- define "gw.configName" -}}
{{- .Values.config.existingName | default (printf "%s-config" (include "gw.fullname" .)) }}
{{- end }}

{{/* The port serving /livez, /readyz and /metrics. */}}
{{- define "gw.statusPortName" -}}
{{- if .Values.status.enabled }}status{{ else }}proxy{{ end }}
{{- end }}

{{/* Settings the chart cannot make work are refused at render time. */}}
{{- define "gw.validate" -}}
{{- if and .Values.admin.enabled (not .Values.admin.keySecret.name) }}
{{- fail "admin.enabled needs admin.keySecret.name: a Secret holding the admin API key" }}
{{- end }}
{{- if and .Values.admin.enabled (eq .Values.admin.store "embedded") (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) }}
{{- fail "admin.store embedded keeps the admin store inside one pod: use replicaCount 1 without autoscaling, or admin.store etcd" }}
{{- end }}
{{- if and .Values.admin.enabled (eq .Values.admin.store "etcd") (not .Values.etcd.endpoints) }}
{{- fail "admin.store etcd needs etcd.endpoints" }}
{{- end }}
{{- if and .Values.admin.gateway.enabled (not .Values.admin.enabled) }}
{{- fail "admin.gateway.enabled needs admin.enabled: the gateway serves the admin API's routes" }}
{{- end }}
{{- if and (not .Values.config.existingName) (not .Values.config.resources) }}
{{- fail "config.resources (the content of gw.yaml) or config.existingName is required" }}
{{- end }}
{{- end }}
