#!/usr/bin/env bash
# The Helm chart (deploy/chart/headroom), with helm built from its Go module:
#   - helm lint --strict and helm template for every mode (ci/*-values.yaml, and the defaults);
#   - the headroom.yaml each renders passes `headroom check-config` (the chart never renders a
#     configuration headroom refuses), and the Pod is what a restricted namespace admits;
#   - a missing required value fails with a message naming it;
#   - the chart's CRD copies are deploy/crds;
#   - on the test control plane: every mode applies with --dry-run=server, the gates mode is
#     installed for real with helm, and the ServiceAccount's permissions are what the mode needs
#     and no more (kubectl auth can-i as the ServiceAccount).
#   chart_test.sh HEADROOM_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
# shellcheck source=../integration/agent_test_lib.sh
. "$src/tests/integration/agent_test_lib.sh"
helm=$("$src/tests/testenv/build-helm.sh")
chart="$src/deploy/chart/headroom"
work=$(mktemp -d)
cleanup() {
  "$src/tests/testenv/cluster" down "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

diff -r "$src/deploy/crds" "$chart/files/crds" >/dev/null || fail "deploy/chart/headroom/files/crds differs from deploy/crds"
cmp -s "$src/deploy/prometheus/headroom-alerts.yaml" "$chart/files/headroom-alerts.yaml" ||
  fail "deploy/chart/headroom/files/headroom-alerts.yaml differs from deploy/prometheus/headroom-alerts.yaml"
cmp -s "$src/deploy/grafana/headroom-dashboard.json" "$chart/files/grafana/headroom-dashboard.json" ||
  fail "deploy/chart/headroom/files/grafana/headroom-dashboard.json differs from deploy/grafana/headroom-dashboard.json"

"$helm" lint --strict "$src/deploy/chart/headroom-scale-set" -f "$src/tests/deploy/arc/linux-values.yaml" >"$work/lint-one.log" 2>&1 ||
  { cat "$work/lint-one.log"; fail "helm lint headroom-scale-set"; }

modes=(default scale-sets bigfleet reactive gates scheduler)
for mode in "${modes[@]}"; do
  values=()
  [ "$mode" = default ] || values=(-f "$chart/ci/$mode-values.yaml")
  "$helm" lint --strict "$chart" --kube-version 1.36.0 "${values[@]}" >"$work/lint-$mode.log" 2>&1 ||
    { cat "$work/lint-$mode.log"; fail "helm lint ($mode)"; }
  "$helm" template hr "$chart" -n headroom-system --kube-version 1.36.0 "${values[@]}" >"$work/$mode.yaml" ||
    fail "helm template ($mode)"
  python3 - "$work/$mode.yaml" "$work/$mode-headroom.yaml" "$mode" <<'PY' || fail "rendered objects ($mode)"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
mode = sys.argv[3]
kinds = {}
for d in docs:
    kinds.setdefault(d["kind"], []).append(d)
cm = kinds["ConfigMap"][0]
open(sys.argv[2], "w").write(cm["data"]["headroom.yaml"])
dep = kinds["Deployment"][0]
spec = dep["spec"]["template"]["spec"]
c = spec["containers"][0]
assert dep["spec"]["replicas"] == 2, "2 replicas behind the Lease"
assert spec["securityContext"]["runAsNonRoot"] is True
assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
sc = c["securityContext"]
assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
assert c["livenessProbe"]["httpGet"]["path"] == "/healthz" and c["readinessProbe"]["httpGet"]["path"] == "/readyz"
env = {e["name"] for e in c["env"]}
assert {"POD_NAME", "POD_NAMESPACE"} <= env, env
# The ladder's classes, named after the release, only where scale sets use them; the config names them too.
pcs = sorted(d["metadata"]["name"] for d in kinds.get("PriorityClass", []))
if mode == "scale-sets":
    assert pcs == ["hr-headroom-placeholder-runner", "hr-headroom-placeholder-workflow", "hr-headroom-runner", "hr-headroom-workflow"], pcs
    cfg = yaml.safe_load(cm["data"]["headroom.yaml"])
    assert sorted(cfg["priorityClasses"].values()) == pcs, cfg["priorityClasses"]
else:
    assert pcs == [], pcs
# Nodes of the image's architectures; replicas apart (soft); `helm test` runs check-config.
arch = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"][0]
assert arch["key"] == "kubernetes.io/arch" and arch["values"] == ["amd64", "arm64"], arch
assert spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
assert spec["topologySpreadConstraints"][0]["whenUnsatisfiable"] == "ScheduleAnyway"
tests = [d for d in kinds.get("Pod", []) if d["metadata"].get("annotations", {}).get("helm.sh/hook") == "test"]
assert len(tests) == 1 and tests[0]["spec"]["containers"][0]["args"][0] == "check-config", tests
assert "PodDisruptionBudget" in kinds and "Service" in kinds and "ServiceAccount" in kinds
if mode in ("gates", "scheduler"):
    # The optional NetworkPolicy (on in these two ci values): ingress on the ports the mode serves.
    np = kinds["NetworkPolicy"][0]["spec"]
    ports = [r["ports"][0]["port"] for r in np["ingress"]]
    assert ports == ["metrics", "webhook" if mode == "gates" else "scheduler"], ports
    assert np["policyTypes"] == ["Ingress"], np
    if mode == "gates":
        assert np["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "monitoring"}
        assert "from" not in np["ingress"][1], "the API server's address varies: the webhook port admits any source"
if mode == "default":
    assert "NetworkPolicy" not in kinds, "off by default"
if mode == "gates":
    assert "MutatingWebhookConfiguration" in kinds
    hook = kinds["MutatingWebhookConfiguration"][0]["webhooks"][0]
    assert hook["failurePolicy"] == "Ignore" and hook["timeoutSeconds"] == 2
    assert "headroom-system" in hook["namespaceSelector"]["matchExpressions"][0]["values"]
    assert any(d["metadata"]["name"] == "queues.headroom.dev" for d in kinds["CustomResourceDefinition"])
if mode == "bigfleet":
    assert len(kinds["CustomResourceDefinition"]) == 3
    # The bootstrap template lands verbatim beside headroom.yaml, which names it.
    assert "range .Requirements" in cm["data"]["bootstrap.tmpl"], cm["data"]
    cfg = yaml.safe_load(cm["data"]["headroom.yaml"])
    assert cfg["bigfleet"]["bootstrapTemplateFile"] == "/etc/headroom/config/bootstrap.tmpl", cfg["bigfleet"]
if mode == "scheduler":
    assert {"HEADROOM_WEBHOOK_SECRET", "HEADROOM_POSTGRES_DSN"} <= env, env
    assert any(p["name"] == "scheduler" and p["containerPort"] == 8080 for p in c["ports"])
    assert any(p["name"] == "scheduler" for p in kinds["Service"][0]["spec"]["ports"])
    roles = {r["metadata"]["name"]: r for r in kinds["Role"]}
    assert roles["hr-headroom-scheduler"]["metadata"]["namespace"] == "ci-runners", roles.keys()
    # RunnerPool objects in its namespace: the CRD, watched, their status written; editors may write them.
    assert [d["metadata"]["name"] for d in kinds["CustomResourceDefinition"]] == ["runnerpools.headroom.dev"]
    pool_rules = {(r["resources"][0], tuple(r["verbs"])) for r in roles["hr-headroom-scheduler"]["rules"] if "headroom.dev" in r["apiGroups"]}
    assert pool_rules == {("runnerpools", ("list", "watch")), ("runnerpools/status", ("patch",))}, pool_rules
    editor = next(r for r in kinds["ClusterRole"] if r["metadata"]["name"] == "hr-headroom-runnerpool-editor")
    assert editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
if mode in ("scale-sets", "scheduler"):
    # The GitHub Secret is mounted whole (ARC's keys or headroom's), readable by the pod's group.
    assert "HEADROOM_GITHUB_SECRET_DIR" in env and "HEADROOM_GITHUB_SECRET_NAME" in env, env
    vols = {v["name"]: v for v in spec["volumes"]}
    assert vols["github"]["secret"]["defaultMode"] == 0o440, vols["github"]
    assert any(m["name"] == "github" and m["readOnly"] for m in c["volumeMounts"])
if mode == "scale-sets":
    # kubectl get scalesets: the CRD, and the right to create the objects and write their status.
    assert [d["metadata"]["name"] for d in kinds["CustomResourceDefinition"]] == ["scalesets.headroom.dev"]
    def scale_set_rules(ns):
        return {(r["resources"][0], tuple(r["verbs"])) for role in kinds["Role"] if role["metadata"]["namespace"] == ns
                for r in role["rules"] if "headroom.dev" in r.get("apiGroups", [])}
    assert scale_set_rules("arc-runners") == {("scalesets", ("create", "get")), ("scalesets/status", ("patch",))}
    # Where teams declare ScaleSet objects, they are watched too; and that namespace gets what a
    # scale set's pods need, and the runners' ServiceAccount.
    assert scale_set_rules("team-a") == {("scalesets", ("create", "get", "list", "watch")), ("scalesets/status", ("patch",))}
    team = {r["metadata"]["name"] for r in kinds["Role"] if r["metadata"]["namespace"] == "team-a"}
    assert "hr-headroom-scale-sets" in team, team
    assert any(a["metadata"]["namespace"] == "team-a" for a in kinds["ServiceAccount"] if a["metadata"]["name"] != "hr-headroom"), "runner account"
    # Teams' editors may write ScaleSets (aggregated into `edit`), and read their status.
    editor = next(r for r in kinds["ClusterRole"] if r["metadata"]["name"] == "hr-headroom-scaleset-editor")
    assert editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert editor["rules"][0]["resources"] == ["scalesets"] and "create" in editor["rules"][0]["verbs"]
if mode == "reactive":
    # ReactiveTarget objects in `serving`: watched, their status written, and the workloads of
    # reactive.objectResources there scaled (a custom one's CRD read); teams' editors may write them.
    assert [d["metadata"]["name"] for d in kinds["CustomResourceDefinition"]] == ["reactivetargets.headroom.dev"]
    role = next(r for r in kinds["Role"] if r["metadata"]["name"] == "hr-headroom-reactive-targets")
    assert role["metadata"]["namespace"] == "serving", role["metadata"]
    rules = {(r["apiGroups"][0], r["resources"][0]): r["verbs"] for r in role["rules"]}
    assert rules[("headroom.dev", "reactivetargets")] == ["list", "watch"], rules
    assert rules[("headroom.dev", "reactivetargets/status")] == ["patch"], rules
    assert rules[("apps", "deployments/scale")] == ["get", "update", "patch"], rules
    assert rules[("argoproj.io", "rollouts/scale")] == ["get", "update", "patch"], rules
    main = next(r for r in kinds["ClusterRole"] if r["metadata"]["name"] == "hr-headroom")
    crd_reads = [r for r in main["rules"] if r.get("resources") == ["customresourcedefinitions"]]
    assert crd_reads and crd_reads[0]["resourceNames"] == ["rollouts.argoproj.io"], crd_reads
    editor = next(r for r in kinds["ClusterRole"] if r["metadata"]["name"] == "hr-headroom-reactivetarget-editor")
    assert editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
if mode == "default":
    assert "CustomResourceDefinition" not in kinds and "MutatingWebhookConfiguration" not in kinds
print(f"chart {mode}: {len(docs)} objects")
PY
  "$bin" check-config "$work/$mode-headroom.yaml" >/dev/null 2>"$work/check-$mode.log" ||
    { cat "$work/check-$mode.log"; fail "the $mode config the chart renders is refused by headroom check-config"; }
done

# The HUD's token from a Secret of its own (the design's pytorch-hud-token, key token).
"$helm" template hr "$chart" --kube-version 1.36.0 -f "$chart/ci/scale-sets-values.yaml" --set hud.tokenSecret.name=pytorch-hud-token \
  >"$work/hud.yaml" || fail "helm template with hud.tokenSecret"
python3 - "$work/hud.yaml" <<'PY' || fail "hud.tokenSecret does not set HEADROOM_HUD_TOKEN from the Secret"
import sys, yaml
dep = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "Deployment")
env = {e["name"]: e for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
assert env["HEADROOM_HUD_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "pytorch-hud-token", "key": "token"}, env.get("HEADROOM_HUD_TOKEN")
PY

# A required value left out is named; SQLite with two replicas is refused.
if out=$("$helm" template hr "$chart" --kube-version 1.36.0 --set config.scheduler.enabled=true 2>&1); then
  fail "the scheduler without its Secret rendered"
fi
grep -q "scheduler.existingSecret" <<<"$out" || fail "the missing value is not named: $out"
if out=$("$helm" template hr "$chart" --kube-version 1.36.0 --set config.scheduler.enabled=true --set scheduler.existingSecret=s 2>&1); then
  fail "the scheduler on SQLite with 2 replicas rendered"
fi
grep -q "one replica" <<<"$out" || fail "the SQLite replica limit is not said: $out"

if out=$("$helm" template hr "$chart" --kube-version 1.36.0 --set config.gates.enabled=true --set gates.webhook.caBundle=Y2E= 2>&1); then
  fail "gates without a certificate Secret rendered"
fi
grep -q "gates.webhook.certSecret" <<<"$out" || fail "the missing value is not named: $out"

# A typo anywhere in the values, in the chart's own values or in headroom's `config:` (whose
# schema is generated from headroom's readers: scripts/gen-config-docs), fails before anything is
# applied, naming where; so does a value headroom would refuse.
typo() {  # expected-message --set…
  local want=$1
  shift
  if out=$("$helm" template hr "$chart" --kube-version 1.36.0 "$@" 2>&1); then
    fail "helm template $* rendered"
  fi
  grep -qF "$want" <<<"$out" || fail "helm template $* does not say \"$want\": $out"
}
typo "additional properties 'replicaCont' not allowed" --set replicaCont=3
typo "additional properties 'enable' not allowed" --set serviceMonitor.enable=true
typo "at '/config': additional properties 'kubernets' not allowed" --set config.kubernets.qps=1
typo "at '/config/scaleSets/0/capacityAware': additional properties 'proactiveCapacty' not allowed" \
  --set 'config.scaleSets[0].name=linux' --set 'config.scaleSets[0].capacityAware.proactiveCapacty=1'
typo "at '/config/kubernetes/qps': minimum" --set config.kubernetes.qps=0
typo "at '/config/hud/interval'" --set config.hud.interval=30x
typo "at '/config/scheduler/runner/tolerations/0': additional properties 'efect' not allowed" \
  --set 'config.scheduler.runner.tolerations[0].key=ci' --set 'config.scheduler.runner.tolerations[0].efect=NoSchedule'
# What the schema admits, headroom admits: the example (every key, lists filled in) as `config:`.
python3 - "$src" "$work/example-values.yaml" <<'PY' || fail "the example as config: values"
import sys, yaml, importlib.util, importlib.machinery
loader = importlib.machinery.SourceFileLoader("gen", sys.argv[1] + "/scripts/gen-config-docs")
spec = importlib.util.spec_from_loader("gen", loader)
gen = importlib.util.module_from_spec(spec)
loader.exec_module(gen)
expanded = gen.expand(open(sys.argv[1] + "/examples/headroom.yaml").read().splitlines())
yaml.safe_dump({"config": yaml.safe_load("\n".join(expanded))}, open(sys.argv[2], "w"))
PY
"$helm" template hr "$chart" --kube-version 1.36.0 -f "$work/example-values.yaml" >"$work/example.yaml" 2>&1 ||
  { cat "$work/example.yaml"; fail "the schema refuses the example headroom accepts"; }

# #40: `helm template` with helm's own default Kubernetes version (no --kube-version) renders, as a
# user's first try does; `helm lint` refuses what `helm template` refuses (lint reports a
# template's `required` or `fail` only as a note, so the values that must go together are in
# values.schema.json, which lint, template and install all check).
"$helm" template hr "$chart" >/dev/null 2>"$work/template-default.log" ||
  { cat "$work/template-default.log"; fail "helm template without --kube-version"; }
for set in "config.gates.enabled=true" "config.gates.enabled=true,gates.webhook.caBundle=Y2E=" "config.scheduler.enabled=true"; do
  if out=$("$helm" lint --strict "$chart" --set "$set" 2>&1); then
    fail "helm lint passed --set $set, which helm template refuses"
  fi
  want=$(case "$set" in *caBundle*) echo gates.webhook.certSecret ;; config.gates*) echo gates.webhook.caBundle ;; *) echo scheduler.existingSecret ;; esac)
  grep -q "$want" <<<"$out" || fail "helm lint --set $set does not name $want: $out"
