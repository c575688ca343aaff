#!/usr/bin/env bash
# Builds, ahead of the tests that need them, the Go programs the cluster tests build for
# themselves: helm (tests/testenv/build-helm.sh, cached; the chart tests), the OCI registry
# (build-registry.sh, cached; the release test), the real node's programs (build-node.sh, cached;
# the chart start test: 114 s cold) and the test peers under
# tests/peers/ with the Actions Service peer's conformance test (its race build). Each test still
# builds its peer at start (the build is then a cache hit and a link: seconds); on a machine whose
# Go build cache has never seen them that first build takes minutes (runner-sim 102 s, helm 210 s,
# the race build 48 s, measured cold on 2 cores beside another build).
#
# scripts/test runs this at the lowest CPU priority in the background while the cluster tests run,
# so those minutes leave the critical path. Safe beside a test that builds the same program: Go's
# build cache takes concurrent builds, and build-helm.sh waits for a helm build in progress.
# (The BigFleet shard peer is left out: its build regenerates Go code in the source tree, which a
# concurrent test's build would read half-written; it takes 28 s cold.)
# Exit status: non-zero if any step failed, after trying them all; every step says how long it took.
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
    printf '[warm-go] %s: %d s\n' "$what" $((SECONDS - t0)) >&2
  else
    printf '[warm-go] %s: FAILED (exit %d)\n' "$what" $? >&2
    status=1
  fi
}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# In the order the integration pass first needs them.
step "peer kube-fault-proxy" "$peers/kube-fault-proxy/build.sh" "$scratch/kube-fault-proxy"
conformance() { (cd "$peers/actions-service" && go test -race -count=1 -run '^$' ./... >/dev/null); }
step "conformance test (race build, no test run)" conformance
step "peer actions-service" "$peers/actions-service/build.sh" "$scratch/actions-service"
step "peer runner-sim" "$peers/runner-sim/build.sh" "$scratch/runner-sim"
step helm "$here/build-helm.sh" >/dev/null
step registry "$here/build-registry.sh" >/dev/null
step "real node (kubelet, kube-proxy, containerd)" "$here/build-node.sh" >/dev/null
exit $status
