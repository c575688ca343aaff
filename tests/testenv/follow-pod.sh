#!/usr/bin/env bash
# A chart's headroom pod on the test cluster's real node, followed as a test follows the headroom
# process it starts (tests/e2e/capacity_world.hpp, `agent`): the container's log streamed to
# stdout from its start; on SIGTERM the Deployment is scaled to 0, so the kubelet stops the
# container as a rollout or a drain does, and this exits with the container's exit code once its
# log has ended (3 when it never ran, or its end went unseen).
#   follow-pod.sh KUBECTL KUBECONFIG NAMESPACE LABEL_SELECTOR
set -uo pipefail
kubectl=$1 kc=$2 ns=$3 sel=$4
k() { "$kubectl" --kubeconfig "$kc" -n "$ns" "$@"; }
say() { echo "follow-pod: $*" >&2; }

stopping=false
trap 'stopping=true' TERM
pod=""
for _ in $(seq 1 600); do  # up to 120 s: scheduled, image pulled, started
  $stopping && { say "stopped before the pod ran"; exit 3; }
  pod=$(k get pods -l "$sel" -o jsonpath='{range .items[?(@.status.containerStatuses[0].state.running)]}{.metadata.name}{"\n"}{end}' 2>/dev/null | head -1)
  [ -n "$pod" ] && break
  sleep 0.2
done
[ -n "$pod" ] || { say "no pod of $sel ran within 120 s"; k get pods -l "$sel" -o wide >&2; exit 3; }
say "following $ns/$pod"
k logs -f "$pod" &
logs=$!
until $stopping || ! kill -0 "$logs" 2>/dev/null; do sleep 0.2; done
if ! $stopping; then
  wait "$logs"
  say "the log of $pod ended before SIGTERM"
  exit 3
fi
# A watch sees the status the kubelet writes between the container's exit and the pod's removal.
seen=$(mktemp)
trap 'rm -f "$seen"' EXIT
k get pod "$pod" -w -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}{"\n"}' >"$seen" 2>/dev/null &
watcher=$!
sleep 0.5
k scale deploy -l "$sel" --replicas 0 >/dev/null
wait "$logs"  # the log ends with the container
for _ in $(seq 1 50); do  # and the watch has its status
  [ -n "$(grep -v '^$' "$seen" | tail -1)" ] && break
  sleep 0.1
done
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
code=$(grep -v '^$' "$seen" | tail -1)
say "$pod ended with exit code ${code:-unseen}"
exit "${code:-3}"
