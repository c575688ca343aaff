#!/usr/bin/env bash
# Builds the one-scale-set listener (ARC's deployment shape, on github.com/actions/scaleset), and
# with a second output ARC's listener with its EphemeralRunnerSet scaler (arc/):
#   tests/peers/scaleset-listener/build.sh OUTPUT_BINARY [ARC_LISTENER_BINARY]
set -euo pipefail
out=$(realpath -m "$1") arc_out=${2:+$(realpath -m "$2")}
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "go is not installed (the test peers and control plane need it)" >&2; exit 1; }
go build -o "$out" .
if [ -n "$arc_out" ]; then
  go build -o "$arc_out" ./arc
fi
