{{/*
SPDX-License-Identifier: Apache-2.0

The chart renders the kustomize manifests' own files (files/ links to
manifests/; `helm package` stores copies), changed only where a value says
so. tests/manifests renders both and compares the objects, so the two ways
to install cannot drift.
*/}}

{{/* Labels of every object: the kustomize base's, and Helm's. */}}
{{- define "ioqos.labels" -}}
app.kubernetes.io/part-of: ioqos
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The one image of every ioqos container. */}}
{{- define "ioqos.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
The objects of one file under files/ as a YAML list (read it back with
fromYamlArray). The manifests name their namespace ioqos-system everywhere
it occurs (metadata, RoleBinding subjects, service account names in CEL,
Service DNS names): each becomes the release's namespace.
  include "ioqos.load" (list $ "files/base/plugin-rbac.yaml")
*/}}
{{- define "ioqos.load" -}}
{{- $ctx := index . 0 -}}
{{- $path := index . 1 -}}
{{- $text := $ctx.Files.Get $path -}}
{{- if not $text -}}
{{- fail (printf "chart file %s is missing or empty: files/ must link to manifests/ (or, in a packaged chart, hold its copy)" $path) -}}
{{- end -}}
{{- $objs := list -}}
{{- range regexSplit "(?m)^---[ \t]*$" ($text | replace "ioqos-system" $ctx.Release.Namespace) -1 -}}
{{- $o := fromYaml . -}}
{{- if hasKey $o "Error" -}}
{{- fail (printf "%s: %s" $path $o.Error) -}}
{{- end -}}
{{- if $o.kind -}}
{{- $objs = append $objs $o -}}
{{- end -}}
{{- end -}}
{{- toYaml $objs -}}
{{- end }}

{{/*
One object, as a YAML document: the chart's labels added to its own, and
the release's namespace where the kind is namespaced and the file names
none (kube-system stays kube-system).
  include "ioqos.emit" (list $ $object)
*/}}
{{- define "ioqos.emit" -}}
{{- $ctx := index . 0 -}}
{{- $o := index . 1 -}}
{{- $md := $o.metadata -}}
{{- $_ := set $md "labels" (merge (include "ioqos.labels" $ctx | fromYaml) ($md.labels | default dict)) -}}
{{- $clusterScoped := list "Namespace" "ClusterRole" "ClusterRoleBinding" "ValidatingAdmissionPolicy" "ValidatingAdmissionPolicyBinding" "MutatingAdmissionPolicy" "MutatingAdmissionPolicyBinding" "DeviceClass" -}}
{{- if has $o.kind $clusterScoped -}}
{{- $_ := unset $md "namespace" -}}
{{- else if not $md.namespace -}}
{{- $_ := set $md "namespace" $ctx.Release.Namespace -}}
{{- end }}
---
{{ toYaml $o }}
{{- end }}

{{/* Every object of one file under files/, emitted. */}}
{{- define "ioqos.file" -}}
{{- $ctx := index . 0 -}}
{{- range include "ioqos.load" . | fromYamlArray }}
{{ include "ioqos.emit" (list $ctx .) }}
{{- end }}
{{- end }}

{{/*
The node daemon's pools: the default one (name "") and each of
plugin.pools, with its config merged over plugin.config. Checks what the
schema cannot: unique names, and one placement policy everywhere (the
extender places with the same function as every node's plugin).
*/}}
{{- define "ioqos.pools" -}}
{{- $pools := list (dict "name" "" "config" .Values.plugin.config) -}}
{{- $seen := dict -}}
{{- $policy := .Values.plugin.config.placementPolicy | default "least-allocated" -}}
{{- range .Values.plugin.pools -}}
{{- if hasKey $seen .name -}}
{{- fail (printf "plugin.pools: the pool name %q appears twice" .name) -}}
{{- end -}}
{{- $_ := set $seen .name true -}}
{{- $cfg := mergeOverwrite (deepCopy $.Values.plugin.config) (deepCopy (.config | default dict)) -}}
{{- if ne ($cfg.placementPolicy | default "least-allocated") $policy -}}
{{- fail (printf "plugin.pools[%s].config.placementPolicy is %v but plugin.config says %v: the extender places pods with one policy, so every pool must use it" .name $cfg.placementPolicy $policy) -}}
{{- end -}}
{{- $pools = append $pools (dict "name" .name "config" $cfg) -}}
{{- end -}}
{{- toYaml $pools -}}
{{- end }}
