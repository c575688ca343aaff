#!/usr/bin/env bash
# Builds the runner simulator: tests/peers/runner-sim/build.sh OUTPUT_BINARY
set -euo pipefail
out=$(realpath -m "$1")
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "go is not installed (the test peers and control plane need it)" >&2; exit 1; }
# Static (no cgo): the same binary runs on this machine and as the runner in the real node's
# runner image (tests/testenv/node push-runner), which has no C library.
export CGO_ENABLED=0
exec go build -o "$out" .
