{{/*
The chart's name, which is also the app.kubernetes.io/name label of every
object: the kustomize installer (config/) uses the same, so that the
Deployment's selector, which cannot change, is the same under both.
*/}}
{{- define "chart.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels for every object: the installer's app.kubernetes.io/name, and Helm's
own.
*/}}
{{- define "chart.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "chart.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels that select the controller's pods: those of config/manager, since a
Deployment's selector cannot change and the Service, the PodDisruptionBudget
and the topology spread constraints must select the same pods. The release
name is not among them: the controller is one per cluster.
*/}}
{{- define "chart.selectorLabels" -}}
control-plane: controller-manager
app.kubernetes.io/name: {{ include "chart.name" . }}
{{- end }}

{{/*
The scheme, and the name of the container and Service port, of the metrics
server: HTTPS unless metrics.secure is false.
*/}}
{{- define "chart.metricsScheme" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}
