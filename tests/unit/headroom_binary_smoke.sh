#!/usr/bin/env bash
# The headroom binary as a user meets it: a bad config exits 2 with one line naming the key;
# a good one serves /metrics, /healthz and /readyz; SIGTERM stops it cleanly with exit code 0.
set -euo pipefail
bin=$1
examples=$2
work=$(mktemp -d)
trap 'kill -9 "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$work/log" ] && sed 's/^/  log: /' "$work/log" >&2; exit 1; }

# 1. Invalid configuration: exit 2, exactly one line, naming the key path.
set +e
"$bin" check-config "$examples/invalid-unknown-key.yaml" >"$work/out" 2>"$work/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "check-config on a bad file exited $rc, want 2"
[ "$(wc -l <"$work/err")" = 1 ] || fail "expected one line, got: $(cat "$work/err")"
grep -q "runtime.schedulerThread: unknown key (did you mean 'schedulerThreads'?)" "$work/err" ||
  fail "message does not name the key: $(cat "$work/err")"
set +e
"$bin" --config "$examples/invalid-unknown-key.yaml" >/dev/null 2>"$work/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "starting with a bad config exited $rc, want 2"
set +e
"$bin" check-config "$examples/invalid-out-of-range.yaml" >/dev/null 2>"$work/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "out-of-range value exited $rc, want 2"
grep -q "supervision.maxRestarts: must be between 0 and 1000, found 5000" "$work/err" || fail "range message: $(cat "$work/err")"
"$bin" check-config "$examples/headroom.yaml" >/dev/null || fail "examples/headroom.yaml is not valid"

# The version names its git revision (a commit, or "unknown" outside a checkout).
"$bin" --version | grep -Eq '^headroom [0-9]+\.[0-9]+\.[0-9]+ \(revision ([0-9a-f]{12}(-dirty)?|unknown)\)$' ||
  fail "--version: $("$bin" --version)"

# 2. Start on a free port and read the port from the structured log. HEADROOM_TEST_FAULTS=1 is set
#    to show that this program (the one the image ships) carries no test fault hooks: it says so
#    and serves no /debug/fault (runtime/fault_hooks.hpp; headroom-faults is the chaos suite's build).
HEADROOM_TEST_FAULTS=1 "$bin" --config "$examples/headroom.yaml" --metrics-addr 127.0.0.1:0 --log-level info 2>"$work/log" &
pid=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/.*"msg":"serving \/metrics \/healthz \/readyz".*"port":\([0-9]*\).*/\1/p' "$work/log" | head -1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || fail "no serving line in the log"
curl -fsS "http://127.0.0.1:$port/healthz" | grep -qx ok || fail "/healthz"
metrics=$(curl -fsS "http://127.0.0.1:$port/metrics")
for name in process_resident_memory_bytes process_cpu_seconds_total process_threads headroom_supervisor_child_up headroom_build_info; do
  grep -q "^$name" <<<"$metrics" || fail "/metrics lacks $name"
done
grep -Eq '^headroom_build_info\{revision="([0-9a-f]{12}(-dirty)?|unknown)",version="[0-9.]+"\} 1' <<<"$metrics" ||
  fail "headroom_build_info: $(grep headroom_build_info <<<"$metrics")"
for _ in $(seq 50); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")
  [ "$code" = 200 ] && break
  sleep 0.1
done
[ "$code" = 200 ] || fail "/readyz never became ready ($code)"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '' "http://127.0.0.1:$port/debug/fault?child=http")
[ "$code" = 404 ] || fail "POST /debug/fault answered $code in the shipped program, want 404"
grep -q 'HEADROOM_TEST_FAULTS=1 is ignored: this program carries no fault hooks' "$work/log" || fail "no word that the fault hooks are absent"
! grep -aq '/debug/fault' "$bin" || fail "the shipped program contains the fault route"
# Every log line is one JSON object.
python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$work/log" || fail "log is not JSON lines"