done

# Overrides a real environment needs: a proxy and more env, volumes, the security contexts
# (OpenShift assigns the user), a GHES CA from a ConfigMap as ARC takes it.
over=$("$helm" template hr "$chart" -f "$chart/ci/scale-sets-values.yaml" \
  --set 'extraEnv[0].name=HTTPS_PROXY' --set 'extraEnv[0].value=http://proxy:3128' \
  --set 'extraVolumes[0].name=extra' --set 'extraVolumes[0].emptyDir.medium=Memory' \
  --set 'extraVolumeMounts[0].name=extra' --set 'extraVolumeMounts[0].mountPath=/extra' \
  --set 'podSecurityContext.runAsUser=null' --set 'podSecurityContext.fsGroup=null' \
  --set githubServerTLS.certificateFrom.configMapKeyRef.name=ghes-ca) || fail "helm template with overrides"
python3 - "$over" <<'PY' || fail "the overrides did not land"
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.argv[1]) if d]
dep = next(d for d in docs if d["kind"] == "Deployment")
spec = dep["spec"]["template"]["spec"]
c = spec["containers"][0]
assert {"name": "HTTPS_PROXY", "value": "http://proxy:3128"} in c["env"], c["env"]
assert any(v["name"] == "extra" for v in spec["volumes"]) and any(m["mountPath"] == "/extra" for m in c["volumeMounts"])
assert "runAsUser" not in spec["securityContext"] and "fsGroup" not in spec["securityContext"], spec["securityContext"]
assert spec["securityContext"]["runAsNonRoot"] is True
assert any(v.get("configMap", {}).get("name") == "ghes-ca" for v in spec["volumes"])
cm = next(d for d in docs if d["kind"] == "ConfigMap")
assert yaml.safe_load(cm["data"]["headroom.yaml"])["github"]["caFile"] == "/etc/headroom/github-ca/ca.crt"
PY

