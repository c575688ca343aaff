#!/usr/bin/env bash
# A release as a user meets it (#39): scripts/release pushes the two-architecture image (amd64 and
# arm64, cross-built) and the chart to a real OCI registry (the CNCF distribution registry, built
# from its Go module, on loopback); both are pulled back by digest; each architecture's image is
# checked for what scanners read (status.d, the SBOM, OCI labels), the arm64 binary runs from its
# image's files alone under qemu-user-static (--version, check-config), the index is rebuilt to the
# same digest; the chart is installed from oci:// into the test cluster, pulling the image by digest.
#   release_test.sh SOURCE_DIR OUT_DIR
set -euo pipefail
src=$1 out=$2
work=$(mktemp -d)
registry_pid=""
cleanup() {
  [ -z "$registry_pid" ] || kill "$registry_pid" 2>/dev/null || true
  "$src/tests/testenv/cluster" down "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

registry_bin=$("$src/tests/testenv/build-registry.sh")
helm=$("$src/tests/testenv/build-helm.sh")
port=$("$src/tests/testenv/free-port")
cat >"$work/registry.yml" <<EOF
version: 0.1
log: {level: warn}
storage: {filesystem: {rootdirectory: $work/registry-data}, delete: {enabled: true}}
http: {addr: 127.0.0.1:$port}
EOF
"$registry_bin" serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 100); do
  curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null || { cat "$work/registry.log"; fail "the registry did not start"; }
reg="127.0.0.1:$port/headroom"

HEADROOM_HELM="$helm" "$src/scripts/release" --arch amd64,arm64 --registry "$reg" --plain-http "$out" >/dev/null ||
  fail "scripts/release"
read -r version image chart < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["version"], r["image"], r["chart"])' "$out/release.json")
echo "release_test: pushed $image and $chart"
[ -s "$out/release-notes-$version.md" ] || fail "no release notes"
grep -q "^# headroom $version" "$out/release-notes-$version.md" || fail "release notes without their title"

# The image index, pulled back by digest: its platforms; this architecture's image: its labels.
skopeo inspect --tls-verify=false --raw "docker://$image" >"$work/index.json" || fail "skopeo inspect --raw $image"
skopeo inspect --tls-verify=false "docker://$image" >"$work/inspect.json" || fail "skopeo inspect $image"
python3 - "$work/index.json" "$work/inspect.json" "$version" "$(git -C "$src" rev-parse HEAD)" "$(dpkg --print-architecture)" <<'PY' || fail "the pushed image's metadata"
import json, sys
index, i = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
version, revision, arch = sys.argv[3:6]
assert index["mediaType"] == "application/vnd.oci.image.index.v1+json", index
platforms = [m["platform"] for m in index["manifests"]]
assert sorted(p["architecture"] for p in platforms) == ["amd64", "arm64"], platforms
l = i["Labels"]
assert l["org.opencontainers.image.version"] == version, l
assert l["org.opencontainers.image.revision"] == revision, l
assert l["org.opencontainers.image.licenses"] == "Apache-2.0", l
assert l["org.opencontainers.image.source"].startswith("https://"), l
assert l["org.opencontainers.image.created"].endswith("Z"), l
assert i["Os"] == "linux" and i["Architecture"] in ("amd64", "arm64"), i
print("release_test: index of", [p["architecture"] for p in platforms], "; image", i["Digest"], i["Architecture"], "labels ok")
PY
skopeo inspect --tls-verify=false --override-arch arm64 "docker://$image" >"$work/inspect-arm64.json" ||
  fail "skopeo inspect --override-arch arm64 $image"
python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); assert i["Architecture"] == "arm64", i' "$work/inspect-arm64.json" ||
  fail "the index's arm64 image is not arm64"

for arch in amd64 arm64; do
skopeo --insecure-policy copy --quiet --src-tls-verify=false --override-arch "$arch" "docker://$image" "dir:$work/pulled-$arch" ||
  fail "skopeo copy $image ($arch)"

# The pulled layers as a scanner unpacks them, with GNU tar unmodified: each well-formed (ended
# by tar's two zero blocks, read whole by GNU tar and Python's tarfile alike, check-layer.sh), then
# extracted in order into one rootfs (also the arm64 run's below).
layers=$(python3 -c 'import json,sys; print(" ".join(l["digest"].split(":")[1] for l in json.load(open(sys.argv[1]))["layers"]))' \
  "$work/pulled-$arch/manifest.json")
for layer in $layers; do
  "$src/tests/image/check-layer.sh" "$work/pulled-$arch/$layer" "$work/rootfs-$arch" || fail "the $arch image's layer $layer"
done

# What scanners read there: a dpkg status stanza for each package the image's files came from
# (libcurl's, OpenSSL's), with the list of its files (md5sums) covering every file of the image
# but headroom's own, and the SPDX SBOM listing the same packages and versions.
python3 - "$work/rootfs-$arch" "$arch" <<'PY' || fail "the $arch image's package metadata and SBOM"
import hashlib, json, os, re, sys
root, arch = sys.argv[1], sys.argv[2]
status_d = os.path.join(root, "var/lib/dpkg/status.d")
stanzas = {n: open(os.path.join(status_d, n)).read() for n in sorted(os.listdir(status_d)) if not n.endswith(".md5sums")}
for pkg in ("libcurl4", "libssl3", "libc6", "ca-certificates"):
    assert pkg in stanzas, f"no status.d entry for {pkg}: {sorted(stanzas)}"
    assert os.path.isfile(os.path.join(root, f"usr/share/doc/{pkg}/copyright")), f"no copyright for {pkg}"
