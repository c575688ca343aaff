#!/usr/bin/env bash
# Builds the CNCF distribution registry (github.com/distribution/distribution/v3, the registry
# behind Docker Hub and most others) from its Go module, like the control plane, into a versioned
# cache outside the repository; rebuilt only when missing. Prints the binary's path. The release
# test (tests/image/release_test.sh) runs it on loopback to push and pull headroom's image and chart.
#   ${HEADROOM_TESTENV_CACHE:-~/.cache/headroom/testenv}/registry-<version>/registry
set -euo pipefail
REGISTRY_VERSION=${HEADROOM_REGISTRY_VERSION:-v3.0.0}
CACHE_ROOT=${HEADROOM_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom/testenv}
out="$CACHE_ROOT/registry-$REGISTRY_VERSION"
if [ -x "$out/registry" ]; then
  echo "$out/registry"
  exit 0
fi
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "[build-registry] go is not installed" >&2; exit 1; }
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.registry-$REGISTRY_VERSION.lock"
flock 9
if [ ! -x "$out/registry" ]; then
  echo "[build-registry] building the distribution registry $REGISTRY_VERSION (a few minutes on 2 cores)" >&2
  staging=$(mktemp -d "$CACHE_ROOT/.registry-build.XXXXXX")
  GOBIN="$staging" go install -trimpath -ldflags "-s -w" \
    "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION" >&2 || { rm -rf "$staging"; exit 1; }
  mkdir -p "$out"
  mv "$staging/registry" "$out/registry"
  rmdir "$staging"
fi
echo "$out/registry"
