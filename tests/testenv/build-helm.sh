#!/usr/bin/env bash
# helm from its Go module (helm.sh/helm/v3), cached (go-tool.sh). Prints the binary's path.
#   build-helm.sh [--check]
set -euo pipefail
HELM_VERSION=${HEADROOM_HELM_VERSION:-v3.22.0}   # declares go 1.26.0, which Debian's Go 1.26.8 satisfies
check=()
[ "${1:-}" = --check ] && check=(--check)
exec "$(dirname "$0")/go-tool.sh" "${check[@]}" helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm \
  -ldflags "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
