#!/usr/bin/env bash
# The CNCF distribution registry (github.com/distribution/distribution/v3, the registry behind
# Docker Hub and most others) from its Go module, cached (go-tool.sh). Prints the binary's path. The
# release test (tests/image/release_test.sh) runs it on loopback to push and pull headroom's image
# and chart.
set -euo pipefail
REGISTRY_VERSION=${HEADROOM_REGISTRY_VERSION:-v3.0.0}
exec "$(dirname "$0")/go-tool.sh" registry "$REGISTRY_VERSION" github.com/distribution/distribution/v3/cmd/registry \
  -trimpath -ldflags "-s -w"
