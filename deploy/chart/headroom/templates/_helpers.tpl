{{- define "headroom.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "headroom.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "headroom.labels" -}}
{{ include "headroom.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "headroom.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ default (include "headroom.fullname" .) .Values.serviceAccount.name }}{{- else -}}{{ default "default" .Values.serviceAccount.name }}{{- end -}}
{{- end -}}

{{/* The ladder's PriorityClass names (JSON): priorityClasses.<rung>, else config.priorityClasses.<rung>, else the release's. */}}
{{- define "headroom.priorityClassNames" -}}
{{- $fn := include "headroom.fullname" . -}}
{{- $cfg := default dict .Values.config.priorityClasses -}}
{{- $pc := .Values.priorityClasses -}}
{{- $out := dict -}}
{{- range $rung, $suffix := dict "placeholderRunner" "placeholder-runner" "runner" "runner" "placeholderWorkflow" "placeholder-workflow" "workflow" "workflow" -}}
{{- $_ := set $out $rung (coalesce (index $pc $rung) (index $cfg $rung) (printf "%s-%s" $fn $suffix)) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* headroom.yaml: the user's config with what the install owns filled in. */}}
{{- define "headroom.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $_ := set $cfg "http" (dict "listen" (printf "0.0.0.0:%d" (int .Values.metrics.port))) -}}
{{- $le := dict "enabled" true "namespace" .Release.Namespace "name" (include "headroom.fullname" .) "leaseDuration" .Values.leaderElection.leaseDuration "renewDeadline" .Values.leaderElection.renewDeadline "retryPeriod" .Values.leaderElection.retryPeriod -}}
{{- $_ := set $cfg "leaderElection" $le -}}
{{- if or .Values.config.scaleSets (.Values.config.scaleSetObjects).namespaces -}}
{{- $_ := set $cfg "priorityClasses" (include "headroom.priorityClassNames" . | fromJson) -}}
{{- /* A runner whose jobs run through the container hook, with no ServiceAccount of its own, runs as
     the chart's runner ServiceAccount (rbac.yaml: what the hook needs in its namespace). */ -}}
{{- range $s := $cfg.scaleSets -}}
{{- $r := default dict $s.runner -}}
{{- if include "headroom.runnerUsesChartAccount" $r -}}
{{- if $r.template -}}
{{- $spec := default dict $r.template.spec -}}
{{- $_ := set $spec "serviceAccountName" (include "headroom.runnerServiceAccount" $) -}}
{{- $_ := set $r.template "spec" $spec -}}
{{- else -}}
{{- $_ := set $r "serviceAccountName" (include "headroom.runnerServiceAccount" $) -}}
{{- end -}}
{{- $_ := set $s "runner" $r -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.config.bigfleet .Values.config.bigfleet.enabled .Values.bigfleet.tlsSecret -}}
{{- $tls := dict "caFile" "/etc/headroom/bigfleet/ca.crt" "certFile" "/etc/headroom/bigfleet/tls.crt" "keyFile" "/etc/headroom/bigfleet/tls.key" -}}
{{- $_ := set $cfg.bigfleet "tls" (merge (default dict $cfg.bigfleet.tls) $tls) -}}
{{- end -}}
{{- if and (include "headroom.bigfleetEnabled" .) .Values.bigfleet.bootstrapTemplate -}}
{{- $_ := set $cfg.bigfleet "bootstrapTemplateFile" "/etc/headroom/config/bootstrap.tmpl" -}}
{{- end -}}
{{- if and .Values.config.gates .Values.config.gates.enabled -}}
{{- $hook := merge (default dict $cfg.gates.webhook) (dict "listen" "0.0.0.0:9443" "certFile" "/etc/headroom/webhook/tls.crt" "keyFile" "/etc/headroom/webhook/tls.key") -}}
{{- $_ := set $cfg.gates "webhook" $hook -}}
{{- end -}}
{{- /* Only a ConfigMap that is named is mounted; the default {name: "", key: ca.crt} mounts nothing,
     so it must not point github.caFile at a file that is not there. */ -}}
{{- $caRef := include "headroom.githubCARef" . | fromJson -}}
{{- if $caRef.name -}}
{{- $gh := default dict $cfg.github -}}
{{- $_ := set $gh "caFile" (printf "/etc/headroom/github-ca/%s" $caRef.key) -}}
{{- $_ := set $cfg "github" $gh -}}
{{- end -}}
{{- if and .Values.config.scheduler .Values.config.scheduler.enabled -}}
{{- $_ := set $cfg.scheduler "listen" "0.0.0.0:8080" -}}
{{- $store := merge (default dict $cfg.scheduler.store) (dict "sqlitePath" "/var/lib/headroom/jobs.db") -}}
{{- $_ := set $cfg.scheduler "store" $store -}}
{{- end -}}
{{ toYaml $cfg }}
{{- end -}}

{{- /* The ServiceAccount runner pods run as when the config names none: the container hook's. */ -}}
{{- define "headroom.runnerServiceAccount" -}}{{ printf "%s-runner" (include "headroom.fullname" .) | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- /* "true" when a scale set's runner (its `runner:` map) makes workflow pods through the hook and names no ServiceAccount (beside its image, or in its pod template). */ -}}
{{- define "headroom.runnerUsesChartAccount" -}}{{ if and (ne (default "kubernetes-novolume" .containerMode) "none") (ne (default "kubernetes-novolume" .containerMode) "dind") (not .serviceAccountName) (not (and .template (default dict .template.spec).serviceAccountName)) }}true{{ end }}{{- end -}}

{{- define "headroom.gatesEnabled" -}}{{ if and .Values.config.gates .Values.config.gates.enabled }}true{{ end }}{{- end -}}
{{- define "headroom.bigfleetEnabled" -}}{{ if and .Values.config.bigfleet .Values.config.bigfleet.enabled }}true{{ end }}{{- end -}}
{{- define "headroom.schedulerEnabled" -}}{{ if and .Values.config.scheduler .Values.config.scheduler.enabled }}true{{ end }}{{- end -}}

{{- /* The GitHub credentials' Secret: ARC's top-level value name (githubConfigSecret) or github.existingSecret. */}}
{{- define "headroom.githubSecret" -}}{{ .Values.githubConfigSecret | default .Values.github.existingSecret }}{{- end -}}

{{- /* githubServerTLS.certificateFrom.configMapKeyRef as {name, key}; empty name when unset or null. */ -}}
{{- define "headroom.githubCARef" -}}
{{- $from := default dict (default dict .Values.githubServerTLS).certificateFrom -}}
{{- $ref := default dict $from.configMapKeyRef -}}
{{- dict "name" (default "" $ref.name) "key" (default "ca.crt" $ref.key) | toJson -}}
{{- end -}}
