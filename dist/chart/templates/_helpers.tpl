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
The controller's secure port: securePort, which must be a port number, since
the probes and the metrics Service reach the controller on it (0, which
turns the port off, would leave them nothing to reach). A release upgraded
with --reuse-values keeps the values of the chart it was installed with,
which had no securePort: it gets the default of values.yaml.
*/}}
{{- define "chart.securePort" -}}
{{- if not (hasKey .Values "securePort") -}}
10263
{{- else -}}
{{- $port := .Values.securePort -}}
{{- if not (and (or (kindIs "float64" $port) (kindIs "int64" $port) (kindIs "int" $port)) (ge (int $port) 1) (le (int $port) 65535)) -}}
{{- fail (printf "securePort is %v: want a port number from 1 to 65535, where the probes and the metrics Service reach the controller" $port) -}}
{{- end -}}
{{- int $port -}}
{{- end -}}
{{- end }}

{{/*
Fails on values the chart no longer honors, saying what to do instead.
metrics.secure is gone: the controller serves /metrics over HTTPS only. A
release upgraded with --reuse-values keeps the old default, true, which is
what the chart does, so only another value fails.
*/}}
{{- define "chart.checkValues" -}}
{{- $metrics := .Values.metrics | default dict -}}
{{- if and (kindIs "map" $metrics) (hasKey $metrics "secure") (ne (toString $metrics.secure) "true") -}}
{{- fail "metrics.secure=false is no longer supported: the controller serves /metrics only over HTTPS, on its secure port (securePort), to callers the apiserver authenticates and allows to get /metrics (bind the ClusterRole node-lifecycle-metrics-reader to your scraper). Remove metrics.secure from your values; see docs/upgrading.md" -}}
{{- end -}}
{{- if include "chart.certManager" . -}}
{{- range .Values.controllerManager.container.args -}}
{{- if regexMatch "^--(tls-cert-file|tls-private-key-file|cert-dir)(=|$)" (toString .) -}}
{{- fail (printf "controllerManager.container.args holds %s, and certManager.enable gives the secure port cert-manager's certificate: drop one of the two" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not (include "chart.dryRun" .) -}}
{{- range .Values.controllerManager.container.args -}}
{{- if regexMatch "^--dry-run(=(1|t|T|true|TRUE|True))?$" (toString .) -}}
{{- fail (printf "controllerManager.container.args holds %s: set dryRun.enable=true instead, which adds --dry-run and, with rbac.enable, the Role and RoleBinding node-lifecycle-dry-run-record in kube-system that let the dry run keep its record" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end }}

{{/*
"true" when the switch .key of the values (a map with a boolean enable,
such as dryRun) is on, else empty; it fails on a switch of another shape. A
release upgraded with --reuse-values keeps the values of the chart it was
installed with, which may not have the switch: it is off.
*/}}
{{- define "chart.enabled" -}}
{{- $switch := index .root.Values .key | default dict -}}
{{- if not (kindIs "map" $switch) -}}
{{- fail (printf "%s is %v: want a map, such as %s.enable=true" .key $switch .key) -}}
{{- end -}}
{{- if and (hasKey $switch "enable") (not (kindIs "bool" $switch.enable)) -}}
{{- fail (printf "%s.enable is %v, a %s: want a boolean, true or false" .key $switch.enable (kindOf $switch.enable)) -}}
{{- end -}}
{{- if eq (toString $switch.enable) "true" -}}
true
{{- end -}}
{{- end }}

{{/*
"true" when the release is a dry run beside kube-controller-manager
(dryRun.enable), else empty.
*/}}
{{- define "chart.dryRun" -}}
{{- include "chart.enabled" (dict "root" . "key" "dryRun") -}}
{{- end }}

{{/*
"true" when cert-manager makes the secure port's certificate
(certManager.enable), else empty; off, the controller makes its own.
*/}}
{{- define "chart.certManager" -}}
{{- include "chart.enabled" (dict "root" . "key" "certManager") -}}
{{- end }}

{{/*
The Secret that cert-manager writes the serving certificate to, with
certManager.enable: the pods mount it, and the ServiceMonitor trusts its
ca.crt.
*/}}
{{- define "chart.servingCertSecret" -}}
node-lifecycle-metrics-server-cert
{{- end }}

{{/*
The metrics Service's DNS name in the cluster, for which the serving
certificate is made and the ServiceMonitor verifies it.
*/}}
{{- define "chart.metricsServiceHost" -}}
node-lifecycle-controller-manager-metrics-service.{{ .Release.Namespace }}.svc
{{- end }}
