#!/usr/bin/env bash
# The headroom binary as a BigFleet operator: a Pod becomes a CapacityRequest, the roll-up reaches
# the shard peer and the CR is acknowledged, a NodeStateUpdate becomes an UpcomingNode, the
# bootstrap template (Go text/template) renders, and fails as the response's error, each actor kind failed (the test fault
# hook) is restarted within 1 s and the flow goes on, and SIGTERM stops it with exit 0.
set -euo pipefail
bin=$1
src=$2
# shellcheck source=agent_test_lib.sh
. "$src/tests/integration/agent_test_lib.sh"
work=$(mktemp -d)
cleanup() {
  for p in ${agent:-} ${shard:-}; do { kill -9 "$p" && wait "$p"; } 2>/dev/null || true; done
  "$src/tests/testenv/cluster" down "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- headroom"; grep -vE '"level":"debug"' "$work/agent.log" | tail -30
  echo "--- shard"; tail -20 "$work/shard/peer.log" 2>/dev/null || true
  exit 1
}
"$src/tests/testenv/cluster" up "$work/cluster" --owner $$ >/dev/null 2>&1 || fail "cluster up"
kc="$work/cluster/kubeconfig"
k() { "$testenv/bin/kubectl" --kubeconfig "$kc" "$@"; }
k apply -f "$src/deploy/crds/" >/dev/null
k wait --for=condition=Established crd --all --timeout=60s >/dev/null

mkdir -p "$work/shard"
"$src/tests/peers/bigfleet-shard/build.sh" "$work/shard/peer" || fail "building the shard peer"
"$work/shard/peer" --state-dir "$work/shard" 2>"$work/shard/peer.log" &
shard=$!
for _ in $(seq 100); do [ -f "$work/shard/ready.json" ] && break; sleep 0.1; done
grpc=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["grpc"])' "$work/shard/ready.json")
control=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["control"])' "$work/shard/ready.json")

# Go text/template, as BigFleet's own operator takes it; `index .Values 1` fails on a one-value requirement.
printf 'node: {{ .ClusterID }}{{ range .Requirements }} {{ .Key }}={{ index .Values 1 }}{{ end }}\n' >"$work/bootstrap.tmpl"
cat >"$work/headroom.yaml" <<YAML
leaderElection: {enabled: false}
bigfleet:
  enabled: true
  clusterId: agent-test
  shard: "$grpc"
  rollupInterval: 1s
  bootstrapTemplateFile: $work/bootstrap.tmpl
YAML
# headroom runs as the chart's ServiceAccount (its RBAC for the BigFleet mode, a TokenRequest
# token): a permission the chart forgot fails this test.
"$src/tests/testenv/chart-identity.sh" "$kc" "$src/deploy/chart/headroom/ci/bigfleet-values.yaml" agent-test headroom-system \
  "$work/chart.kubeconfig" >/dev/null || fail "the chart's identity"
# HEADROOM_TEST_FAULTS=1: the test-only fault hook (runtime/fault_hooks.hpp) of headroom-faults
# (the binary this test is given); the program the image ships has none.
HEADROOM_TEST_FAULTS=1 "$bin" --config "$work/headroom.yaml" --kubeconfig "$work/chart.kubeconfig" --metrics-addr 127.0.0.1:0 2>"$work/agent.log" &
agent=$!

