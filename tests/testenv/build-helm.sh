#!/usr/bin/env bash
# Builds helm from its Go module (helm.sh/helm/v3), like the control plane, into a versioned cache
# outside the repository; rebuilt only when missing. Prints the binary's path.
#   ${HEADROOM_TESTENV_CACHE:-~/.cache/headroom/testenv}/helm-<version>/helm
set -euo pipefail
HELM_VERSION=${HEADROOM_HELM_VERSION:-v3.22.0}   # declares go 1.26.0, which Debian's Go 1.26.8 satisfies
CACHE_ROOT=${HEADROOM_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom/testenv}
out="$CACHE_ROOT/helm-$HELM_VERSION"
if [ -x "$out/helm" ]; then
  echo "$out/helm"
  exit 0
fi
if [ "${1:-}" = --check ]; then
  echo "helm $HELM_VERSION not built (run tests/testenv/build-helm.sh)" >&2
  exit 3
fi
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "[build-helm] go is not installed" >&2; exit 1; }
# One build at a time: a second caller (scripts/test builds helm in the background while the chart
# test may ask for it) waits for the first and then finds the binary.
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.helm-$HELM_VERSION.lock"
flock 9
if [ ! -x "$out/helm" ]; then
  echo "[build-helm] building helm $HELM_VERSION (a few minutes on 2 cores)" >&2
  # Installed beside the cache and renamed into place, so $out/helm is never half-written.
  staging=$(mktemp -d "$CACHE_ROOT/.helm-build.XXXXXX")
  GOBIN="$staging" go install -ldflags "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2 || { rm -rf "$staging"; exit 1; }
  mkdir -p "$out"
  mv "$staging/helm" "$out/helm"
  rmdir "$staging"
fi
echo "$out/helm"
