#!/usr/bin/env bash
# The OCI image as a user gets it (scripts/image): its headroom runs from the unpacked rootfs alone,
# as the image's non-root user, so a library missing from the image fails here. Then one
# integration scenario (gate-controlled scheduling on the real control plane: TLS, informers,
# writes) runs with the image's binary instead of the build tree's.
#   image_test.sh SOURCE_DIR GATES_TEST_BINARY OUT_DIR
set -euo pipefail
src=$1 gates_test=$2 out=$3
"$src/scripts/image" "$out" >/dev/null
rootfs="$out/rootfs"
[ -f "$out/oci/index.json" ] || { echo "image_test: no OCI layout in $out/oci" >&2; exit 1; }
ls "$out"/headroom-*.docker.tar >/dev/null || { echo "image_test: no docker-archive" >&2; exit 1; }
# Nothing of the host: the rootfs has no shell, no package libraries beyond what ldd named.
[ ! -e "$rootfs/bin/sh" ] || { echo "image_test: the image has a shell" >&2; exit 1; }
# The image's layers as a runtime or scanner unpacks them, with GNU tar unmodified: each
# well-formed (check-layer.sh), and together exactly the rootfs: every path with its type, mode,
# owner, time, symlink target and contents.
layers=$(mktemp -d)
trap 'rm -rf "$layers"' EXIT
python3 - "$out/oci" "$(dpkg --print-architecture)" >"$layers/blobs" <<'PY'
import json, os, sys
layout, arch = sys.argv[1], sys.argv[2]
index = json.load(open(os.path.join(layout, "index.json")))
blob = lambda d: os.path.join(layout, "blobs", *d["digest"].split(":"))
ref = "org.opencontainers.image.ref.name"
image = next(m for m in index["manifests"] if m["annotations"][ref].endswith("-" + arch))
for layer in json.load(open(blob(image)))["layers"]:
    print(blob(layer))
PY
while read -r blob; do
  "$src/tests/image/check-layer.sh" "$blob" "$layers/rootfs" || { echo "image_test: the layer $blob" >&2; exit 1; }
done <"$layers/blobs"
python3 - "$rootfs" "$layers/rootfs" <<'PY' || { echo "image_test: the layers are not the rootfs" >&2; exit 1; }
import hashlib, os, stat, sys
def tree(root):
    files = {}
    for d, dirs, names in os.walk(root):
        for n in dirs + names:
            path = os.path.join(d, n)
            st = os.lstat(path)
            what = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, int(st.st_mtime))
            if stat.S_ISLNK(st.st_mode):
                what += (os.readlink(path),)
            elif stat.S_ISREG(st.st_mode):
                what += (hashlib.sha256(open(path, "rb").read()).hexdigest(),)
            files[os.path.relpath(path, root)] = what
    st = os.lstat(root)
    files["."] = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    return files
a, b = tree(sys.argv[1]), tree(sys.argv[2])
for p in sorted(set(a) | set(b)):
    assert a.get(p) == b.get(p), f"/{p}: rootfs {a.get(p)}, layers {b.get(p)}"
print(f"image_test: the layers unpack to the rootfs, {len(a)} paths")
PY
version=$(chroot --userspec=65532:65532 "$rootfs" /usr/local/bin/headroom --version)
echo "image_test: $version from the image as uid 65532"
cp "$src/examples/headroom.yaml" "$rootfs/tmp/example.yaml"
chroot --userspec=65532:65532 "$rootfs" /usr/local/bin/headroom check-config /tmp/example.yaml
rm -f "$rootfs/tmp/example.yaml"
# The image's config: the entrypoint and the user.
python3 - "$out/oci" "$(dpkg --print-architecture)" <<'PY'
import json, os, sys
layout, arch = sys.argv[1], sys.argv[2]
index = json.load(open(os.path.join(layout, "index.json")))
blob = lambda d: os.path.join(layout, "blobs", *d["digest"].split(":"))
ref = "org.opencontainers.image.ref.name"
image = next(m for m in index["manifests"] if m["annotations"][ref].endswith("-" + arch))
manifest = json.load(open(blob(image)))
config = json.load(open(blob(manifest["config"])))["config"]
assert config["Entrypoint"] == ["/usr/local/bin/headroom"], config
assert config["User"] == "65532:65532", config
print("image_test: entrypoint", config["Entrypoint"], "user", config["User"])
PY
HEADROOM_TEST_BINARY="$src/tests/image/run-in-image.sh" HEADROOM_TEST_BINARY_ARG="$rootfs" \
  "$gates_test" --gtest_filter='gates.queue_admits_in_order_and_the_next_after_a_finish' --gtest_color=no
