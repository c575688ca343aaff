#!/usr/bin/env bash
# Two headroom processes on one cluster: exactly one leads and runs the acting actors; SIGTERM on
# the leader releases the Lease and the standby takes over at its next retry (not after the
# 15 s lease duration); both stop cleanly.
set -euo pipefail
bin=$1
src=$2
# shellcheck source=agent_test_lib.sh
. "$src/tests/integration/agent_test_lib.sh"
work=$(mktemp -d)
cleanup() {
  kill -9 ${pa:-} ${pb:-} 2>/dev/null || true
  "$src/tests/testenv/cluster" down "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/a.log "$work"/b.log; do echo "--- $f"; grep -vE '"level":"debug"' "$f" | tail -20; done
  exit 1
}
"$src/tests/testenv/cluster" up "$work/cluster" --owner $$ >/dev/null 2>&1 || fail "cluster up"
kc="$work/cluster/kubeconfig"

"$bin" --kubeconfig "$kc" --metrics-addr 127.0.0.1:0 2>"$work/a.log" &
pa=$!
"$bin" --kubeconfig "$kc" --metrics-addr 127.0.0.1:0 2>"$work/b.log" &
pb=$!
leads() { grep -q '"msg":"leading: started the acting actors"' "$1"; }
for _ in $(seq 150); do
  if leads "$work/a.log" || leads "$work/b.log"; then break; fi
  sleep 0.1
done
sleep 5  # the other candidate has had two retries to (wrongly) take over
if leads "$work/a.log" && leads "$work/b.log"; then fail "both lead"; fi
if leads "$work/a.log"; then leader=$pa; standby=$pb; slog=$work/b.log; llog=$work/a.log
elif leads "$work/b.log"; then leader=$pb; standby=$pa; slog=$work/a.log; llog=$work/b.log
else fail "nobody leads"; fi

start=$(date +%s%N)
kill -TERM "$leader"
set +e; wait "$leader"; rc=$?; set -e
[ "$rc" = 0 ] || fail "leader exit code $rc"
grep -q '"msg":"lease released"' "$llog" || fail "the leader did not release the Lease"
for _ in $(seq 100); do leads "$slog" && break; sleep 0.1; done
leads "$slog" || fail "the standby never took over"
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$took" -lt 8000 ] || fail "take-over took ${took} ms (a released Lease is taken at the next 2 s retry)"

kill -TERM "$standby"
set +e; wait "$standby"; rc=$?; set -e
[ "$rc" = 0 ] || fail "standby exit code $rc"
pa=""; pb=""
echo "take-over after release: ${took} ms"
echo "leader_agents: 1 passed, 0 failed"
