#!/usr/bin/env bash
# Every chart scenario a user can start from starts (#61: a default `helm install` exited 2 at
# start, `github.caFile … cannot open`, and `check-config` and `helm test` both passed it):
#   the bare defaults, each ci/*-values.yaml, and scripts/migrate-from-arc's output.
# Each is installed with helm on the test control plane, with the Secrets and ConfigMaps it names
# made as a user would (real keys and certificates, made here), and its headroom container is run
# as the kubelet would run it (tests/testenv/run-as-pod.py: its mounts, its env, its
# ServiceAccount's token). It must serve /healthz, stay up (dependencies it cannot reach here are
# retried, never an exit), and stop with exit code 0 on SIGTERM.
#   chart_start_test.sh HEADROOM_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
# shellcheck source=../integration/agent_test_lib.sh
. "$src/tests/integration/agent_test_lib.sh"
helm=$("$src/tests/testenv/build-helm.sh")
chart="$src/deploy/chart/headroom"
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  "$src/tests/testenv/cluster" down "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work" "${pgdir:-}"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$src/tests/testenv/cluster" up "$work/cluster" --owner $$ >/dev/null 2>&1 || fail "cluster up"
export KUBECONFIG="$work/cluster/kubeconfig"
kubectl=$(sed -n 's/^HEADROOM_TESTENV_KUBECTL=//p' "$work/cluster/env")
k() { "$kubectl" "$@"; }

# What a user makes before installing: real key material, so a scenario that reads it at start
# reads something valid.
openssl genrsa -out "$work/app.pem" 2048 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=test-ca" -keyout "$work/ca.key" -out "$work/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=headroom" -keyout "$work/tls.key" -out "$work/tls.csr" 2>/dev/null
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial -days 2 -out "$work/tls.crt" 2>/dev/null
b64ca=$(base64 -w0 "$work/ca.crt")
for ns in arc-runners arc-gpu team-a serving ci-runners; do k create namespace "$ns" >/dev/null; done

# The scheduler's ci values store jobs in PostgreSQL: a real server (Debian's), as a user's would be.
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/postgres" ] || fail "PostgreSQL is not installed (scripts/install-deps installs it)"
pgdir=$(mktemp -d /tmp/headroom-chart-pg-XXXXXX)
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$pgdir"
  as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)
fi
"${as_pg[@]}" "$pgbin/initdb" -D "$pgdir/data" -U headroom --auth=trust -E UTF8 >"$work/initdb.log" 2>&1 ||
  { cat "$work/initdb.log"; fail "initdb"; }
pgport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$pgbin/postgres" -D "$pgdir/data" -p "$pgport" -k "$pgdir" -c listen_addresses=127.0.0.1 >"$work/postgres.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 30); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" && break; sleep 1; done
"$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" || { cat "$work/postgres.log"; fail "PostgreSQL did not start"; }

"$src/scripts/migrate-from-arc" arc-runners/linux="$src/tests/deploy/arc/linux-values.yaml" arc-gpu/gpu="$src/tests/deploy/arc/gpu-values.yaml" \
  >"$work/migrated.yaml" 2>"$work/migrate.log" || { cat "$work/migrate.log"; fail "migrate-from-arc"; }

# start NAME [helm values args…]: installs release NAME in namespace start-NAME, runs its pod's
# headroom container, checks it serves and stays up, stops it.
start() {
  local name=$1
  shift
  local ns=start-$name
  k create namespace "$ns" >/dev/null
  # The Secrets and ConfigMaps the scenarios name (ARC's key names for the GitHub ones).
  k -n "$ns" create secret generic headroom-github --from-literal=github_token=ghp_chartStartTest0000000000000000000 >/dev/null
  for s in github-app arc-github-app; do
    k -n "$ns" create secret generic "$s" --from-literal=github_app_id=1 --from-literal=github_app_installation_id=2 \
      --from-file=github_app_private_key="$work/app.pem" >/dev/null
  done
  k -n "$ns" create secret generic headroom-scheduler --from-literal=webhook-secret=chart-start-test-secret \
    --from-literal=postgres-dsn="postgresql://headroom@127.0.0.1:$pgport/postgres" >/dev/null
  k -n "$ns" create secret generic proxy-auth --from-literal=username=proxy-user --from-literal=password=proxy-pass >/dev/null
  k -n "$ns" create secret tls headroom-webhook-tls --cert "$work/tls.crt" --key "$work/tls.key" >/dev/null
  k -n "$ns" create secret generic headroom-bigfleet-tls --from-file=tls.crt="$work/tls.crt" --from-file=tls.key="$work/tls.key" \
    --from-file=ca.crt="$work/ca.crt" >/dev/null
  k -n "$ns" create configmap ghes-ca --from-file=ca.crt="$work/ca.crt" >/dev/null
  "$helm" install "$name" "$chart" -n "$ns" --set image.repository=registry.test/headroom "$@" \
    --set "gates.webhook.caBundle=$b64ca" >"$work/$name-install.log" 2>&1 ||
    { cat "$work/$name-install.log"; fail "helm install ($name)"; }
  local pod=""
  for _ in $(seq 1 60); do
    pod=$(k -n "$ns" get pods -l "app.kubernetes.io/instance=$name" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null || true)
    [ -n "$pod" ] && break
    sleep 1
  done
  [ -n "$pod" ] || fail "$name: the Deployment made no pod"
  local root="$work/$name-root" log="$work/$name.log"
  mkdir -p "$root"
  : >"$log"
  python3 "$src/tests/testenv/run-as-pod.py" "$KUBECONFIG" "$ns" "$pod" "$root" "$bin" >"$log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  local port=""
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || { cat "$log"; fail "$name: headroom exited at start"; }
    port=$(grep -o '"msg":"serving /metrics[^}]*"port":[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
    [ -n "$port" ] && break
    sleep 1
  done
  [ -n "$port" ] || { cat "$log"; fail "$name: no /metrics within 60 s"; }
  sleep 10  # start-up past the HTTP endpoint: leader election, each mode's first steps
  kill -0 "$pid" 2>/dev/null || { cat "$log"; fail "$name: headroom exited after it started serving"; }
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { cat "$log"; fail "$name: /healthz is not 200"; }
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || { cat "$log"; fail "$name: exit code $rc after SIGTERM, not 0"; }
  if grep -q '"level":"error"' "$log"; then
    grep '"level":"error"' "$log" | head -5
    fail "$name: an error at start"
  fi
  echo "chart_start_test: $name started, served /healthz and stopped with 0"
}

start default
for mode in scale-sets bigfleet reactive gates scheduler; do
  start "$mode" -f "$chart/ci/$mode-values.yaml"
done
start migrated -f "$work/migrated.yaml"
echo "chart_start_test: ok (the defaults, 5 ci values and the migrated values all start)"