# The alerts as a PrometheusRule and the dashboard as a ConfigMap for Grafana's sidecar.
extras=$("$helm" template hr "$chart" --set prometheusRule.enabled=true --set grafanaDashboard.enabled=true) ||
  fail "helm template with prometheusRule and grafanaDashboard"
python3 - "$extras" "$src/deploy/prometheus/headroom-alerts.yaml" <<'PY' || fail "the PrometheusRule or the dashboard ConfigMap"
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(sys.argv[1]) if d]
rule = next(d for d in docs if d["kind"] == "PrometheusRule")
assert rule["spec"] == yaml.safe_load(open(sys.argv[2])), "the PrometheusRule's spec is not the rule file"
cm = next(d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-dashboard"))
assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
assert json.loads(cm["data"]["headroom-dashboard.json"])["panels"], "the dashboard has no panels"
PY

# ARC's value name for the credentials' Secret works as github.existingSecret does.
arc=$("$helm" template hr "$chart" --set githubConfigSecret=arc-github -f "$chart/ci/scale-sets-values.yaml" --set github.existingSecret=) ||
  fail "helm template with githubConfigSecret"
grep -q "secretName: arc-github" <<<"$arc" || fail "githubConfigSecret is not mounted"

# scripts/migrate-from-arc: two ARC releases (a GHES with a private CA, an App Secret, a proxy with
# credentials) become values the chart takes and headroom accepts; what cannot be carried over safely
# stops it, naming the value, and a credential in values never reaches its output.
migrate="$src/scripts/migrate-from-arc"
"$migrate" arc-runners/linux="$src/tests/deploy/arc/linux-values.yaml" arc-gpu/gpu="$src/tests/deploy/arc/gpu-values.yaml" \
  >"$work/migrated.yaml" 2>"$work/migrate.log" || { cat "$work/migrate.log"; fail "migrate-from-arc"; }
grep -q "resources.requests.cpu: taken from its limit (4)" "$work/migrate.log" || fail "migrate-from-arc did not name what it changed"
"$helm" template hr "$chart" -n headroom-system --kube-version 1.36.0 -f "$work/migrated.yaml" >"$work/migrated-chart.yaml" ||
  fail "helm template with the migrated values"
python3 - "$work/migrated-chart.yaml" "$work/migrated-headroom.yaml" <<'PY' || fail "the migrated install"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
cm = next(d for d in docs if d["kind"] == "ConfigMap")
open(sys.argv[2], "w").write(cm["data"]["headroom.yaml"])
cfg = yaml.safe_load(cm["data"]["headroom.yaml"])
assert cfg["github"] == {"configUrl": "https://ghes.example.com/acme", "caFile": "/etc/headroom/github-ca/ca.crt"}, cfg["github"]
linux, gpu = cfg["scaleSets"]
assert (linux["name"], linux["namespace"], linux["runnerGroup"], linux["maxRunners"]) == ("linux-x64", "arc-runners", "linux-group", 4)
# ARC's template is carried whole (#54): the runner's requests, placement, account, volumes, env and sidecars.
spec = linux["runner"]["template"]["spec"]
assert linux["capacityAware"]["proactiveCapacity"] == 1
assert linux["labels"] == ["ubuntu-24.04", "fast-disk"], "ARC's scaleSetLabels are the scale set's labels"
assert spec["containers"][0]["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}, spec
assert spec["nodeSelector"] == {"pool": "ci"} and spec["serviceAccountName"] == "runner", spec
assert spec["volumes"][0] == {"name": "work", "emptyDir": {}} and [c["name"] for c in spec["containers"]] == ["runner", "cache-warmer"], spec
# githubServerTLS.runnerMountPath, as ARC's chart does it: the CA mounted, and the runner told.
assert spec["containers"][0]["env"] == [{"name": "RUNNER_FEATURE_FLAG_EPHEMERAL", "value": "true"},
                                        {"name": "NODE_EXTRA_CA_CERTS", "value": "/usr/local/share/ca-certificates/ca.crt"},
                                        {"name": "RUNNER_UPDATE_CA_CERTS", "value": "1"}], spec
assert spec["containers"][0]["volumeMounts"] == [{"name": "github-server-tls-cert", "mountPath": "/usr/local/share/ca-certificates/ca.crt",
                                                  "subPath": "ca.crt"}], spec
assert {"name": "github-server-tls-cert", "configMap": {"name": "ghes-ca"}} in spec["volumes"], spec
gpu_requests = gpu["runner"]["template"]["spec"]["containers"][0]["resources"]["requests"]
assert gpu_requests == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}, gpu["runner"]
dep = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
env = {e["name"]: e for e in dep["containers"][0]["env"]}
assert env["HEADROOM_GITHUB_SECRET_NAME"]["value"] == "arc-github-app"
names = list(env)
assert names.index("HEADROOM_HTTPS_PROXY_PASSWORD") < names.index("HTTPS_PROXY"), "the kubelet expands only variables listed before"
assert env["HTTPS_PROXY"]["value"] == "http://$(HEADROOM_HTTPS_PROXY_USERNAME):$(HEADROOM_HTTPS_PROXY_PASSWORD)@proxy.example.com:3128"
assert env["NO_PROXY"]["value"].startswith("$(KUBERNETES_SERVICE_HOST),"), env["NO_PROXY"]
assert any(v.get("configMap", {}).get("name") == "ghes-ca" for v in dep["volumes"]), dep["volumes"]
PY
"$bin" check-config "$work/migrated-headroom.yaml" >"$work/migrated-check.log" 2>&1 ||
  { cat "$work/migrated-check.log"; fail "headroom check-config refuses the migrated values"; }
# --objects: the same scale sets as ScaleSet objects in their namespaces, which the values serve.
"$migrate" --objects "$work/migrated-objects.yaml" --release hr arc-runners/linux="$src/tests/deploy/arc/linux-values.yaml" \
  arc-gpu/gpu="$src/tests/deploy/arc/gpu-values.yaml" >"$work/migrated-values-objects.yaml" 2>"$work/migrate-objects.log" ||
  { cat "$work/migrate-objects.log"; fail "migrate-from-arc --objects"; }
python3 - "$work/migrated-values-objects.yaml" "$work/migrated-objects.yaml" <<'PY' || fail "migrate-from-arc --objects"
import sys, yaml
values = yaml.safe_load(open(sys.argv[1]))
objects = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
assert "scaleSets" not in values["config"] and values["config"]["scaleSetObjects"] == {"namespaces": ["arc-runners", "arc-gpu"]}, values
assert [(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects] == [
    ("ScaleSet", "arc-runners", "linux-x64"), ("ScaleSet", "arc-gpu", "gpu")], objects
linux = objects[0]["spec"]
assert "name" not in linux and "namespace" not in linux and linux["maxRunners"] == 4 and linux["runnerGroup"] == "linux-group"
assert linux["runner"]["template"]["spec"]["serviceAccountName"] == "runner", "its own account, kept"
PY
"$helm" template hr "$chart" -n headroom-system --kube-version 1.36.0 -f "$work/migrated-values-objects.yaml" \
  >"$work/migrated-objects-chart.yaml" || fail "helm template with the --objects values"

refuse() {  # refuse WHAT PATTERN VALUES...: exit 2, stderr matching PATTERN, no secret
  local what=$1 pattern=$2; shift 2
  set +e; "$migrate" "$@" >"$work/refused.yaml" 2>"$work/refused.log"; local rc=$?; set -e
  [ "$rc" = 2 ] || fail "migrate-from-arc $what: exit $rc, not 2"
  grep -q -- "$pattern" "$work/refused.log" || { cat "$work/refused.log"; fail "migrate-from-arc $what: no '$pattern'"; }
  ! grep -q "ghp_inlineSecret" "$work/refused.log" "$work/refused.yaml" || fail "migrate-from-arc $what printed a credential"
}
printf 'githubConfigUrl: https://github.com/acme\ngithubConfigSecret: {github_token: ghp_inlineSecret0001}\n' >"$work/inline.yaml"
refuse "inline credentials" "githubConfigSecret: credentials inline" arc/inline="$work/inline.yaml"
sed 's#ghes.example.com/acme#github.com/other#' "$src/tests/deploy/arc/gpu-values.yaml" >"$work/other.yaml"
refuse "two GitHub URLs" "githubConfigUrl: differs from arc-runners/linux" \
  arc-runners/linux="$src/tests/deploy/arc/linux-values.yaml" arc-gpu/gpu="$work/other.yaml"
# dind is carried over (ARC's sidecar, made by headroom); its runners get no chart account (ARC's
# dind runners run with no API permission).
printf 'containerMode: {type: dind}\n' | cat "$src/tests/deploy/arc/gpu-values.yaml" - >"$work/dind.yaml"
"$migrate" arc-gpu/gpu="$work/dind.yaml" >"$work/dind-out.yaml" 2>"$work/dind.log" || { cat "$work/dind.log"; fail "migrate-from-arc dind"; }
grep -q 'containerMode: dind' "$work/dind-out.yaml" || { cat "$work/dind-out.yaml"; fail "dind not carried over"; }
"$helm" template hr "$chart" -f "$work/dind-out.yaml" >"$work/dind-rendered.yaml" || fail "helm template of the dind values"
python3 -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
assert not [d for d in docs if d["kind"] == "ServiceAccount" and d["metadata"]["name"] == "hr-headroom-runner"]' "$work/dind-rendered.yaml" ||
  fail "a runner ServiceAccount for dind runners, which need no API access"
python3 -c 'import sys, yaml
cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap")
open(sys.argv[2], "w").write(cm["data"]["headroom.yaml"])' "$work/dind-rendered.yaml" "$work/dind-headroom.yaml"
"$bin" check-config "$work/dind-headroom.yaml" >"$work/dind-check.log" 2>&1 ||
  { cat "$work/dind-check.log"; fail "headroom check-config refuses the dind values"; }
printf 'containerMode: {type: docker}\n' | cat "$src/tests/deploy/arc/gpu-values.yaml" - >"$work/docker.yaml"
refuse "an unknown container mode" "ARC's chart knows none" arc-gpu/gpu="$work/docker.yaml"
printf 'scaleSetLabels: [""]\n' | cat "$src/tests/deploy/arc/gpu-values.yaml" - >"$work/empty-label.yaml"
refuse "an empty scale-set label" "scaleSetLabels: a list of non-empty strings" arc-gpu/gpu="$work/empty-label.yaml"
# kubernetes-novolume is carried over (the runner's hook makes the workflow pod from headroom's
# template, as the chart's runner ServiceAccount); no container mode stays none (jobs in the runner).
printf 'containerMode: {type: kubernetes-novolume}\n' | cat "$src/tests/deploy/arc/gpu-values.yaml" - >"$work/novolume.yaml"
"$migrate" arc-gpu/gpu="$work/novolume.yaml" >"$work/novolume-out.yaml" 2>"$work/novolume.log" ||
  { cat "$work/novolume.log"; fail "migrate-from-arc kubernetes-novolume"; }
grep -q 'containerMode: kubernetes-novolume' "$work/novolume-out.yaml" || { cat "$work/novolume-out.yaml"; fail "kubernetes-novolume not carried over"; }
"$helm" template hr "$chart" -f "$work/novolume-out.yaml" >"$work/novolume-rendered.yaml" || fail "helm template of the kubernetes-novolume values"
grep -q 'serviceAccountName: hr-headroom-runner' "$work/novolume-rendered.yaml" && grep -q 'resources: \[pods/exec\]' "$work/novolume-rendered.yaml" ||
  { cat "$work/novolume-rendered.yaml"; fail "the chart made no runner ServiceAccount and Role for the container hook"; }
# kubernetes: its work volume's claim carried over, checked by headroom, and the runner Role gains
# batch jobs (ARC's kube-mode Role; the k8s hook checks for them); without a claim, refused.
printf 'containerMode:\n  type: kubernetes\n  kubernetesModeWorkVolumeClaim: {accessModes: [ReadWriteOnce], storageClassName: gp3, resources: {requests: {storage: 5Gi}}}\n' |
  cat "$src/tests/deploy/arc/gpu-values.yaml" - >"$work/kube.yaml"
"$migrate" arc-gpu/gpu="$work/kube.yaml" >"$work/kube-out.yaml" 2>"$work/kube.log" || { cat "$work/kube.log"; fail "migrate-from-arc kubernetes"; }
grep -q 'containerMode: kubernetes$' "$work/kube-out.yaml" && grep -q 'storageClassName: gp3' "$work/kube-out.yaml" ||
  { cat "$work/kube-out.yaml"; fail "kubernetes mode or its work volume claim not carried over"; }
"$helm" template hr "$chart" -f "$work/kube-out.yaml" >"$work/kube-rendered.yaml" || fail "helm template of the kubernetes values"
grep -q 'resources: \[jobs\]' "$work/kube-rendered.yaml" || { cat "$work/kube-rendered.yaml"; fail "no jobs rule in the kubernetes-mode runner Role"; }
! grep -q 'resources: \[jobs\]' "$work/novolume-rendered.yaml" || fail "a jobs rule for kubernetes-novolume, which ARC does not grant"
python3 - "$work/kube-rendered.yaml" "$work/kube-headroom.yaml" <<'PY' || fail "the kubernetes-mode config"
import sys, yaml
cm = next(d for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "ConfigMap")
open(sys.argv[2], "w").write(cm["data"]["headroom.yaml"])
PY
"$bin" check-config "$work/kube-headroom.yaml" >"$work/kube-check.log" 2>&1 ||
  { cat "$work/kube-check.log"; fail "headroom check-config refuses the migrated kubernetes-mode values"; }
printf 'containerMode: {type: kubernetes}\n' | cat "$src/tests/deploy/arc/gpu-values.yaml" - >"$work/kube-noclaim.yaml"
refuse "kubernetes without a claim" "kubernetesModeWorkVolumeClaim: required" arc-gpu/gpu="$work/kube-noclaim.yaml"
plain=$("$migrate" arc-gpu/gpu="$src/tests/deploy/arc/gpu-values.yaml" 2>/dev/null) || fail "migrate-from-arc (no container mode)"
grep -q 'containerMode: none' <<<"$plain" || fail "ARC without a container mode is not none"

# PriorityClasses are cluster-scoped: two releases name theirs apart; existing classes named in the
# values are used as they are (none rendered, the config and the get grant name them).
two=$( { "$helm" template a "$chart" -f "$chart/ci/scale-sets-values.yaml"; "$helm" template b "$chart" -f "$chart/ci/scale-sets-values.yaml"; } |
  awk '/^kind: PriorityClass/{f=1} f && /^  name:/{print $2; f=0}' | sort)
[ "$(wc -l <<<"$two")" = 8 ] && [ "$(uniq <<<"$two" | wc -l)" = 8 ] || fail "two releases share PriorityClass names: $two"
named=$("$helm" template hr "$chart" -f "$chart/ci/scale-sets-values.yaml" --set priorityClasses.create=false \
  --set priorityClasses.placeholderRunner=low --set priorityClasses.runner=mid --set priorityClasses.placeholderWorkflow=high \
  --set priorityClasses.workflow=top) || fail "helm template with named PriorityClasses"
! grep -q '^kind: PriorityClass' <<<"$named" || fail "create: false rendered PriorityClasses"
grep -q 'placeholderRunner: low' <<<"$named" && grep -q 'workflow: top' <<<"$named" || fail "the config does not name the given PriorityClasses"
"$helm" template hr "$chart" -f "$chart/ci/scale-sets-values.yaml" --set priorityClasses.runner=Bad_Name >/dev/null 2>&1 &&
  fail "a PriorityClass name that is not a DNS subdomain passed the schema"

# The scale sets' RBAC, narrowed (#35): secrets are only created (their pods own them); the
# EphemeralRunnerSet grant only where a scale set is in arc mode; the PriorityClasses only read
# when the chart makes them, created by headroom only when it does not.
for case in "default" "pcs-by-headroom" "arc"; do
  extra=()
  case $case in
    pcs-by-headroom) extra=(--set priorityClasses.create=false) ;;
    arc) extra=(--set config.scaleSets[0].mode=arc --set config.scaleSets[0].autoscalingRunnerSet=linux) ;;
  esac
  rendered=$("$helm" template hr "$chart" -f "$chart/ci/scale-sets-values.yaml" "${extra[@]}") || fail "helm template ($case)"
  python3 - "$case" "$rendered" <<'PY' || fail "the scale sets' RBAC ($case)"
