#!/usr/bin/env bash
# Sets everything up and runs the whole test suite:
#   1. normal build (debugoptimized): every suite, including install and bindings;
#   2. ASan+UBSan build: every suite that runs in-process (bindings and the
#      install check skip themselves there);
#   3. TSan build: the concurrency suite.
# Ends with one line "N passed, N failed" and exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh || { echo "deps: installing packages failed"; echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0

# run_build DIR "MESON SETUP ARGS" "MESON TEST ARGS"
run_build() {
  local dir=$1 setup_args=$2 test_args=$3 log
  log=$(mktemp)
  echo "=== $dir: meson setup $setup_args"
  if [ ! -f "$dir/build.ninja" ]; then
    # shellcheck disable=SC2086
    meson setup "$dir" $setup_args >"$log" 2>&1 || { cat "$log"; failed=$((failed + 1)); return; }
  fi
  if ! ninja -C "$dir" >"$log" 2>&1; then
    tail -50 "$log"; echo "=== $dir: build FAILED"; failed=$((failed + 1)); return
  fi
  # shellcheck disable=SC2086
  meson test -C "$dir" --print-errorlogs --num-processes 2 $test_args 2>&1 | tee "$log"
  local ok fail
  ok=$(awk '/^Ok:/ {print $2}' "$log"); fail=$(awk '/^(Fail|Timeout|Unexpected Pass):/ {s += $NF} END {print s + 0}' "$log")
  if [ -z "$ok" ]; then fail=$((fail + 1)); ok=0; fi   # meson test itself did not run
  passed=$((passed + ok)); failed=$((failed + fail))
  rm -f "$log"
}

export CHR_STRESS_SECONDS=${CHR_STRESS_SECONDS:-3}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

run_build build "" ""
CC=clang CXX=clang++ run_build build-asan "-Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled" "--no-suite install"
run_build build-tsan "-Db_sanitize=thread -Db_lundef=false -Dbenchmarks=disabled -Dcli=disabled" "--suite concurrency"

echo "${passed} passed, ${failed} failed"
[ "$failed" -eq 0 ]
