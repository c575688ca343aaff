#!/usr/bin/env bash
# Builds the API-server fault proxy (the chaos suite's apiserver faults):
#   tests/peers/kube-fault-proxy/build.sh OUTPUT_BINARY
set -euo pipefail
out=$(realpath -m "$1")
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "go is not installed (the test peers and control plane need it)" >&2; exit 1; }
exec go build -o "$out" .
