#!/usr/bin/env bash
# Builds what a real node of the test cluster runs (#56), from Go modules and Debian packages only:
# the kubelet and kube-proxy of the control plane's Kubernetes release (from the wrapper module
# tests/testenv/build.sh resolved, so on the same dependency graph), containerd and its runc shim
# (containerd v2: Kubernetes 1.36 is tested against containerd 2.2 and 2.3, and Debian's 1.6 is
# past its support), and from Debian runc and the CNI plugins. And the node's two images
# (node-images.py): pause, compiled static from the kubelet's own module (build/pause/linux/pause.c),
# and busybox from Debian's busybox-static; skopeo pushes them to the node's registry.
#
# Binaries land beside the control plane's, rebuilt only when missing:
#   ${HEADROOM_TESTENV_CACHE:-~/.cache/headroom/testenv}/<k8s-version>/node/bin
# Prints that directory. Needs the control plane built first (tests/testenv/build.sh).
#
# containerd is built without cgo (CGO_ENABLED=0): that leaves out only the btrfs snapshotter;
# overlayfs, which the node uses, is pure Go.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

CONTAINERD_VERSION=${HEADROOM_CONTAINERD_VERSION:-v2.4.2}
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
export PATH="$PATH:/usr/local/go/bin"

log() { printf '[testenv-node] %s\n' "$*" >&2; }

out=$("$here/build.sh")  # the control plane, and the wrapper module the kubelet builds in
NODE="$out/node"
BIN="$NODE/bin"
recipe="containerd=$CONTAINERD_VERSION recipe=1"
if [ -f "$NODE/.recipe" ] && [ "$(cat "$NODE/.recipe")" != "$recipe" ]; then
  log "build recipe changed: discarding $NODE"
  rm -rf "$NODE"
fi

missing_pkgs=()
[ -x /usr/sbin/runc ] || missing_pkgs+=(runc)
[ -x /usr/lib/cni/bridge ] || missing_pkgs+=(containernetworking-plugins)
[ -x /usr/bin/skopeo ] || missing_pkgs+=(skopeo)
[ -x /usr/sbin/iptables ] || missing_pkgs+=(iptables)
dpkg -s busybox-static >/dev/null 2>&1 || missing_pkgs+=(busybox-static)
# need: what is not built yet (empty: done).
missing() {
  need=()
  for b in kubelet kube-proxy containerd containerd-shim-runc-v2; do
    [ -x "$BIN/$b" ] || need+=("$b")
  done
  [ -f "$NODE/images/index.json" ] || need+=(images)
  [ -f "$NODE/.recipe" ] || need+=(recipe)
}
missing
if [ ${#need[@]} -eq 0 ] && [ ${#missing_pkgs[@]} -eq 0 ]; then
  echo "$NODE"
  exit 0
fi
if [ "${1:-}" = --check ]; then
  log "not built: ${need[*]} ${missing_pkgs[*]} (run tests/testenv/build-node.sh)"
  exit 3
fi
# One build at a time (scripts/test warms this in the background while a test may ask for it):
# the second waits for the first and finds its work done.
exec 9>"$out/.node.lock"
flock 9
missing
if [ ${#need[@]} -eq 0 ] && [ ${#missing_pkgs[@]} -eq 0 ]; then
  echo "$NODE"
  exit 0
fi
if [ ${#missing_pkgs[@]} -gt 0 ]; then
  log "installing ${missing_pkgs[*]} (Debian)"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_=sudo
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -q --no-install-recommends "${missing_pkgs[@]}" >/dev/null
fi
mkdir -p "$BIN"
start=$(date +%s)

side=()
trap 'for pid in "${side[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT
if [ ! -x "$BIN/containerd" ] || [ ! -x "$BIN/containerd-shim-runc-v2" ]; then
  (
    log "go install containerd $CONTAINERD_VERSION"
    GOBIN="$BIN" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
      "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
    log "containerd built"
  ) &
  side+=($!)
fi

todo=()
for b in kubelet kube-proxy; do [ -x "$BIN/$b" ] || todo+=("k8s.io/kubernetes/cmd/$b"); done
if [ ${#todo[@]} -gt 0 ]; then
  k8s_version=$(basename "$out")
  minor=${k8s_version#v1.}; minor=${minor%%.*}
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  # A copy of the control plane's wrapper module (its replaces of the staging modules), with the
  # kubelet's and kube-proxy's packages added at the same release.
  wrap="$NODE/src/kube"
  rm -rf "$wrap"; mkdir -p "$wrap"
  cp "$out/src/kube/go.mod" "$out/src/kube/go.sum" "$wrap/"
  log "go build ${todo[*]##*/}"
  tmp=$(mktemp -d "$NODE/build.XXXXXX")
  (
    cd "$wrap"
    go get "k8s.io/kubernetes/cmd/kubelet@$k8s_version" "k8s.io/kubernetes/cmd/kube-proxy@$k8s_version" >&2
    go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${todo[@]}"
  )
  mv "$tmp"/* "$BIN/"
  rmdir "$tmp"
fi
if [ ! -f "$NODE/images/index.json" ]; then
  kube_src=$(cd "$NODE/src/kube" 2>/dev/null && go list -m -f "{{.Dir}}" k8s.io/kubernetes) && [ -n "$kube_src" ] ||
    { log "the kubelet's module is not in the module cache (remove $BIN/kubelet and run again)"; exit 1; }
  tmp=$(mktemp -d "$NODE/images.XXXXXX")
  gcc -O2 -static -DVERSION=3.10 -o "$tmp/pause" "$kube_src/build/pause/linux/pause.c"
  python3 "$here/node-images.py" "$tmp/pause" /bin/busybox "$tmp/oci"
  rm -rf "$NODE/images"
  mv "$tmp/oci" "$NODE/images"
  rm -rf "$tmp"
  log "images pause:3.10 and busybox:1.36 built"
fi
for pid in "${side[@]}"; do
  wait "$pid" || { log "building containerd failed (above)"; exit 1; }
done
side=()

"$BIN/kubelet" --version >&2
"$BIN/containerd" --version >&2
/usr/sbin/runc --version | sed -n 1p >&2
echo "$recipe" >"$NODE/.recipe"
log "done in $(( $(date +%s) - start )) s"
echo "$NODE"
