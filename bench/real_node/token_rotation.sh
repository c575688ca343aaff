#!/usr/bin/env bash
# A soak on the test cluster's real node (#56): headroom from the chart keeps working across the
# kubelet's rotation of its ServiceAccount token, past the old token's expiry.
#
# The chart's pod gets a projected token of the shortest life the API server grants (600 s), in
# place of the automounted one (an extraVolume at the ServiceAccount path, as users under a token
# policy mount it). The kubelet writes a new token at 80 % of its life (480 s); the old one then
# stops working at 600 s. headroom re-reads the token file when it changes (adapters/k8s
# connection.cpp), so past 600 s it must still renew its Lease, with no 401 in its log. About 11
# minutes, mostly waiting: scripts/test runs it beside the integration pass (a cluster of its own);
# by hand:
#   bench/real_node/token_rotation.sh [BUILD_DIR]      default build/release
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build/release}
export HEADROOM_TESTENV_DIR=${HEADROOM_TESTENV_DIR:-$("$src/tests/testenv/build.sh")}
helm=$("$src/tests/testenv/build-helm.sh")
work=$(mktemp -d)
trap '"$src/tests/testenv/cluster" down "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
say() { printf '[token-rotation +%4ds] %s\n' $((SECONDS - t0)) "$*"; }
fail() { say "FAIL: $*"; exit 1; }
t0=$SECONDS

"$src/tests/testenv/cluster" up "$work/cluster" --node >"$work/up.log" 2>&1 || { tail -30 "$work/up.log"; fail "cluster up --node"; }
set -a
. "$work/cluster/env"
set +a
k() { "$HEADROOM_TESTENV_KUBECTL" "$@"; }
image=$("$src/tests/testenv/node" push-headroom "$work/cluster" "$work/image" 2>"$work/image.log") ||
  { tail -20 "$work/image.log"; fail "building and pushing headroom's image"; }

k create namespace soak >/dev/null
k label namespace soak pod-security.kubernetes.io/enforce=restricted >/dev/null
cat >"$work/values.yaml" <<EOF
replicaCount: 1
extraVolumes:
  - name: api-token
    projected:
      sources:
        - serviceAccountToken: {path: token, expirationSeconds: 600}
        - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
        - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
extraVolumeMounts:
  - {name: api-token, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}
EOF
"$helm" install soak "$src/deploy/chart/headroom" -n soak -f "$work/values.yaml" \
  --set "image.repository=${image%@*}" --set "image.digest=${image#*@}" >/dev/null ||
  fail "helm install"
k -n soak wait --for=condition=Ready pod -l app.kubernetes.io/instance=soak --timeout=90s >/dev/null || fail "not Ready"
pod=$(k -n soak get pods -l app.kubernetes.io/instance=soak -o jsonpath='{.items[0].metadata.name}')
uid=$(k -n soak get pod "$pod" -o jsonpath='{.metadata.uid}')
token="$work/cluster/node/kubelet/pods/$uid/volumes/kubernetes.io~projected/api-token/token"
claim() { python3 -c 'import base64,json,sys; p=open(sys.argv[1]).read().split(".")[1]; print(json.loads(base64.urlsafe_b64decode(p+"="*(-len(p)%4)))[sys.argv[2]])' "$token" "$1"; }
first_iat=$(claim iat) first_exp=$(claim exp)
say "Ready: $pod, token issued at $first_iat, expires at $first_exp ($((first_exp - first_iat)) s)"

renewed_age() {  # seconds since headroom last renewed its Lease
  local at
  at=$(k -n soak get lease -o jsonpath='{.items[0].spec.renewTime}')
  echo $(( $(date +%s) - $(date -d "$at" +%s) ))
}
until [ "$(claim iat)" != "$first_iat" ]; do
  [ $((SECONDS - t0)) -lt 900 ] || fail "the kubelet did not rotate the token"
  sleep 5
done
say "the kubelet rotated the token: issued at $(claim iat) ($(( $(claim iat) - first_iat )) s after the first)"
while [ "$(date +%s)" -le $((first_exp + 30)) ]; do sleep 5; done
age=$(renewed_age)
say "30 s past the first token's expiry: the Lease was last renewed ${age} s ago"
[ "$age" -le 15 ] || fail "headroom stopped renewing its Lease after the first token expired"
[ "$(k -n soak get pod "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}')" = 0 ] || fail "headroom restarted"
if k -n soak logs "$pod" | grep -q '401'; then
  k -n soak logs "$pod" | grep '401' | head -3
  fail "a 401 in headroom's log"
fi
say "ok: headroom read the rotated token and kept working past the old one's expiry"