import sys, yaml
case, docs = sys.argv[1], [d for d in yaml.safe_load_all(sys.argv[2]) if d]
def rules(kind, name):
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)["rules"]
def verbs(rs, group, resource):
    return sorted({v for r in rs if group in r["apiGroups"] and resource in r["resources"] for v in r["verbs"]})
cluster, ns = rules("ClusterRole", "hr-headroom"), rules("Role", "hr-headroom-scale-sets")
assert verbs(ns, "", "secrets") == ["create"], verbs(ns, "", "secrets")
want_pc = ["create", "get"] if case == "pcs-by-headroom" else ["get"]
assert verbs(cluster, "scheduling.k8s.io", "priorityclasses") == want_pc, verbs(cluster, "scheduling.k8s.io", "priorityclasses")
# get: the ladder's four by name only.
gets = [r for r in cluster if "priorityclasses" in r["resources"] and "get" in r["verbs"]]
assert len(gets) == 1 and len(gets[0]["resourceNames"]) == 4, gets
want_ers = ["get", "list", "patch"] if case == "arc" else []
assert verbs(ns, "actions.github.com", "ephemeralrunnersets") == want_ers, verbs(ns, "actions.github.com", "ephemeralrunnersets")
PY
done

# The real API server: every mode's objects are valid (dry-run=server), the gates mode installs.
"$src/tests/testenv/cluster" up "$work/cluster" --owner $$ >/dev/null 2>&1 || fail "cluster up"
export KUBECONFIG="$work/cluster/kubeconfig"
kubectl=$(sed -n 's/^HEADROOM_TESTENV_KUBECTL=//p' "$work/cluster/env")
for ns in headroom-system arc-runners team-a serving ci-runners; do "$kubectl" create namespace "$ns" >/dev/null; done
for mode in "${modes[@]}"; do
  "$kubectl" apply --dry-run=server -f "$work/$mode.yaml" >"$work/dry-$mode.log" 2>&1 ||
    { cat "$work/dry-$mode.log"; fail "kubectl apply --dry-run=server ($mode)"; }
