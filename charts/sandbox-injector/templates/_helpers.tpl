{{/*
Object names are fixed, as in manifests/: the ClusterRoles and the MutatingWebhookConfiguration are
cluster-wide, so a second release in the same cluster could not coexist anyway.
*/}}
{{- define "sandbox-injector.name" -}}sandbox-injector{{- end -}}

{{- define "sandbox-injector.namespace" -}}{{ .Values.namespace.name }}{{- end -}}

{{- define "sandbox-injector.configNamespace" -}}
{{- .Values.config.namespace | default .Values.namespace.name -}}
{{- end -}}

{{/* The labels manifests/kustomization.yaml puts on every object, then Helm's standard ones. */}}
{{- define "sandbox-injector.labels" -}}
app.kubernetes.io/name: {{ include "sandbox-injector.name" . }}
app.kubernetes.io/part-of: openkruise-agents
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The pods' labels and the selectors on them: never change these after a first install. */}}
{{- define "sandbox-injector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sandbox-injector.name" . }}
app.kubernetes.io/component: webhook
{{- end -}}

{{- define "sandbox-injector.image" -}}
{{- printf "%s:%s" .Values.image.repository (toString .Values.image.tag) -}}
{{- end -}}

{{- define "sandbox-injector.certManager" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}true{{ else if eq .Values.certificates.mode "self-managed" }}{{ else -}}
{{- fail (printf "certificates.mode must be self-managed or cert-manager, not %q" .Values.certificates.mode) -}}
{{- end -}}
{{- end -}}

{{/*
The selectors' defaults live here, not in values.yaml: Helm merges a map value with its default, so a default
selector there would be ANDed with any selector a user gives.
*/}}
{{- define "sandbox-injector.objectSelector" -}}
{{- if .Values.webhook.objectSelector -}}
{{ toYaml .Values.webhook.objectSelector }}
{{- else -}}
# The label (and annotation) the OpenKruise Agents Sandbox controller puts on every pod it creates.
matchLabels:
  agents.kruise.io/created-by: sandbox
{{- end -}}
{{- end -}}

{{/* The namespaces the webhook leaves alone when webhook.namespaceSelector is empty. */}}
{{- define "sandbox-injector.namespaceSelector" -}}
{{- if .Values.webhook.namespaceSelector -}}
{{ toYaml .Values.webhook.namespaceSelector }}
{{- else -}}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: [{{ include "sandbox-injector.namespace" . }}, kube-system]
{{- end -}}
{{- end -}}
