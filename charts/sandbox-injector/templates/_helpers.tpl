{{/*
Names and namespaces, the way `helm create` derives them: every object is named from the release and lives in
the release's namespace (`helm install --namespace`). The one exception is the injection ConfigMap and the Role
that reads it, which go where the Sandbox controller reads the ConfigMap (config.namespace).

  name      the chart's name, or nameOverride: the app.kubernetes.io/name label.
  fullname  fullnameOverride; else the release name when it already contains the chart's name (so the release
            `sandbox-injector` gives exactly the names of manifests/); else <release>-<name>. At most 63
            characters: the Service's name is a DNS label. Every object is fullname or fullname-<suffix>.
  namespace .Release.Namespace.
*/}}
{{- define "sandbox-injector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sandbox-injector.fullname" -}}
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

{{/* fullname with a suffix, cut so that the whole stays a DNS label: `include "sandbox-injector.suffixed" (list . "certs")`. */}}
{{- define "sandbox-injector.suffixed" -}}
{{- $context := index . 0 -}}
{{- $suffix := printf "-%s" (index . 1) -}}
{{- printf "%s%s" (include "sandbox-injector.fullname" $context | trunc (int (sub 63 (len $suffix))) | trimSuffix "-") $suffix -}}
{{- end -}}

{{- define "sandbox-injector.namespace" -}}{{ .Release.Namespace }}{{- end -}}

{{- define "sandbox-injector.configNamespace" -}}{{ .Values.config.namespace }}{{- end -}}

{{/* The Secret holding the serving pair: certificates.secretName, else <fullname>-tls. */}}
{{- define "sandbox-injector.tlsSecretName" -}}
{{- .Values.certificates.secretName | default (include "sandbox-injector.suffixed" (list . "tls")) -}}
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

{{/*
The pods' labels and the selectors on them: those of manifests/, plus the release (app.kubernetes.io/instance),
so that two releases in one namespace never select each other's pods. None of them changes on an upgrade; never
change them after a first install (a Deployment's selector is immutable).

componentSelectorLabels takes the component, for workloads beside the webhook:
`include "sandbox-injector.componentSelectorLabels" (list . "webhook")`.
*/}}
{{- define "sandbox-injector.componentSelectorLabels" -}}
{{- $context := index . 0 -}}
app.kubernetes.io/name: {{ include "sandbox-injector.name" $context }}
app.kubernetes.io/instance: {{ $context.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The webhook's pods. */}}
{{- define "sandbox-injector.selectorLabels" -}}
{{ include "sandbox-injector.componentSelectorLabels" (list . "webhook") }}
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

{{/* The namespaces the webhook leaves alone when webhook.namespaceSelector is empty: its own, and kube-system. */}}
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

{{/*
A pod spec's nodeSelector, tolerations and affinity from a values map that has them (.Values for the webhook,
.Values.deliverEnv for deliver-env), each left out when empty. Indented for a Deployment's pod spec.
*/}}
{{- define "sandbox-injector.podPlacement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
