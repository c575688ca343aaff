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
