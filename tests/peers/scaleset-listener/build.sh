#!/usr/bin/env bash
# Builds the one-scale-set listener (ARC's deployment shape, on github.com/actions/scaleset):
#   tests/peers/scaleset-listener/build.sh OUTPUT_BINARY
set -euo pipefail
out=$(realpath -m "$1")
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "go is not installed (the test peers and control plane need it)" >&2; exit 1; }
exec go build -o "$out" .
