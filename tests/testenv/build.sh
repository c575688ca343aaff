#!/usr/bin/env bash
# Builds the real control plane headroom's integration tests run against, from Go modules only:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok and Karpenter's
# kwok provider.
#
# Binaries land in a versioned cache outside the repository and are rebuilt only when missing:
#   ${HEADROOM_TESTENV_CACHE:-~/.cache/headroom/testenv}/<k8s-version>/bin
# The support files the cluster needs (kwok stage YAMLs, Karpenter CRDs) are copied beside them
# from the module cache, so `start-cluster` never reads the module cache itself.
#
# Versions: Kubernetes 1.36.3 declares `go 1.26.0`; Karpenter v1.14.1 is the newest release whose
# `go` line (1.26.6) the Debian machines' Go 1.26.8 satisfies with GOTOOLCHAIN=local.
set -euo pipefail

K8S_VERSION=${HEADROOM_K8S_VERSION:-v1.36.3}
KWOK_VERSION=${HEADROOM_KWOK_VERSION:-v0.8.0}
KARPENTER_VERSION=${HEADROOM_KARPENTER_VERSION:-v1.14.1}
CACHE_ROOT=${HEADROOM_TESTENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/headroom/testenv}
OUT="$CACHE_ROOT/$K8S_VERSION"
BIN="$OUT/bin"
SHARE="$OUT/share"

export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export PATH="$PATH:/usr/local/go/bin"

log() { printf '[testenv-build] %s\n' "$*" >&2; }

# The cache is valid for these versions built this way. Bump RECIPE when a change to this script
# changes what ends up in the cache (flags, binaries, support files).
RECIPE=2
recipe="k8s=$K8S_VERSION kwok=$KWOK_VERSION karpenter=$KARPENTER_VERSION recipe=$RECIPE"
if [ -f "$OUT/.recipe" ] && [ "$(cat "$OUT/.recipe")" != "$recipe" ]; then
  log "build recipe changed: discarding $OUT"
  rm -rf "$OUT"
fi

need=()
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok karpenter-kwok; do
  [ -x "$BIN/$b" ] || need+=("$b")
