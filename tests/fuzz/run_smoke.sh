#!/usr/bin/env bash
# A bounded fuzz run: the seed corpus (read-only) plus a scratch corpus, 20 s or 200k runs.
# On a crash the whole report is printed (the input that crashed, the sanitizer's stack).
set -uo pipefail
fuzzer=$1
seeds=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
log="$scratch/fuzz.log"
mkdir -p "$scratch/corpus"
# A dictionary beside the corpus (tests/fuzz/dict/<name>.dict) steers the fuzzer to the decoder's
# keys and to each JSON type in each place.
dict=()
d="$(dirname "$0")/dict/$(basename "$seeds").dict"
[ -f "$d" ] && dict=(-dict="$d")
(cd "$scratch" && "$fuzzer" "${dict[@]}" -max_total_time=20 -runs=200000 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$scratch/corpus" "$seeds" >"$log" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
  grep -vE '^#[0-9]+\s+(NEW|REDUCE|pulse|INITED)' "$log" | tail -80
  for crash in "$scratch"/crash-* "$scratch"/timeout-* "$scratch"/oom-*; do
    [ -f "$crash" ] && { echo "--- input (base64): $(basename "$crash")"; base64 -w0 "$crash"; echo; }
  done
  exit $rc
fi
tail -8 "$log"
