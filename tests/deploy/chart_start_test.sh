#!/usr/bin/env bash
# Every chart scenario a user can start from starts (#61: a default `helm install` exited 2 at
# start, `github.caFile … cannot open`, and `check-config` and `helm test` both passed it):
#   the bare defaults, each ci/*-values.yaml, and scripts/migrate-from-arc's output.
# Each is installed with helm on the test control plane, with the Secrets and ConfigMaps it names
# made as a user would (real keys and certificates, made here), and runs as a cluster runs it (#56):
# headroom's image (scripts/image) pulled by digest from the registry of the cluster's real node
# (tests/testenv/node: kubelet, containerd, runc), in a namespace that enforces the Pod Security
# "restricted" profile, with the chart's security context, projected ServiceAccount token and
# probes. Each must become Ready (dependencies it cannot reach here are retried, never an exit),
# stay up without a restart or an error, and stop on the kubelet's SIGTERM with exit code 0 within
# its terminationGracePeriodSeconds. The scenarios run side by side on the node (2 min, not 4).
#   chart_start_test.sh HEADROOM_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
# shellcheck source=../integration/agent_test_lib.sh
. "$src/tests/integration/agent_test_lib.sh"
helm=$("$src/tests/testenv/build-helm.sh")
chart="$src/deploy/chart/headroom"
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  "$src/tests/testenv/cluster" down "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work" "${pgdir:-}"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$src/tests/testenv/cluster" up "$work/cluster" --node --owner $$ >"$work/cluster-up.log" 2>&1 ||
  { tail -40 "$work/cluster-up.log"; fail "cluster up --node"; }
export KUBECONFIG="$work/cluster/kubeconfig"
kubectl=$(sed -n 's/^HEADROOM_TESTENV_KUBECTL=//p' "$work/cluster/env")
k() { "$kubectl" "$@"; }
node_ip=$(sed -n 's/^HEADROOM_TESTENV_NODE_IP=//p' "$work/cluster/env")
push=$(sed -n 's/^HEADROOM_TESTENV_NODE_PUSH=//p' "$work/cluster/env")
pull=$(sed -n 's/^HEADROOM_TESTENV_NODE_IMAGES=//p' "$work/cluster/env")
. "$work/cluster/node/net.env"  # NODE_HOST_IP: where pods reach this machine

# headroom's image as a user builds it, pushed to the node's registry and pulled by digest.
t0=$SECONDS
image=$("$src/tests/testenv/node" push-headroom "$work/cluster" "$work/image" 2>"$work/image.log") ||
  { tail -20 "$work/image.log"; fail "building and pushing headroom's image"; }