# Each file of the image is some package's (as its md5sums list it, with its md5), but headroom's own.
owned = {}
for pkg in stanzas:
    path = os.path.join(status_d, pkg + ".md5sums")
    assert os.path.isfile(path), f"{pkg} has no md5sums in status.d"
    for line in open(path):
        md5, rel = line.rstrip("\n").split("  ", 1)
        owned[rel] = (pkg, md5)
own = {"usr/local/bin/headroom", "etc/passwd", "etc/group", "etc/nsswitch.conf"}
for d, _, files in os.walk(root):
    for n in files:
        rel = os.path.relpath(os.path.join(d, n), root)
        if rel in own or rel.startswith(("usr/share/doc/", "var/lib/dpkg/")):
            continue
        assert rel in owned, f"/{rel} belongs to no package in status.d"
        full = os.path.join(root, rel)
        if not os.path.islink(full):
            assert hashlib.md5(open(full, "rb").read()).hexdigest() == owned[rel][1], f"/{rel}: md5 is not {owned[rel][0]}'s"
version = lambda s: re.search(r"^Version: (.+)$", s, re.M).group(1)
sbom = json.load(open(os.path.join(root, "usr/share/doc/headroom/sbom.spdx.json")))
assert sbom["spdxVersion"] == "SPDX-2.3", "no SPDX SBOM in the image"
listed = {p["name"]: p["versionInfo"] for p in sbom["packages"]}
assert "headroom" in listed
for pkg, text in stanzas.items():
    assert listed.get(pkg) == version(text), f"{pkg}: SBOM {listed.get(pkg)}, status.d {version(text)}"
    purl = next(p for p in sbom["packages"] if p["name"] == pkg)["externalRefs"][0]["referenceLocator"]
    assert purl.startswith(f"pkg:deb/debian/{pkg}@"), purl
    want = "all" if pkg == "ca-certificates" else arch
    assert f"arch={want}&" in purl, purl
    assert re.search(r"^Architecture: (.+)$", text, re.M).group(1) == want, (pkg, text)
assert len(listed) == len(stanzas) + 1, (sorted(listed), sorted(stanzas))
print(f"release_test: {arch}: {len(stanzas)} Debian packages in status.d and the SBOM, versions equal; "
      f"{len(owned)} files, each a package's")
PY
done

# The arm64 binary from its image's files alone (the loader and libraries the image holds, none of
# this machine's), under qemu-user-static: --version and check-config of the example.
arm64_version=$(qemu-aarch64-static -L "$work/rootfs-arm64" "$work/rootfs-arm64/usr/local/bin/headroom" --version) ||
  fail "the arm64 headroom does not run from its image"
[[ "$arm64_version" == "headroom $version "* ]] || fail "the arm64 headroom says '$arm64_version'"
qemu-aarch64-static -L "$work/rootfs-arm64" "$work/rootfs-arm64/usr/local/bin/headroom" check-config "$src/examples/headroom.yaml" \
  >/dev/null || fail "the arm64 headroom's check-config"
python3 -c 'import sys; h=open(sys.argv[1],"rb").read(20); sys.exit(h[:4]!=b"\x7fELF" or int.from_bytes(h[18:20],"little")!=183)' \
  "$work/rootfs-arm64/usr/local/bin/headroom" || fail "the arm64 image's headroom is not an aarch64 (EM_AARCH64) binary"
echo "release_test: arm64: $arm64_version (qemu, the image's own libraries); check-config ok"

# Reproducible: the image built again from the same commit has the same digest.
"$src/scripts/image" --arch amd64,arm64 "$work/again" >/dev/null || fail "scripts/image (again)"
again=$(python3 -c 'import json,sys; print(next(m["digest"] for m in json.load(open(sys.argv[1]))["manifests"] if m["mediaType"].endswith("index.v1+json")))' "$work/again/oci/index.json")
[ "$again" = "${image#*@}" ] || fail "two builds of one commit gave two digests: ${image#*@} and $again"
echo "release_test: rebuilt to the same digest $again"

# The chart, pulled back by digest, and installed from oci:// into the test cluster with the
# image by digest.
"$helm" show chart "$chart" --plain-http >"$work/chart.yaml" || fail "helm show chart $chart"
grep -q "^appVersion: \"\{0,1\}$version\"\{0,1\}$" "$work/chart.yaml" || fail "the pulled chart's appVersion is not $version"
"$src/tests/testenv/cluster" up "$work/cluster" --owner $$ >/dev/null 2>&1 || fail "cluster up"
export KUBECONFIG="$work/cluster/kubeconfig"
kubectl=$(sed -n 's/^HEADROOM_TESTENV_KUBECTL=//p' "$work/cluster/env")
"$kubectl" create namespace headroom-system >/dev/null
"$helm" install hr "oci://$reg/charts/headroom" --version "$version" --plain-http -n headroom-system \
  -f "$src/deploy/chart/headroom/ci/gates-values.yaml" \
  --set image.repository="${image%@*}" --set image.digest="${image#*@}" --wait=false >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "helm install from oci://"; }
deployed=$("$kubectl" -n headroom-system get deployment hr-headroom -o jsonpath='{.spec.template.spec.containers[0].image}')
[ "$deployed" = "$image" ] || fail "the Deployment runs $deployed, not $image"
chart_label=$("$kubectl" -n headroom-system get deployment hr-headroom -o jsonpath='{.metadata.labels.helm\.sh/chart}')
[ "$chart_label" = "headroom-$version" ] || fail "the installed chart is $chart_label"
echo "release_test: installed oci://$reg/charts/headroom $version; the Deployment pulls $deployed"
