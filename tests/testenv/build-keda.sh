#!/usr/bin/env bash
# KEDA's operator and metrics server (github.com/kedacore/keda/v2, what a reactive-mode user would
# pick instead of headroom) from their Go module, for the side-by-side benchmark, cached like the
# control plane. KEDA's go.mod pins its Kubernetes libraries with replace directives, which
# `go install module@version` refuses; so a throw-away wrapper module requires KEDA and copies that
# replace block from KEDA's own go.mod, then builds both commands. Prints the directory holding
# `keda-operator`, `keda-adapter` and `module` (a link to KEDA's module source: CRDs).
set -euo pipefail
KEDA_VERSION=${HEADROOM_KEDA_VERSION:-v2.21.0}
CACHE_ROOT=${HEADROOM_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom/testenv}
out="$CACHE_ROOT/keda-$KEDA_VERSION"
if [ -x "$out/keda-operator" ] && [ -x "$out/keda-adapter" ] && [ -d "$out/module/config/crd" ]; then
  echo "$out"
  exit 0
fi
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "[keda] go is not installed (scripts/install-deps)" >&2; exit 1; }
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.keda-$KEDA_VERSION.lock"
flock 9
if [ ! -x "$out/keda-operator" ] || [ ! -x "$out/keda-adapter" ] || [ ! -d "$out/module/config/crd" ]; then
  echo "[keda] building KEDA $KEDA_VERSION's operator and metrics server (about 5 minutes on 2 cores)" >&2
  work=$(mktemp -d "$CACHE_ROOT/.keda-build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  src=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "[keda] the module proxy did not serve github.com/kedacore/keda/v2@$KEDA_VERSION" >&2; exit 1; }
  goversion=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$src/go.mod")
  {
    echo "module headroom.test/keda-build"
    echo
    echo "go $goversion"
    echo
    echo "require github.com/kedacore/keda/v2 $KEDA_VERSION"
    echo
    sed -n '/^replace (/,/^)/p' "$src/go.mod"
  } > "$work/go.mod"
  cat > "$work/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/adapter"
	_ "github.com/kedacore/keda/v2/cmd/operator"
)
GO
  (cd "$work" && go mod tidy -e >&2 &&
    go build -trimpath -ldflags "-s -w" -o "$work/keda-operator" github.com/kedacore/keda/v2/cmd/operator >&2 &&
    go build -trimpath -ldflags "-s -w" -o "$work/keda-adapter" github.com/kedacore/keda/v2/cmd/adapter >&2)
  mkdir -p "$out"
  mv "$work/keda-operator" "$work/keda-adapter" "$out/"
  ln -sfn "$src" "$out/module"
fi
echo "$out"