repo=${image%@*} digest=${image#*@}
echo "chart_start_test: image $image built and pushed in $((SECONDS - t0)) s"

# What a user makes before installing: real key material, so a scenario that reads it at start
# reads something valid.
openssl genrsa -out "$work/app.pem" 2048 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test-ca" -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=headroom" -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days 2 -out "$work/tls.crt" 2>/dev/null
b64ca=$(base64 -w0 "$work/ca.crt")
for ns in arc-runners arc-gpu team-a serving ci-runners; do k create namespace "$ns" >/dev/null; done

# The scheduler's ci values store jobs in PostgreSQL: a real server (Debian's), as a user's would be.
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/postgres" ] || fail "PostgreSQL is not installed (scripts/install-deps installs it)"
pgdir=$(mktemp -d /tmp/headroom-chart-pg-XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$pgdir"
  as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi
"${as_pg[@]}" "$pgbin/initdb" -D "$pgdir/data" -U headroom --auth=trust -E UTF8 >"$work/initdb.log" 2>&1 ||
  { cat "$work/initdb.log"; fail "initdb"; }
pgport=$("$src/tests/testenv/free-port")
"${as_pg[@]}" "$pgbin/postgres" -D "$pgdir/data" -p "$pgport" -k "$pgdir" -c listen_addresses="127.0.0.1,$NODE_HOST_IP" >"$work/postgres.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 30); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" && break; sleep 1; done
"$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" || { cat "$work/postgres.log"; fail "PostgreSQL did not start"; }
# The pods' connections arrive from the node's address (the CNI bridge masquerades them).
echo "host all all $NODE_HOST_IP/24 trust" >>"$pgdir/data/pg_hba.conf"
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdir/data" reload >/dev/null

"$src/scripts/migrate-from-arc" arc-runners/linux="$src/tests/deploy/arc/linux-values.yaml" arc-gpu/gpu="$src/tests/deploy/arc/gpu-values.yaml" \
  >"$work/migrated.yaml" 2>"$work/migrate.log" || { cat "$work/migrate.log"; fail "migrate-from-arc"; }

# All scenarios are installed at once (their pods start side by side on the node), then each is
# checked and stopped in turn.
# install NAME [helm values args…]: installs release NAME in namespace start-NAME.
declare -A installed
install() {
  local name=$1
  shift
  local ns=start-$name
  k create namespace "$ns" >/dev/null
  k label namespace "$ns" pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest >/dev/null
  # The Secrets and ConfigMaps the scenarios name (ARC's key names for the GitHub ones).
  k -n "$ns" create secret generic headroom-github --from-literal=github_token=ghp_chartStartTest0000000000000000000 >/dev/null
  for s in github-app arc-github-app; do
    k -n "$ns" create secret generic "$s" --from-literal=github_app_id=1 --from-literal=github_app_installation_id=2 \
      --from-file=github_app_private_key="$work/app.pem" >/dev/null
  done
  k -n "$ns" create secret generic headroom-scheduler --from-literal=webhook-secret=chart-start-test-secret \
    --from-literal=postgres-dsn="postgresql://headroom@$NODE_HOST_IP:$pgport/postgres" >/dev/null
  k -n "$ns" create secret generic proxy-auth --from-literal=username=proxy-user --from-literal=password=proxy-pass >/dev/null
  k -n "$ns" create secret tls headroom-webhook-tls --cert "$work/tls.crt" --key "$work/tls.key" >/dev/null
  k -n "$ns" create secret generic headroom-bigfleet-tls --from-file=tls.crt="$work/tls.crt" --from-file=tls.key="$work/tls.key" \
    --from-file=ca.crt="$work/ca.crt" >/dev/null
  k -n "$ns" create configmap ghes-ca --from-file=ca.crt="$work/ca.crt" >/dev/null
  "$helm" install "$name" "$chart" -n "$ns" --set "image.repository=$repo" --set "image.digest=$digest" "$@" \
    --set "gates.webhook.caBundle=$b64ca" >"$work/$name-install.log" 2>&1 ||
    { cat "$work/$name-install.log"; fail "helm install ($name)"; }
  installed[$name]=$SECONDS
}

# wait_ready NAME…: each release's replicas Ready (the readiness probe, /readyz every 5 s, passed on
# every one) within 60 s of its install: image pull, start and the first probes (the liveness
# probe would restart it after 30 s unhealthy).
wait_ready() {
  local pending=("$@")
  while [ ${#pending[@]} -gt 0 ]; do
    local left=() name
    for name in "${pending[@]}"; do
      local ns=start-$name sel="app.kubernetes.io/instance=$name" want have
      want=$(k -n "$ns" get deploy -l "$sel" -o jsonpath='{.items[0].spec.replicas}')
      have=$(k -n "$ns" get deploy -l "$sel" -o jsonpath='{.items[0].status.readyReplicas}')
      if [ -n "$want" ] && [ "$have" = "$want" ]; then
        echo "chart_start_test: $name: $want replica(s) Ready in $((SECONDS - installed[$name])) s"
        continue
      fi
      if [ $((SECONDS - installed[$name])) -gt 60 ]; then
        k -n "$ns" get pods -o wide
        k -n "$ns" describe pods | tail -30
        for p in $(k -n "$ns" get pods -l "$sel" -o name); do k -n "$ns" logs "$p" --tail 20 || true; done
        fail "$name: not Ready within 60 s"
      fi
      left+=("$name")
    done
    pending=("${left[@]}")
    [ ${#pending[@]} -eq 0 ] || sleep 1
  done
}

# check NAME: the release's pods stayed up, reached the API server, kept to their memory, and end
# on the kubelet's SIGTERM; then it is uninstalled.
check() {
  local name=$1 ns=start-$1 sel="app.kubernetes.io/instance=$1"
  local pods restarts
  [ "$name" != session ] || session_running
  [ "$name" != many ] || many_running
  pods=$(k -n "$ns" get pods -l "$sel" -o jsonpath='{.items[*].metadata.name}')
  restarts=$(k -n "$ns" get pods -l "$sel" -o jsonpath='{.items[*].status.containerStatuses[0].restartCount}')
  [ "$(tr -d ' 0' <<<"$restarts")" = "" ] || { k -n "$ns" describe pods | tail -30; fail "$name: restarted ($restarts)"; }
  for p in $pods; do
    k -n "$ns" logs "$p" >"$work/$name-$p.log"
    if grep -q '"level":"error"' "$work/$name-$p.log"; then
      grep '"level":"error"' "$work/$name-$p.log" | head -5
      fail "$name: an error at start ($p)"
    fi
  done
  # It reached the API server as a pod does (the `kubernetes` Service, its projected token): one
  # replica holds the leader Lease.
  local holder
  holder=$(k -n "$ns" get leases -o jsonpath='{.items[*].spec.holderIdentity}')
  grep -qwF -f <(tr ' ' '\n' <<<"$pods") <<<"$holder" || fail "$name: no pod of $pods holds a Lease (holders: '$holder')"
  # Its memory on the node: the container's cgroup (v1) never met the chart's limit (failcnt 0),
  # and its peak is reported. The pod's cgroup is under the node's root, by QoS class.
  for p in $pods; do
    local uid cg
    uid=$(k -n "$ns" get pod "$p" -o jsonpath='{.metadata.uid}')
    cg=$(find "/sys/fs/cgroup/memory/$NODE_NETNS/kubepods" -maxdepth 2 -type d -name "pod$uid" | head -1)
    [ -n "$cg" ] || fail "$name: no memory cgroup for $p on the node"
    local peak=0 fails=0 limit=0 hwm="?" c
    for c in "$cg"/*/; do
      [ -f "$c/memory.limit_in_bytes" ] || continue
      local l
      l=$(cat "$c/memory.limit_in_bytes")
      [ "$l" -lt $((1 << 40)) ] || continue  # the sandbox's pause: no limit
      limit=$l peak=$(cat "$c/memory.max_usage_in_bytes") fails=$(cat "$c/memory.failcnt")
      # The process's own peak resident set (shared library pages another pod read first are
      # charged to that pod's cgroup, not this one's, so the cgroup's figure is lower).
      hwm=$(awk '/^VmHWM/ { print int($2 / 1024) }' "/proc/$(head -1 "$c/cgroup.procs")/status" 2>/dev/null || echo "?")
    done
    [ "$limit" -gt 0 ] || fail "$name: $p's container has no memory limit on the node"
    [ "$fails" = 0 ] || fail "$name: $p met its memory limit $fails times (peak $peak of $limit bytes)"
    echo "chart_start_test: $name: $p memory: cgroup peak $((peak >> 20)) MiB of its $((limit >> 20)) MiB limit, process peak RSS $hwm MiB"
  done
  # The kubelet's SIGTERM: each pod deleted as a rollout or a drain does; its container must end
  # with exit code 0 well within terminationGracePeriodSeconds (the kubelet would SIGKILL: 137).
  local grace
  grace=$(k -n "$ns" get deploy -l "$sel" -o jsonpath='{.items[0].spec.template.spec.terminationGracePeriodSeconds}')
  # A watch sees the status the kubelet writes between the exit and the pod's removal.
  k -n "$ns" get pods -l "$sel" -w -o jsonpath='{.metadata.name} {.status.containerStatuses[0].state.terminated.exitCode}{"\n"}' \
    >"$work/$name-watch.txt" 2>/dev/null &
  local watcher=$! t1=$SECONDS
  sleep 1
  k -n "$ns" scale deploy -l "$sel" --replicas 0 >/dev/null
  until [ -z "$(k -n "$ns" get pods -l "$sel" -o name)" ] || [ $((SECONDS - t1)) -gt $((grace + 20)) ]; do sleep 0.5; done
  local took=$((SECONDS - t1))
  sleep 1
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  for p in $pods; do
    local code
    code=$(awk -v p="$p" '$1 == p && $2 != "" { c = $2 } END { print c }' "$work/$name-watch.txt")
    [ -n "$code" ] || { cat "$work/$name-watch.txt"; fail "$name: $p gave no exit code after SIGTERM"; }
    [ "$code" = 0 ] || { tail -20 "$work/$name-$p.log"; fail "$name: $p exited $code after SIGTERM, not 0"; }
  done
  [ "$took" -le "$grace" ] || fail "$name: the pods took ${took} s to stop, past terminationGracePeriodSeconds ${grace}"
  echo "chart_start_test: $name: every pod stopped with 0 in ≤ ${took} s (grace ${grace} s)"
  [ "$name" != session ] || session_stopped
  [ "$name" != many ] || many_stopped
  "$helm" uninstall "$name" -n "$ns" --wait >/dev/null 2>&1 || true
}


# A scale set with a session, against the Actions Service peer listening on this machine's
# node-network address (where pods reach it): while the pod runs, its session exists and its warm
# pair runs on the node in a namespace enforcing Pod Security "baseline" (placeholders meet
# "restricted"); the kubelet's SIGTERM ends the session before the exit.
"$src/tests/peers/actions-service/build.sh" "$work/actions-peer" || fail "building the Actions Service peer"
mkdir -p "$work/peer-state"
"$work/actions-peer" -state-dir "$work/peer-state" -listen-host "$NODE_HOST_IP" \
  -pat ghp_chartStartTest0000000000000000000 >"$work/peer.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 50); do [ -f "$work/peer-state/ready.json" ] && break; sleep 0.2; done
peer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["http"])' "$work/peer-state/ready.json") ||
  { cat "$work/peer.log"; fail "the Actions Service peer did not start"; }
k create namespace session-runners >/dev/null
k label namespace session-runners pod-security.kubernetes.io/enforce=baseline pod-security.kubernetes.io/enforce-version=latest >/dev/null
cat >"$work/session-values.yaml" <<EOF
config:
  github: {configUrl: $peer/headroom-org}
  scaleSets:
    - name: chart-session
      namespace: session-runners
      maxRunners: 2
      runner: {image: $pull/busybox:1.36, resources: {cpu: 100m, memory: 64Mi}}
      capacityAware: {enabled: true, proactiveCapacity: 1, recalculateInterval: 2s, placeholderReadyTimeout: 60s,
                      workflowResources: {cpu: 100m, memory: 64Mi}, placeholderImage: $pull/busybox:1.36}
github: {existingSecret: headroom-github}
EOF
# sessions PREFIX: how many sessions the peer holds for scale sets named PREFIX….
sessions() {
  curl -fsS "$peer/_control/state" | python3 -c '
import json, sys
st = json.load(sys.stdin)
ids = {s["id"] for s in st["scaleSets"] if s["name"].startswith(sys.argv[1])}
print(sum(1 for x in st["sessions"] if x["scaleSetId"] in ids))' "$1"
}
session_running() {
  local t0=$SECONDS
  until [ "$(sessions chart-session)" = 1 ]; do
    [ $((SECONDS - t0)) -lt 60 ] || { tail -20 "$work/peer.log"; fail "session: no session at the peer within 60 s"; }
    sleep 1
  done
  until [ "$(k -n session-runners get pods -l 'headroom.dev/role in (runner-placeholder,workflow-placeholder)' \
    -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.spec.nodeName}{"\n"}{end}' | grep -c .)" = 2 ]; do
    [ $((SECONDS - t0)) -lt 90 ] || { k -n session-runners get pods -o wide; k -n session-runners get events | tail; fail "session: the warm pair does not run"; }
    sleep 1
  done
  echo "chart_start_test: session: a session at the peer and the warm pair running on $(k -n session-runners get pods -o jsonpath='{.items[0].spec.nodeName}')"
}
session_stopped() {
  [ "$(sessions chart-session)" = 0 ] || { curl -fsS "$peer/_control/state" | head -c 2000; fail "session: the session outlived the pod"; }
  echo "chart_start_test: session: the session was deleted before the exit"
}
# Many scale sets in one headroom (#56: the documented memory figure, on the node): $many scale sets
# with the chart's default memory limit (256Mi: "a few hundred scale sets", values.yaml), each
# holding its session (no warm pool: the node has room for few pairs). All sessions open while it
# runs, its memory never meets the limit (check), and SIGTERM deletes every session before the exit.
# (CHART_START_MANY=1000 CHART_START_MANY_LIMIT=384Mi: the figure documented for 1,000, measured
# by hand for bench/README.md; not in CI.)
many=${CHART_START_MANY:-200}
k create namespace many-runners >/dev/null
{
  echo "config:"
  echo "  github: {configUrl: $peer/headroom-org}"
  echo "  scaleSets:"
  for i in $(seq -w 1 "$many"); do
    echo "    - {name: chart-many-$i, namespace: many-runners, maxRunners: 1, runner: {image: $pull/busybox:1.36},"
    echo "       capacityAware: {enabled: true, proactiveCapacity: 0}}"
  done
  echo "github: {existingSecret: headroom-github}"
  [ -z "${CHART_START_MANY_LIMIT:-}" ] || echo "resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: $CHART_START_MANY_LIMIT}}"
} >"$work/many-values.yaml"
many_running() {
  local t0=$SECONDS
  until [ "$(sessions chart-many-)" = "$many" ]; do
    [ $((SECONDS - t0)) -lt 90 ] || { tail -20 "$work/peer.log"; fail "many: $(sessions chart-many-) of $many sessions at the peer after 90 s"; }
    sleep 1
  done
  echo "chart_start_test: many: all $many scale sets hold a session at the peer"
}
many_stopped() {
  local n
  n=$(sessions chart-many-)
  [ "$n" = 0 ] || fail "many: $n of $many sessions outlived the pod"
  echo "chart_start_test: many: every session was deleted before the exit"
}
install default
for mode in scale-sets bigfleet reactive gates scheduler; do
  install "$mode" -f "$chart/ci/$mode-values.yaml"
done
install migrated -f "$work/migrated.yaml"
install session -f "$work/session-values.yaml"
install many -f "$work/many-values.yaml"
scenarios=(default scale-sets bigfleet reactive gates scheduler migrated session many)
wait_ready "${scenarios[@]}"
sleep 10  # past the start: leader election, each mode's first steps
for name in "${scenarios[@]}"; do check "$name"; done
echo "chart_start_test: ok (the defaults, 5 ci values, the migrated values, a scale set with a session and $many scale sets all start)"