done
# The ScaleSet objects scripts/migrate-from-arc --objects writes are what the CRD admits.
"$kubectl" apply -f "$src/deploy/crds/scalesets.yaml" >/dev/null || fail "the ScaleSet CRD"
"$kubectl" wait --for condition=Established --timeout 60s crd/scalesets.headroom.dev >/dev/null || fail "the ScaleSet CRD is not established"
"$kubectl" create namespace arc-gpu >/dev/null
"$kubectl" apply --dry-run=server -f "$work/migrated-objects.yaml" >"$work/dry-objects.log" 2>&1 ||
  { cat "$work/dry-objects.log"; fail "the migrated ScaleSet objects are refused"; }
# The per-scale-set chart: an ARC release's own values make its ScaleSet, which the CRD admits.
"$helm" template linux "$src/deploy/chart/headroom-scale-set" -n arc-runners -f "$src/tests/deploy/arc/linux-values.yaml" \
  >"$work/one-scale-set.yaml" || fail "helm template headroom-scale-set"
"$kubectl" apply --dry-run=server -f "$work/one-scale-set.yaml" >"$work/dry-one.log" 2>&1 ||
  { cat "$work/dry-one.log"; fail "the headroom-scale-set chart's ScaleSet is refused"; }
"$helm" install linux "$src/deploy/chart/headroom-scale-set" -n arc-runners -f "$src/tests/deploy/arc/linux-values.yaml" \
  >"$work/install-one.log" 2>&1 || { cat "$work/install-one.log"; fail "helm install headroom-scale-set"; }
