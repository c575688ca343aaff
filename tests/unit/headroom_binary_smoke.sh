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

# 2. Start on a free port and read the port from the structured log.
"$bin" --config "$examples/headroom.yaml" --metrics-addr 127.0.0.1:0 --log-level info 2>"$work/log" &
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
for name in process_resident_memory_bytes process_cpu_seconds_total process_threads headroom_supervisor_child_up; do
  grep -q "^$name" <<<"$metrics" || fail "/metrics lacks $name"
done
for _ in $(seq 50); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")
  [ "$code" = 200 ] && break
  sleep 0.1
done
[ "$code" = 200 ] || fail "/readyz never became ready ($code)"
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
echo "headroom binary smoke: 1 passed, 0 failed"
