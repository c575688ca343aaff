#!/usr/bin/env bash
# An integration binary pointed at an empty testenv cache: with HEADROOM_REQUIRE_TESTENV=1 every
# test fails naming the cause; without it every test is skipped with the same reason.
set -euo pipefail
bin=$1
empty=$(mktemp -d)
trap 'rm -rf "$empty"' EXIT
set +e
out=$(HEADROOM_TESTENV_CACHE=$empty HEADROOM_REQUIRE_TESTENV=1 "$bin" --gtest_color=no 2>&1); rc=$?
set -e
[ "$rc" != 0 ] || { echo "FAIL: required testenv missing but the binary passed"; echo "$out"; exit 1; }
grep -q "HEADROOM_REQUIRE_TESTENV=1 but the control plane is unavailable: control plane binaries are not built" <<<"$out" ||
  { echo "FAIL: no clear failure message"; echo "$out"; exit 1; }
grep -q "FAILED TEST" <<<"$out" || { echo "FAIL: tests did not fail"; exit 1; }

out=$(HEADROOM_TESTENV_CACHE=$empty HEADROOM_REQUIRE_TESTENV= "$bin" --gtest_color=no 2>&1)
grep -q "control plane unavailable (set HEADROOM_REQUIRE_TESTENV=1 to fail instead)" <<<"$out" ||
  { echo "FAIL: no skip reason"; echo "$out"; exit 1; }
grep -q "\[  SKIPPED \] 3 tests" <<<"$out" || { echo "FAIL: tests were not skipped"; echo "$out"; exit 1; }
echo "testenv unavailable policy: 1 passed, 0 failed"