[ "$("$kubectl" get scaleset -n arc-runners linux-x64 -o jsonpath='{.spec.maxRunners} {.spec.capacityAware.proactiveCapacity}')" = "4 1" ] ||
  fail "the installed ScaleSet does not carry ARC's maxRunners and minRunners"
"$helm" install hr "$chart" -n headroom-system -f "$chart/ci/gates-values.yaml" --wait=false >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "helm install (gates)"; }
# Captured first: with pipefail, `helm status | grep -q` fails when grep exits before helm has
# written everything (SIGPIPE), which CI hit once.
release_status=$("$helm" status hr -n headroom-system) || fail "helm status"
grep -q "STATUS: deployed" <<<"$release_status" || fail "helm status: $release_status"
"$kubectl" get mutatingwebhookconfiguration hr-headroom-queue-gate >/dev/null || fail "the webhook configuration is missing"

# Least privilege, asked of the API server as the ServiceAccount (SubjectAccessReview through
# impersonation): what the gates mode needs, and nothing it does not.
sa=system:serviceaccount:headroom-system:hr-headroom
can() { "$kubectl" auth can-i --as "$sa" "$@" 2>/dev/null; }
for want in "patch pods -n ci" "watch pods --all-namespaces" "patch pods --subresource=status -n ci" "list queues.headroom.dev" \
            "patch queues.headroom.dev --subresource=status" "watch namespaces" "create events.events.k8s.io -n ci" "patch events.events.k8s.io -n ci" "update leases -n headroom-system" "patch leases -n headroom-system"; do
  [ "$(can $want)" = yes ] || fail "the ServiceAccount cannot: $want"
done
for deny in "get secrets -n kube-system" "get secrets -n headroom-system" "delete pods -n ci" "create pods -n ci" \
            "patch nodes" "create events -n ci" "update leases -n kube-system" "delete queues.headroom.dev" "create clusterroles" "patch namespaces"; do
  [ "$(can $deny)" = no ] || fail "the ServiceAccount can (and must not): $deny"
done
echo "chart_test: ok (${#modes[@]} modes linted, rendered, checked by headroom, applied; gates installed; RBAC checked)"
