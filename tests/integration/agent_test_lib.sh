# Sourced by the shell tests that run the headroom binary on the test control plane: the
# fail-in-CI / skip-elsewhere rule when the control plane is not built, then HEADROOM_TESTENV_DIR.
# Expects $src (the source tree).
if ! testenv=$("$src/tests/testenv/build.sh" --check 2>&1); then
  if [ "${HEADROOM_REQUIRE_TESTENV:-}" = 1 ]; then echo "FAIL: control plane unavailable: $testenv"; exit 1; fi
  echo "SKIP: control plane unavailable (set HEADROOM_REQUIRE_TESTENV=1 to fail instead): $testenv"; exit 77
fi
export HEADROOM_TESTENV_DIR=$testenv
