#!/usr/bin/env python3
"""Builds the images the test cluster's real node runs (#56) as one OCI layout, from what this
machine has: no registry outside and no container engine.

  node-images.py PAUSE_BINARY BUSYBOX_BINARY OUT_DIR
  node-images.py --runner RUNNER_SIM_BINARY BUSYBOX_BINARY OUT_DIR

  pause:3.10     the sandbox ("pause") image: Kubernetes' own pause.c (build/pause/linux, in the
                 k8s.io/kubernetes module the kubelet is built from), compiled static, as
                 registry.k8s.io/pause is; user 65535
  busybox:1.36   Debian's busybox-static with a link for each applet, as docker.io/busybox is
                 (placeholders and the test pods run it)
  actions-runner:sim  (--runner) the runner simulator as GitHub's runner image lays itself out:
                 user runner (1001), /home/runner/run.sh (here `runner-sim runner`, the runner
                 process, tests/peers/runner-sim/inpod.go), the container hooks' files where the
                 runner image ships them (/home/runner/k8s/index.js, /home/runner/k8s-novolume/
                 index.js: the runner names one, the simulator plays it) and a shell, which the
                 kubernetes-novolume hook's fs-init container runs with this image

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


def busybox_files(busybox_bin, users):
    with open(busybox_bin, "rb") as f:
        busybox = f.read()
    applets = subprocess.run([busybox_bin, "--list"], check=True, capture_output=True, text=True).stdout.split()
    passwd = "root:x:0:0:root:/root:/bin/sh\n" + "".join("%s:x:%d:%d:%s:%s:%s\n" % (n, u, u, n, h, sh) for n, u, h, sh in users)
    group = "root:x:0:\n" + "".join("%s:x:%d:\n" % (n, u) for n, u, _, _ in users)
    return ([("bin", 0o755, None, None), ("bin/busybox", 0o755, busybox, None)]
            + [("bin/" + a, 0o777, None, "busybox") for a in sorted(set(applets)) if a != "busybox"]
            + [("tmp", 0o1777, None, None), ("etc", 0o755, None, None),
               ("etc/passwd", 0o644, passwd.encode(), None), ("etc/group", 0o644, group.encode(), None)])


def write_layout(out, manifests):
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests}, f)
    with open(os.path.join(out, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)


PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def runner(sim_bin, busybox_bin, out):
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    with open(sim_bin, "rb") as f:
        sim = f.read()
    hook = b"// The runner simulator plays this container hook (tests/peers/runner-sim/hook.go).\n"
    files = busybox_files(busybox_bin, [("runner", 1001, "/home/runner", "/bin/sh")]) + [
        ("home", 0o755, None, None), ("home/runner", 0o755, None, None), ("home/runner/bin", 0o755, None, None),
        ("home/runner/bin/runner-sim", 0o755, sim, None),
        ("home/runner/run.sh", 0o755, b'#!/bin/sh\nexec /home/runner/bin/runner-sim runner "$@"\n', None),
        ("home/runner/k8s", 0o755, None, None), ("home/runner/k8s/index.js", 0o644, hook, None),
        ("home/runner/k8s-novolume", 0o755, None, None), ("home/runner/k8s-novolume/index.js", 0o644, hook, None),
    ]
    write_layout(out, [image(out, "actions-runner:sim", files,
                             {"Cmd": ["/home/runner/run.sh"], "User": "1001:1001", "WorkingDir": "/home/runner",
                              "Env": [PATH_ENV]})])


def main():
    if sys.argv[1] == "--runner":
        runner(*sys.argv[2:5])
        return
    pause_bin, busybox_bin, out = sys.argv[1:4]
    os.makedirs(os.path.join(out, "blobs", "sha256"), exist_ok=True)
    with open(pause_bin, "rb") as f:
        pause = f.read()
    manifests = [
        image(out, "pause:3.10", [("pause", 0o755, pause, None)],
              {"Entrypoint": ["/pause"], "User": "65535:65535"}),
        image(out, "busybox:1.36", busybox_files(busybox_bin, [("nobody", 65534, "/home", "/bin/false")]),
              {"Cmd": ["sh"], "Env": [PATH_ENV]}),
    ]
    write_layout(out, manifests)


if __name__ == "__main__":
    main()
