#!/usr/bin/env python3
"""Builds the images the test cluster's real node runs (#56) as one OCI layout, from what this
machine has: no registry outside and no container engine.

  node-images.py PAUSE_BINARY BUSYBOX_BINARY OUT_DIR

  pause:3.10     the sandbox ("pause") image: Kubernetes' own pause.c (build/pause/linux, in the
                 k8s.io/kubernetes module the kubelet is built from), compiled static, as
                 registry.k8s.io/pause is; user 65535
  busybox:1.36   Debian's busybox-static with a link for each applet, as docker.io/busybox is
                 (placeholders and the test pods run it)

Each image is one gzip layer, file times 0, so the digests depend only on the two binaries.
"""
import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile


def blob(out, data, media):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(out, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return {"mediaType": media, "digest": "sha256:" + digest, "size": len(data)}


def layer(files):
    """files: [(name, mode, bytes or None for a directory, link target or None)]"""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, mode, data, link in files:
            info = tarfile.TarInfo(name)
            info.mode, info.mtime, info.uname, info.gname = mode, 0, "", ""
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tar.addfile(info)
            elif data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    diff = raw.getvalue()
    zipped = io.BytesIO()
    with gzip.GzipFile(fileobj=zipped, mode="wb", mtime=0) as z:
        z.write(diff)
    return zipped.getvalue(), "sha256:" + hashlib.sha256(diff).hexdigest()


def image(out, name, files, config):
    zipped, diff_id = layer(files)
    lay = blob(out, zipped, "application/vnd.oci.image.layer.v1.tar+gzip")
    cfg = {
        "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine),
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "tests/testenv/node-images.py"}],
    }
    c = blob(out, json.dumps(cfg, sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": c, "layers": [lay]}
    m = blob(out, json.dumps(manifest, sort_keys=True).encode(), "application/vnd.oci.image.manifest.v1+json")
    m["annotations"] = {"org.opencontainers.image.ref.name": name}
    return m


def main():
    pause_bin, busybox_bin, out = sys.argv[1:4]
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    with open(pause_bin, "rb") as f:
        pause = f.read()
    with open(busybox_bin, "rb") as f:
        busybox = f.read()
    applets = subprocess.run([busybox_bin, "--list"], check=True, capture_output=True, text=True).stdout.split()
    manifests = [
        image(out, "pause:3.10", [("pause", 0o755, pause, None)],
              {"Entrypoint": ["/pause"], "User": "65535:65535"}),
        image(out, "busybox:1.36",
              [("bin", 0o755, None, None), ("bin/busybox", 0o755, busybox, None)]
              + [("bin/" + a, 0o777, None, "busybox") for a in sorted(set(applets)) if a != "busybox"]
              + [("tmp", 0o1777, None, None), ("etc", 0o755, None, None),
                 ("etc/passwd", 0o644, b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n", None),
                 ("etc/group", 0o644, b"root:x:0:\nnobody:x:65534:\n", None)],
              {"Cmd": ["sh"], "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}),
    ]
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests}, f)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)


if __name__ == "__main__":
    main()
