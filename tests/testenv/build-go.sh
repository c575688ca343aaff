#!/usr/bin/env bash
# Builds every Go program the cluster tests use, so that none is first built inside a test:
#   1. the control plane (tests/testenv/build.sh; cached, prints its directory),
#   2. helm (tests/testenv/build-helm.sh; cached),
#   3. the test peers under tests/peers/ that tests start, and the Actions Service peer's conformance test (race
#      build): the tests build these themselves at each start, which takes seconds once Go's build
#      cache holds their packages and minutes on a machine that has never built them.
# Prints the control plane's directory on stdout (the only stdout line). scripts/test runs this in
# the background while it compiles headroom: Go downloads modules and links one binary at a time,
# which leaves a core to the C++ build. Exit status: that of the first step that failed, after
# trying them all.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers="$here/../peers"
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
status=0
step() {
  local what=$1
  shift
  local t0=$SECONDS
  if "$@"; then
    printf '[build-go] %s: %d s\n' "$what" $((SECONDS - t0)) >&2
  else
    local rc=$?
    printf '[build-go] %s: FAILED (exit %d)\n' "$what" "$rc" >&2
    [ "$status" != 0 ] || status=$rc
  fi
}

step "control plane" "$here/build.sh"
step helm "$here/build-helm.sh" >/dev/null
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for p in actions-service runner-sim kube-fault-proxy bigfleet-shard; do  # external-metrics: benchmarks only
  step "peer $p" "$peers/$p/build.sh" "$scratch/$p" >&2
done
conformance() { (cd "$peers/actions-service" && go test -race -count=1 -run '^$' ./... >/dev/null); }
step "conformance test (compile only)" conformance
exit $status
