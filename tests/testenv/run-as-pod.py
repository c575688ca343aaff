#!/usr/bin/env python3
"""Runs a Deployment's headroom container on this machine as the kubelet would run it in its Pod.

The test control plane has no container runtime (kwok nodes), so a chart installed there makes a
Pod nothing runs. This plays the kubelet for that Pod's `headroom` container, from what the API
server holds, so a test exercises exactly what `helm install` made:
  - volumes: each mounted ConfigMap, Secret (keys or items) and emptyDir is written under ROOT at its
    mountPath; as nothing is mounted at the real path, every mountPath in the args, in env values and
    in mounted ConfigMap files is rewritten to ROOT + mountPath (the only liberty taken);
  - env: value (with $(VAR) expanded from the variables before it and the service variables
    KUBERNETES_SERVICE_HOST/PORT), fieldRef (the Pod's real name, uid, namespace), secretKeyRef and
    configMapKeyRef (optional ones skipped when absent); envFrom is not supported (refused);
  - the Pod's ServiceAccount: a TokenRequest token in a kubeconfig (ROOT/kubeconfig) for the API
    server the admin kubeconfig names, as the in-cluster config would give.
Then it execs the binary with the container's args plus --kubeconfig and --metrics-addr 127.0.0.1:0.

  run-as-pod.py ADMIN_KUBECONFIG NAMESPACE POD ROOT BINARY
"""
import base64
import json
import os
import re
import subprocess
import sys
import urllib.parse


def main():
    admin_kc, ns, pod_name, root, binary = sys.argv[1:6]
    kubectl = os.path.join(os.environ["HEADROOM_TESTENV_DIR"], "bin", "kubectl")

    def k(*args):
        return subprocess.run([kubectl, "--kubeconfig", admin_kc, *args], check=True, capture_output=True, text=True).stdout

    def get(kind, name):
        r = subprocess.run([kubectl, "--kubeconfig", admin_kc, "-n", ns, "get", kind, name, "-o", "json"],
                           capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else None

    pod = get("pod", pod_name)
    if pod is None:
        sys.exit(f"run-as-pod: no pod {ns}/{pod_name}")
    spec = pod["spec"]
    c = next(x for x in spec["containers"] if x["name"] == "headroom")
    if c.get("envFrom"):
        sys.exit("run-as-pod: envFrom is not supported")
    mounts = sorted((m["mountPath"] for m in c.get("volumeMounts", [])), key=len, reverse=True)

    # One pass, longest mountPath first, only where a path starts (ROOT itself may hold "/tmp").
    mount_re = re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(m.rstrip("/")) for m in mounts) + r")(?![\w.-])")

    def rewrite(text):
        return mount_re.sub(lambda m: root + m.group(1), text) if mounts else text

    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v, at = volumes[m["name"]], root + m["mountPath"]
        os.makedirs(at, exist_ok=True)
        if "configMap" in v or "secret" in v:
            src = v.get("configMap") or v.get("secret")
            obj = get("configmap" if "configMap" in v else "secret", src.get("name") or src.get("secretName"))
            if obj is None:
                if src.get("optional"):
                    continue
                sys.exit(f"run-as-pod: volume {m['name']}: {ns}/{src.get('name') or src.get('secretName')} is missing")
            data = obj.get("data") or {}
            items = src.get("items") or [{"key": key, "path": key} for key in data]
            for it in items:
                value = data[it["key"]]
                raw = base64.b64decode(value) if "secret" in v else rewrite(value).encode()
                with open(os.path.join(at, it["path"]), "wb") as f:
                    f.write(raw)

    server = k("config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
    url = urllib.parse.urlsplit(server)
    env = {"PATH": "/usr/bin:/bin", "KUBERNETES_SERVICE_HOST": url.hostname, "KUBERNETES_SERVICE_PORT": str(url.port or 443)}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = rewrite(re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), e["value"]))
            continue
        src = e["valueFrom"]
        if "fieldRef" in src:
            path = src["fieldRef"]["fieldPath"]
            env[e["name"]] = {"metadata.name": pod["metadata"]["name"], "metadata.uid": pod["metadata"]["uid"],
                              "metadata.namespace": ns}[path]
            continue
        ref = src.get("secretKeyRef") or src.get("configMapKeyRef")
        obj = get("secret" if "secretKeyRef" in src else "configmap", ref["name"])
        value = (obj or {}).get("data", {}).get(ref["key"])
        if value is None:
            if ref.get("optional"):
                continue
            sys.exit(f"run-as-pod: env {e['name']}: {ref['name']}[{ref['key']}] is missing")
        env[e["name"]] = base64.b64decode(value).decode() if "secretKeyRef" in src else value

    sa = spec.get("serviceAccountName", "default")
    token = k("-n", ns, "create", "token", sa, "--duration=4h").strip()
    ca = k("config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")
    if not ca:
        with open(k("config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.certificate-authority}"), "rb") as f:
            ca = base64.b64encode(f.read()).decode()
    kubeconfig = os.path.join(root, "kubeconfig")
    with open(os.open(kubeconfig, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Config",
                   "clusters": [{"name": "test", "cluster": {"server": server, "certificate-authority-data": ca}}],
                   "users": [{"name": sa, "user": {"token": token}}],
                   "contexts": [{"name": "pod", "context": {"cluster": "test", "user": sa}}], "current-context": "pod"}, f)
    args = [rewrite(a) for a in c.get("args", [])]
    os.execve(binary, [binary, *args, "--kubeconfig", kubeconfig, "--metrics-addr", "127.0.0.1:0"], env)


if __name__ == "__main__":
    main()
