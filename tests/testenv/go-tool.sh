#!/usr/bin/env bash
# Builds one Go command from its module (`go install PACKAGE@VERSION`), as the control plane is
# built, into a versioned cache outside the repository; rebuilt only when missing. One build at a
# time per tool: a second caller waits for the first and then finds the binary. Prints its path.
#   go-tool.sh [--check] NAME VERSION PACKAGE [go install flags...]
#     → ${HEADROOM_TESTENV_CACHE:-~/.cache/headroom/testenv}/NAME-VERSION/NAME
#   --check: exit 3 (and build nothing) when it is not built yet.
set -euo pipefail
check=false
if [ "${1:-}" = --check ]; then check=true; shift; fi
name=$1 version=$2 package=$3
shift 3
CACHE_ROOT=${HEADROOM_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom/testenv}
out="$CACHE_ROOT/$name-$version"
if [ -x "$out/$name" ]; then
  echo "$out/$name"
  exit 0
fi
if $check; then
  echo "$name $version not built (run tests/testenv/build-$name.sh)" >&2
  exit 3
fi
export PATH="$PATH:/usr/local/go/bin" GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "[go-tool] go is not installed (scripts/install-deps)" >&2; exit 1; }
mkdir -p "$CACHE_ROOT"
exec 9>"$CACHE_ROOT/.$name-$version.lock"
flock 9
if [ ! -x "$out/$name" ]; then
  echo "[go-tool] building $name $version from $package (a few minutes on 2 cores)" >&2
  # Installed beside the cache and renamed into place, so $out/$name is never half-written.
  staging=$(mktemp -d "$CACHE_ROOT/.$name-build.XXXXXX")
  GOBIN="$staging" go install "$@" "$package@$version" >&2 || { rm -rf "$staging"; exit 1; }
  mkdir -p "$out"
  mv "$staging/$(basename "$package")" "$out/$name"
  rm -rf "$staging"
fi
echo "$out/$name"