# 3. SIGTERM: orderly stop, exit 0.
kill -TERM "$pid"
set +e
wait "$pid"; rc=$?
set -e
pid=""
[ "$rc" = 0 ] || fail "exit code after SIGTERM was $rc"
grep -q '"msg":"stopped cleanly"' "$work/log" || fail "no 'stopped cleanly' line"
grep -q '"msg":"stopping child","child":"http"' "$work/log" || fail "http child was not stopped by its supervisor"
# 4. #40: a credential file that cannot be read is a configuration error like the others: exit 2,
#    one message naming the variable (it exited 1).
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: "smoke-kube-token-0123456789"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
EOF
cat >"$work/sets.yaml" <<EOF
http: {listen: "127.0.0.1:0"}
kubernetes: {kubeconfig: "$work/kubeconfig"}
leaderElection: {enabled: false}
github: {configUrl: "https://127.0.0.1:1/smoke-org"}
scaleSets:
  - {name: smoke, namespace: smoke}
EOF
"$bin" check-config "$work/sets.yaml" >/dev/null 2>"$work/err" || fail "the smoke scale-set config is refused: $(cat "$work/err")"
set +e
env -i PATH=/usr/bin:/bin HEADROOM_GITHUB_APP_ID=1 HEADROOM_GITHUB_APP_INSTALLATION_ID=2 \
  HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE=/nonexistent/key.pem "$bin" --config "$work/sets.yaml" >/dev/null 2>"$work/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "an unreadable App key file exited $rc, want 2: $(cat "$work/err")"
grep -q 'HEADROOM_GITHUB_APP_PRIVATE_KEY_FILE /nonexistent/key.pem: cannot open' "$work/err" || fail "the variable is not named: $(cat "$work/err")"

# 5. #40: an API server that cannot be reached is said once, with its cause, and waited for with
#    backoff; no actor exits and no supervisor restarts anything (it was a silent restart storm:
#    the capacity monitor exited 3 ms after each start, 175 child exits in 90 s).
#    The credentials come as an ARC user's Secret mounts them (ARC's key name, a trailing newline).
mkdir -p "$work/arc-secret"
printf 'smoke-github-token-0123456789\n' >"$work/arc-secret/github_token"
env -i PATH=/usr/bin:/bin HEADROOM_GITHUB_SECRET_DIR="$work/arc-secret" HEADROOM_GITHUB_SECRET_NAME=arc-github \
  "$bin" --config "$work/sets.yaml" --log-level info 2>"$work/log" &
pid=$!
sleep 12
kill -0 "$pid" 2>/dev/null || fail "headroom exited while the API server was unreachable"
exits=$(grep -c '"msg":"child exited"' "$work/log" || true)
[ "$exits" = 0 ] || fail "$exits child exits while the API server was unreachable (a restart loop)"
said=$(grep -c '"msg":"cannot reach the API server to start; retrying with backoff"' "$work/log" || true)
[ "$said" = 1 ] || fail "the unreachable API server was said $said times, want once"
grep '"msg":"cannot reach the API server to start; retrying with backoff"' "$work/log" | grep -q '"error":"[^"]' ||
  fail "the line does not carry the cause: $(grep 'cannot reach the API server' "$work/log")"
lines=$(wc -l <"$work/log")
[ "$lines" -lt 60 ] || fail "$lines log lines in 12 s of an unreachable API server"
kill -TERM "$pid"
set +e
wait "$pid"; rc=$?
set -e
pid=""
[ "$rc" = 0 ] || fail "exit code after SIGTERM (API server unreachable) was $rc"
! grep -q 'smoke-github-token-0123456789' "$work/log" || fail "the token reached the log"
# An ARC Secret without the App's private key: exit 2, naming the Secret and the key.
rm "$work/arc-secret/github_token"
printf '12345' >"$work/arc-secret/github_app_id"
printf '678' >"$work/arc-secret/github_app_installation_id"
set +e
env -i PATH=/usr/bin:/bin HEADROOM_GITHUB_SECRET_DIR="$work/arc-secret" HEADROOM_GITHUB_SECRET_NAME=arc-github \
  "$bin" --config "$work/sets.yaml" >/dev/null 2>"$work/err"; rc=$?
set -e
[ "$rc" = 2 ] || fail "an ARC Secret without its private key exited $rc, want 2: $(cat "$work/err")"
grep -q 'Secret arc-github: key github_app_private_key (or private-key) is missing' "$work/err" || fail "the Secret and key are not named: $(cat "$work/err")"
echo "headroom binary smoke: 3 passed, 0 failed"
