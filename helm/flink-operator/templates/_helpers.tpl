{{/*
Helpers of the flink-operator chart. The names follow upstream's chart (Apache Flink Kubernetes
Operator 1.15.0) so that values written for it name the same objects: nameOverride and
fullnameOverride mean what they mean there.
*/}}

{{/* The chart's name, or nameOverride: the Deployment's name and the prefix of the chart's own objects. */}}
{{- define "flink-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* fullnameOverride, else <release>-<name> (the release name alone when it contains the name):
the fallback name of ServiceAccounts and roles whose name value is empty, as upstream. */}}
{{- define "flink-operator.fullname" -}}
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

{{- define "flink-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "flink-operator.labels" -}}
app.kubernetes.io/name: {{ include "flink-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "flink-operator.chart" . }}
{{- end }}

{{/* The operator pods (the Deployment's selector, the Services' selector). */}}
{{- define "flink-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flink-operator.name" . }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The operator image. Upstream's repository names upstream's Java operator, which cannot run
with this chart's arguments: a values file copied from upstream's chart gets this project's default
image. Its tag and digest are upstream's too (a release such as 1.15.0), which name no image of this
project: both are ignored with upstream's repository. */}}
{{- define "flink-operator.imagePath" -}}
{{- $repo := .Values.image.repository }}
{{- if or (eq $repo "ghcr.io/apache/flink-kubernetes-operator") (eq $repo "apache/flink-kubernetes-operator") }}
{{- "ghcr.io/flinkops/flink-operator:latest" }}
{{- else }}
{{- if not $repo }}
{{- $repo = "ghcr.io/flinkops/flink-operator" }}
{{- end }}
{{- if .Values.image.digest }}
{{- $repo }}@{{ .Values.image.digest }}
{{- else }}
{{- $repo }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end }}
{{- end }}
{{- end }}

{{/* The operator's ServiceAccount. */}}
{{- define "flink-operator.serviceAccountName" -}}
{{- if .Values.operatorServiceAccount.create }}
{{- default (include "flink-operator.fullname" .) .Values.operatorServiceAccount.name }}
{{- else }}
{{- default "default" .Values.operatorServiceAccount.name }}
{{- end }}
{{- end }}

{{/* The operator's namespaced rules: ClusterRole (cluster scope) or Role (per watched namespace). */}}
{{- define "flink-operator.roleName" -}}
{{- if .Values.rbac.operatorRole.create }}
{{- default (include "flink-operator.fullname" .) .Values.rbac.operatorRole.name }}
{{- else }}
{{- default "default" .Values.rbac.operatorRole.name }}
{{- end }}
{{- end }}

{{- define "flink-operator.roleBindingName" -}}
{{- if .Values.rbac.operatorRoleBinding.create }}
{{- default (include "flink-operator.fullname" .) .Values.rbac.operatorRoleBinding.name }}
{{- else }}
{{- default "default" .Values.rbac.operatorRoleBinding.name }}
{{- end }}
{{- end }}

{{/* A role name with a ":" names a ClusterRole (system:..., as upstream's chart decides). */}}
{{- define "flink-operator.roleScope" -}}
{{- if contains ":" .role }}ClusterRole{{ else }}Role{{ end }}
{{- end }}

{{/* The Flink pods' ServiceAccount, Role and RoleBinding. */}}
{{- define "flink-operator.jobServiceAccountName" -}}
{{- if .Values.jobServiceAccount.create }}
{{- default (include "flink-operator.fullname" .) .Values.jobServiceAccount.name }}
{{- else }}
{{- default "default" .Values.jobServiceAccount.name }}
{{- end }}
{{- end }}

{{- define "flink-operator.jobRoleName" -}}
{{- if .Values.rbac.jobRole.create }}
{{- default (include "flink-operator.fullname" .) .Values.rbac.jobRole.name }}
{{- else }}
{{- default "default" .Values.rbac.jobRole.name }}
{{- end }}
{{- end }}

{{- define "flink-operator.jobRoleBindingName" -}}
{{- if .Values.rbac.jobRoleBinding.create }}
{{- default (include "flink-operator.fullname" .) .Values.rbac.jobRoleBinding.name }}
{{- else }}
{{- default "default" .Values.rbac.jobRoleBinding.name }}
{{- end }}
{{- end }}

{{/* Webhooks: webhook.validator.create / webhook.mutator.create when given, else webhook.create. */}}
{{- define "flink-operator.validating-webhook-enabled" -}}
{{- if and (hasKey .Values.webhook "validator") (kindIs "map" .Values.webhook.validator) (hasKey (default dict .Values.webhook.validator) "create") }}
{{- if .Values.webhook.validator.create }}true{{ else }}false{{ end }}
{{- else }}
{{- if .Values.webhook.create }}true{{ else }}false{{ end }}
{{- end }}
{{- end }}

{{- define "flink-operator.mutating-webhook-enabled" -}}
{{- if and (hasKey .Values.webhook "mutator") (kindIs "map" .Values.webhook.mutator) (hasKey (default dict .Values.webhook.mutator) "create") }}
{{- if .Values.webhook.mutator.create }}true{{ else }}false{{ end }}
{{- else }}
{{- if .Values.webhook.create }}true{{ else }}false{{ end }}
{{- end }}
{{- end }}

{{- define "flink-operator.webhook-enabled" -}}
{{- if or (eq (include "flink-operator.validating-webhook-enabled" .) "true") (eq (include "flink-operator.mutating-webhook-enabled" .) "true") }}true{{ else }}false{{ end }}
{{- end }}

{{/* Names of the webhook's objects (upstream's chart's names; the operator is told them by flag). */}}
{{- define "flink-operator.webhookServiceName" -}}flink-operator-webhook-service{{- end }}
{{- define "flink-operator.webhookConfigName" -}}flink-operator-{{ .Release.Namespace }}-webhook-configuration{{- end }}
{{- define "flink-operator.webhookSecretName" -}}flink-operator-webhook-cert{{- end }}

{{/* The file the operator reads with --config: flink-conf.yaml when defaultConfiguration has that
key (upstream's default values), else config.yaml, as upstream's chart mounts one or the other. */}}
{{- define "flink-operator.configFile" -}}
{{- if hasKey .Values.defaultConfiguration "flink-conf.yaml" }}flink-conf.yaml{{ else }}config.yaml{{ end }}
{{- end }}

{{- define "flink-operator.metricsPort" -}}
{{- default 8080 .Values.metrics.port }}
{{- end }}

{{/* The rules of the Flink pods' Role (as manifests/flink-serviceaccount/rbac.yaml and upstream's
chart's jobRbacRules). */}}
{{- define "flink-operator.jobRbacRules" -}}
rules:
  # TaskManager pods (native mode) and Kubernetes HA ConfigMaps.
  - apiGroups: [""]
    resources: ["pods", "configmaps"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
  # The JobManager Deployment, owner of the TaskManager pods Flink creates.
  - apiGroups: ["apps"]
    resources: ["deployments", "deployments/finalizers"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
{{- end }}

{{/* The operator's rules on namespaced resources (manifests/base/rbac.yaml, ClusterRole
flink-operator, where every rule names the code that needs it). */}}
{{- define "flink-operator.rbacRules" -}}
rules:
  - apiGroups: ["flink.apache.org"]
    resources: ["flinkdeployments"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinkdeployments/status"]
    verbs: ["update"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinkdeployments/finalizers"]
    verbs: ["update"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinksessionjobs"]
    verbs: ["get", "list", "watch", "update"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinksessionjobs/status"]
    verbs: ["update"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinkstatesnapshots"]
    verbs: ["get", "list", "watch", "create", "update", "delete"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinkstatesnapshots/status"]
    verbs: ["update"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinkbluegreendeployments"]
    verbs: ["get", "list", "watch", "update", "patch"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinkbluegreendeployments/status"]
    verbs: ["update", "patch"]
  - apiGroups: ["flink.apache.org"]
    resources: ["flinkbluegreendeployments/finalizers"]
    verbs: ["update", "patch"]
  - apiGroups: ["apps"]
    resources: ["deployments"]
    verbs: ["get", "list", "watch", "create", "update", "delete"]
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get", "list", "watch", "create", "update", "delete"]
  - apiGroups: [""]
    resources: ["services"]
    verbs: ["get", "list", "watch", "create", "update"]
  - apiGroups: ["networking.k8s.io"]
    resources: ["ingresses"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list", "watch"]
  - apiGroups: [""]
    resources: ["serviceaccounts"]
    verbs: ["get"]
  - apiGroups: [""]
    resources: ["pods/log"]
    verbs: ["get"]
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["create", "patch", "list"]
{{- end }}
