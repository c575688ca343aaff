#!/usr/bin/env bash
# CTest `actions_peer_conformance`: the real github.com/actions/scaleset client and listener, and
# github.com/google/go-github (REST calls and webhook signature/parsing of the scheduler path),
# both (fetched from the Go module proxy at the version go.mod pins) against our Actions Service peer.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "go is not installed (tests/testenv/build.sh needs it too)" >&2; exit 1; }
exec go test -race -count=1 -v ./... 2>&1
