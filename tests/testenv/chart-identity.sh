#!/usr/bin/env bash
# Makes headroom's identity on a test cluster exactly what the Helm chart grants: renders the
# chart's ServiceAccount and RBAC for the given values (helm template), its CRDs, and the PriorityClasses the
# chart makes (priorityClasses.create, the default: then headroom may only read them), applies them as the admin,
# asks the TokenRequest API for the ServiceAccount's token, and writes a kubeconfig that uses it.
# A headroom run with that kubeconfig fails on any permission the chart forgot.
#   chart-identity.sh KUBECONFIG VALUES RELEASE NAMESPACE OUT_KUBECONFIG
set -euo pipefail
admin_kc=$1 values=$2 release=$3 ns=$4 out=$5
src=$(cd "$(dirname "$0")/../.." && pwd)
helm=$("$src/tests/testenv/build-helm.sh")
testenv=${HEADROOM_TESTENV_DIR:-$("$src/tests/testenv/build.sh")}
k() { "$testenv/bin/kubectl" --kubeconfig "$admin_kc" "$@"; }
k create namespace "$ns" >/dev/null 2>&1 || true
"$helm" template "$release" "$src/deploy/chart/headroom" -n "$ns" -f "$values" --kube-version 1.36.0 \
  --show-only templates/serviceaccount.yaml --show-only templates/rbac.yaml >"$out.rbac.yaml"
if "$helm" template "$release" "$src/deploy/chart/headroom" -n "$ns" -f "$values" --kube-version 1.36.0 \
     --show-only templates/priorityclasses.yaml >"$out.pcs.yaml" 2>/dev/null; then
  k apply -f "$out.pcs.yaml" >/dev/null
fi
# The CRDs the chart installs for these values (the ScaleSet CRD by default), as `helm install` would.
if "$helm" template "$release" "$src/deploy/chart/headroom" -n "$ns" -f "$values" --kube-version 1.36.0 \
     --show-only templates/crds.yaml >"$out.crds.yaml" 2>/dev/null && grep -q '^kind: CustomResourceDefinition' "$out.crds.yaml"; then
  k apply --server-side --force-conflicts -f "$out.crds.yaml" >/dev/null
  k wait --for condition=Established --timeout 60s -f "$out.crds.yaml" >/dev/null
fi
k apply -f "$out.rbac.yaml" >/dev/null
# headroom's own ServiceAccount (rbac.yaml may also render the runner pods' one, in their namespaces).
sa=$("$helm" template "$release" "$src/deploy/chart/headroom" -n "$ns" -f "$values" --kube-version 1.36.0 \
       --show-only templates/serviceaccount.yaml | awk '/^kind: ServiceAccount/{f=1} f && /^  name:/{print $2; exit}')
[ -n "$sa" ] || { echo "chart-identity: the chart rendered no ServiceAccount" >&2; exit 1; }
token=$(k create token "$sa" -n "$ns" --duration=4h)
server=$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
ca_file=$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')
if [ -z "$ca" ] && [ -n "$ca_file" ]; then ca=$(base64 -w0 <"$ca_file"); fi
umask 077
cat >"$out" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: $sa
  user: {token: "$token"}
contexts:
- name: chart
  context: {cluster: test, user: $sa}
current-context: chart
YAML
echo "$sa"
