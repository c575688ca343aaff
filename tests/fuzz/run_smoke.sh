#!/usr/bin/env bash
# A bounded fuzz run: the seed corpus (read-only) plus a scratch corpus, 20 s or 200k runs.
set -euo pipefail
fuzzer=$1
seeds=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$fuzzer" -max_total_time=20 -runs=200000 -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$scratch" "$seeds" 2>&1 | tail -15