k create namespace work >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: work}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "3", memory: 2Gi}}}]
YAML
for _ in $(seq 300); do
  phase=$(k get capacityrequest trainer -n work -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [ "$phase" = Acknowledged ] && break
  sleep 0.1
done
[ "$phase" = Acknowledged ] || fail "the Pod's CapacityRequest was not acknowledged (phase '$phase')"
state=$(curl -sf "$control/state")
python3 - "$state" <<'PY' || fail "the roll-up at the shard does not carry the Pod's demand: $state"
import json, sys
s = json.loads(sys.argv[1])
assert s["sessions"][0]["clusterId"] == "agent-test", s["sessions"]
needs = s["lastRollup"]["needs"]
assert any(n.get("aggregateResources", {}).get("cpu") == "3" for n in needs), needs
PY

curl -sf -X POST "$control/node-state?cluster=agent-test" -d '{"machineId":"m-agent","state":"MACHINE_STATE_CONFIGURING","resources":{"resources":{"cpu":"8"}}}' >/dev/null ||
  fail "posting a node state"
for _ in $(seq 100); do
  [ "$(k get upcomingnode m-agent -o jsonpath='{.status.phase}' 2>/dev/null)" = Registered ] && break
  sleep 0.1
done
[ "$(k get upcomingnode m-agent -o jsonpath='{.status.phase}' 2>/dev/null)" = Registered ] || fail "no UpcomingNode m-agent in phase Registered"

for req in '{"requestId":"b-1","requirements":[{"key":"zone","operator":"OPERATOR_IN","values":["a","b"]}]}' \
           '{"requestId":"b-2","requirements":[{"key":"zone","operator":"OPERATOR_IN","values":["a"]}]}'; do
  curl -sf -X POST "$control/bootstrap?cluster=agent-test" -d "$req" >/dev/null || fail "posting a bootstrap request"
done
# (Captured, then matched: `curl | grep -q` under pipefail fails when grep exits before curl is done.)
bootstraps() {
  python3 -c '
import base64, json, sys
for r in json.load(sys.stdin).get("bootstrapResponses") or []:
    print(r.get("requestId"), repr(base64.b64decode(r.get("userData", "")).decode()), r.get("error", ""))' <<<"$1"
}
for _ in $(seq 100); do state=$(curl -sf "$control/state" || true); [ "$(bootstraps "$state" | wc -l)" -ge 2 ] && break; sleep 0.1; done
got=$(bootstraps "$state")
grep -qxF "b-1 'node: agent-test zone=b\n' " <<<"$got" || fail "the template did not render b-1: $got"
grep -qF "b-2 '' template: bootstrap:1:" <<<"$got" && grep -qF "error calling index: index out of range: 1" <<<"$got" ||
  fail "the template's execution error did not reach the shard: $got"
kill -0 "$agent" || fail "headroom exited after a bad template"

port=$(sed -n 's/.*"msg":"serving \/metrics \/healthz \/readyz".*"port":\([0-9]*\).*/\1/p' "$work/agent.log" | head -1)
[ -n "$port" ] || fail "no serving line in the log"

# Fault campaign (#19): each BigFleet actor kind failed (killed, as a crash would) is restarted by
# its supervisor within 1 s; then a new Pod's demand still reaches the shard and is acknowledged.
restarts() {
  curl -sf "http://127.0.0.1:$port/metrics" |
    sed -n "s/^headroom_supervisor_restarts_total{child=\"$1\",supervisor=\"bigfleet\"} \([0-9.e+]*\)$/\1/p" | head -1
}
# From headroom's own log, so the figure holds no polling: the fault hook's line to the
# supervisor's restart (its "restarting child" line plus the backoff it names), and the part of it
# the actor took to go (to "child exited": its teardown, the shard stream's included).
restart_latency() {
  python3 - "$work/agent.log" "$1" <<'PY'
import json, sys
from datetime import datetime
def ts(e): return datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
fault = exited = back = None
for line in open(sys.argv[1]):
    try: e = json.loads(line)
    except ValueError: continue
    if e.get("child") != sys.argv[2]: continue
    if e.get("msg") == "test fault hook: failing child": fault, exited, back = ts(e), None, None
    elif fault is not None and e.get("msg") == "child exited": exited = ts(e)
    elif fault is not None and e.get("msg") == "restarting child after backoff":
        back = ts(e) + e.get("backoff_ms", 0) / 1000
print("%d %d" % ((back - fault) * 1000, (exited - fault) * 1000) if back and exited else "")
PY
}
for child in rollup shard_session capacity_requests; do
  before=$(restarts "$child"); before=${before:-0}
  start=$(date +%s%N)
  hit=$(curl -sf -X POST -d '' "http://127.0.0.1:$port/debug/fault?child=$child") || fail "the fault hook refused $child"
  [ "$hit" = 1 ] || fail "the fault hook reached $hit actors named $child, not 1"
  back=""
  for _ in $(seq 100); do
    now=$(restarts "$child")
    if [ -n "$now" ] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$now" "$before"; then
      back=$(( ($(date +%s%N) - start) / 1000000 )); break
    fi
    sleep 0.05
  done
  [ -n "$back" ] || fail "$child was not restarted within 5 s"
  read -r took gone <<<"$(restart_latency "$child")"
  [ -n "$took" ] || fail "no fault, exit and restart lines for $child in headroom's log"
  [ "$took" -lt 1000 ] || fail "$child was restarted only $took ms after the fault (goal 1 s; it took $gone ms to go)"
  echo "[faults] bigfleet $child failed: restarted $took ms after the fault (gone in $gone ms; the metric showed it within $back ms)"
done
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: after-faults, namespace: work}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "2", memory: 1Gi}}}]
YAML
for _ in $(seq 300); do
  phase=$(k get capacityrequest after-faults -n work -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [ "$phase" = Acknowledged ] && break
  sleep 0.1
done
[ "$phase" = Acknowledged ] || fail "after the restarts, a new Pod's CapacityRequest was not acknowledged (phase '$phase')"
for _ in $(seq 100); do
  state=$(curl -sf "$control/state" || true)
  python3 - "$state" <<'PY' && break
import json, sys
needs = json.loads(sys.argv[1])["lastRollup"]["needs"]
sys.exit(0 if any(n.get("aggregateResources", {}).get("cpu") == "5" for n in needs) else 1)
PY
  sleep 0.1
done
python3 - "$state" <<'PY' || fail "after the restarts the roll-up does not carry both Pods' demand (3 + 2 CPU): $state"
import json, sys
needs = json.loads(sys.argv[1])["lastRollup"]["needs"]
assert any(n.get("aggregateResources", {}).get("cpu") == "5" for n in needs), needs
PY

# The flow's policy buffers are on /metrics.
metrics=$(curl -sf "http://127.0.0.1:$port/metrics") || fail "GET /metrics"
for b in bigfleet_rollup bigfleet_outbox bigfleet_dispatch bigfleet_node_state capacity_requests_pods; do
  grep -q "headroom_buffer_accepted_total{buffer=\"$b\"" <<<"$metrics" || fail "no buffer metrics for $b: $(grep "^headroom_buffer_accepted" <<<"$metrics")"
done
# The Grafana dashboard's BigFleet and runtime panels query only what this run exports.
for row in "BigFleet operator" "Runtime"; do
  python3 "$src/tests/deploy/dashboard-check.py" "$src/deploy/grafana/headroom-dashboard.json" "$row" - <<<"$metrics" >"$work/dashboard.log" ||
    fail "dashboard row $row: $(cat "$work/dashboard.log")"
done

# #40, the fault campaign's "dependency down for minutes": the shard gone for 20 s. headroom says
# so once (and reminds once a minute), reconnects with backoff, spends next to no CPU meanwhile,
# and once the shard is back (on its old address) a new Pod's demand is acknowledged.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$agent/stat"; }
lines_before=$(wc -l <"$work/agent.log")
ticks_before=$(cpu_ticks)
kill -9 "$shard"; wait "$shard" 2>/dev/null || true
sleep 20
ticks=$(( $(cpu_ticks) - ticks_before ))
outage=$(tail -n +"$((lines_before + 1))" "$work/agent.log")
kill -0 "$agent" || fail "headroom exited while the shard was down"
closed=$(grep -c '"msg":"shard stream closed; reconnecting"' <<<"$outage" || true)
[ "$closed" = 1 ] || fail "the shard's outage was said $closed times, want once: $(grep shard <<<"$outage" | head -5)"
lines=$(wc -l <<<"$outage")
[ "$lines" -lt 30 ] || fail "$lines log lines in 20 s without the shard: $(head -20 <<<"$outage")"
hz=$(getconf CLK_TCK)
python3 -c "import sys; sys.exit(0 if $ticks / $hz / 20 < 0.10 else 1)" || fail "headroom used $ticks ticks of CPU in 20 s without the shard"
echo "[faults] bigfleet shard down 20 s: $lines log lines, $ticks CPU ticks"
rm -f "$work/shard/ready.json"
"$work/shard/peer" --state-dir "$work/shard" --grpc-addr "$grpc" 2>>"$work/shard/peer.log" &
shard=$!
for _ in $(seq 100); do [ -f "$work/shard/ready.json" ] && break; sleep 0.1; done
control=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["control"])' "$work/shard/ready.json")
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: after-outage, namespace: work}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: "1", memory: 1Gi}}}]
YAML
# The reconnect waits out the session's backoff (doubling from 0.5 s while the shard was away);
# the first roll-up on the new stream carries all three Pods' demand (3 + 2 + 1 CPU).
got=""
for _ in $(seq 450); do
  state=$(curl -sf "$control/state" || true)
  if [ -n "$state" ] && python3 - "$state" <<'PY'
import json, sys
needs = (json.loads(sys.argv[1]).get("lastRollup") or {}).get("needs") or []
sys.exit(0 if any(n.get("aggregateResources", {}).get("cpu") == "6" for n in needs) else 1)
PY
  then got=1; break; fi
  sleep 0.1
done
[ -n "$got" ] || { tail -n +"$((lines_before + 1))" "$work/agent.log" | grep -v '"level":"debug"' | cut -c1-250 | tail -15 >&2;
  fail "after the shard came back, its roll-up does not carry the new Pod's demand: $state"; }
grep -q '"msg":"shard stream open".*"attempts":[1-9]' "$work/agent.log" || fail "the reconnection after the outage was not said"

kill -TERM "$agent"
set +e; wait "$agent"; rc=$?; set -e
agent=""
[ "$rc" = 0 ] || fail "exit code $rc after SIGTERM"
# Anything the chart's RBAC refused (an Event, a status write) is a permission the chart forgot.
if grep -q "403 Forbidden" "$work/agent.log"; then fail "the API server refused headroom: $(grep -m1 '403 Forbidden' "$work/agent.log")"; fi
echo "bigfleet_agent: 1 passed, 0 failed"