done
[ -d "$SHARE/kwok-stages" ] && [ -d "$SHARE/karpenter-crds" ] || need+=(share)
[ -f "$OUT/.recipe" ] || need+=(stamp)
if [ ${#need[@]} -eq 0 ]; then
  echo "$OUT"
  exit 0
fi
# --check: say whether the cache is complete, never build (exit 3 when something is missing).
if [ "${1:-}" = --check ]; then
  log "not built: ${need[*]} (run tests/testenv/build.sh)"
  exit 3
fi
command -v go >/dev/null || { log "go is not installed: the test control plane needs Go 1.26.6 or newer"; exit 1; }
# Karpenter v1.14.1 declares go 1.26.6. An older local Go (1.21+) fetches that toolchain itself
# through the module proxy when asked to by GOTOOLCHAIN.
go_minor_patch=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\)\.\{0,1\}\([0-9]*\).*/\1 \2/p')
read -r go_minor go_patch <<<"$go_minor_patch"
if [ "${go_minor:-0}" -lt 26 ] || { [ "$go_minor" -eq 26 ] && [ "${go_patch:-0}" -lt 6 ]; }; then
  log "local $(go env GOVERSION) is older than go1.26.6: using GOTOOLCHAIN=go1.26.8"
  export GOTOOLCHAIN=go1.26.8
fi
log "building ${need[*]} into $OUT (cold build: tens of minutes on 2 cores)"
mkdir -p "$BIN" "$SHARE"
start=$(date +%s)

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
staging_version="v0.${K8S_VERSION#v1.}"
modjson=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION")
gomod=$(printf '%s' "$modjson" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
[ -f "$gomod" ] || { log "could not locate go.mod of k8s.io/kubernetes@$K8S_VERSION"; exit 1; }

# The staging modules are exactly the `k8s.io/X => ./staging/src/k8s.io/X` replaces of the release.
mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#\1#p' "$gomod")
[ ${#staging[@]} -gt 10 ] || { log "found only ${#staging[@]} staging modules in $gomod"; exit 1; }
etcd_version=$(sed -n 's#^[[:space:]]*go.etcd.io/etcd/server/v3 \(v[0-9.]*\).*#\1#p' "$gomod")
[ -n "$etcd_version" ] || { log "k8s.io/kubernetes@$K8S_VERSION pins no etcd server version"; exit 1; }

wrap="$OUT/src/kube"
rm -rf "$wrap"; mkdir -p "$wrap"
{
  echo "module headroom.test/testenv"
  echo
  echo "go 1.26.0"
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo "require go.etcd.io/etcd/server/v3 $etcd_version"
  echo
  for m in "${staging[@]}"; do echo "replace $m => $m $staging_version"; done
} >"$wrap/go.mod"

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
done

# kwok and Karpenter's provider (modules of their own) build beside Kubernetes: three builds keep
# both cores busy through each other's links, where one build at a time left a core idle in each.
side_builds=()
trap 'for pid in "${side_builds[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT  # a failed build leaves none running
# side_install NAME PACKAGE@VERSION: `go install` it beside the rest, as $BIN/NAME.
side_install() {
  local name=$1 pkg=$2 gobin="$OUT/gobin-$1"
  [ ! -x "$BIN/$name" ] || return 0
  (
    log "go install $pkg ($name)"
    GOBIN="$gobin" go install -trimpath -ldflags "-s -w" "$pkg"
    mv "$gobin/kwok" "$BIN/$name"; rmdir "$gobin"  # both commands are named kwok
    log "$name built"
  ) &
  side_builds+=($!)
}
side_install kwok "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
side_install karpenter-kwok "sigs.k8s.io/karpenter/kwok@$KARPENTER_VERSION"

(
  cd "$wrap"
  # kubectl drives the proof tests and shows what a cluster holds when a test fails.
  pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
        k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl go.etcd.io/etcd/server/v3)
  log "resolving the wrapper module (k8s $K8S_VERSION, etcd $etcd_version, ${#staging[@]} staging modules)"
  # Explicit versions: a bare `go get` would upgrade etcd (and with it grpc, otel, …) to latest.
  go get "${pkgs[0]}@$K8S_VERSION" "${pkgs[1]}@$K8S_VERSION" "${pkgs[2]}@$K8S_VERSION" "${pkgs[3]}@$K8S_VERSION" \
    "go.etcd.io/etcd/server/v3@$etcd_version" >&2
  # Every module the release pins must be selected at exactly that version, so the binaries are
  # built on upstream's dependency graph, not a drifted one.
  go list -m -f '{{.Path}} {{.Version}}' all >"$OUT/selected.txt"
  drift=$(awk 'NR==FNR { sel[$1]=$2; next }
               /^require \(/ { inreq=1; next } inreq && /^\)/ { inreq=0 }
               inreq && NF>=2 && $1 !~ /^k8s\.io\// && ($1 in sel) && sel[$1] != $2 { print $1, "pinned", $2, "selected", sel[$1] }' \
          "$OUT/selected.txt" "$gomod")
  if [ -n "$drift" ]; then
    log "dependency drift from k8s.io/kubernetes@$K8S_VERSION's go.mod:"; printf '%s\n' "$drift" >&2; exit 1
  fi
  todo=() names=()
  for p in "${pkgs[@]}"; do
    name=${p##*/}; [ "$name" = v3 ] && name=etcd
    [ -x "$BIN/$name" ] || { todo+=("$p"); names+=("$name"); }
  done
  if [ ${#todo[@]} -gt 0 ]; then
    # One go build for all of them: each link overlaps the others' compiling.
    log "go build ${names[*]}"
    out=$(mktemp -d "$OUT/build.XXXXXX")
    go build -trimpath -ldflags "$ldflags" -o "$out/" "${todo[@]}"
    [ ! -f "$out/server" ] || mv "$out/server" "$out/etcd"  # go names …/etcd/server/v3's binary "server"
    mv "$out"/* "$BIN/"
    rmdir "$out"
  fi
)

for pid in "${side_builds[@]}"; do
  wait "$pid" || { log "building kwok or Karpenter's provider failed (above)"; exit 1; }
done

moddir() { go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p'; }
kwok_dir=$(moddir "sigs.k8s.io/kwok@$KWOK_VERSION")
karp_dir=$(moddir "sigs.k8s.io/karpenter@$KARPENTER_VERSION")
rm -rf "$SHARE/kwok-stages" "$SHARE/karpenter-crds"
mkdir -p "$SHARE/kwok-stages" "$SHARE/karpenter-crds"
# The stages kwokctl uses by default: nodes initialize at once and renew their lease; pods go
# Running at once, complete when their containers would, and are removed when deleted (which
# also removes preemption victims).
stage="$kwok_dir/kustomize/stage"
cp "$stage/node/fast/node-initialize.yaml" "$stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml" \
   "$stage/pod/fast/pod-ready.yaml" "$stage/pod/fast/pod-complete.yaml" "$stage/pod/fast/pod-delete.yaml" \
   "$SHARE/kwok-stages/"
cp "$karp_dir"/pkg/apis/crds/*.yaml "$karp_dir"/kwok/apis/crds/*.yaml "$SHARE/karpenter-crds/"
chmod -R u+w "$SHARE"

"$BIN/kube-apiserver" --version >&2
"$BIN/etcd" --version | sed -n 1p >&2  # not head: etcd may still be writing when head exits (SIGPIPE, 141)
echo "$recipe" >"$OUT/.recipe"
log "done in $(( $(date +%s) - start )) s"
echo "$OUT"
