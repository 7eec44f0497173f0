#!/usr/bin/env bash
# Sets everything up and runs the whole test suite:
#   1. normal build (debugoptimized): every suite, including install and bindings;
#   2. ASan+UBSan build with clang: every suite that runs in-process (bindings
#      and the install check skip themselves there), the libFuzzer harnesses
#      (suite 'fuzz', built only with clang) included;
#   3. TSan build: the concurrency suite;
#   4. the Debian packages: built, installed, checked and purged (counted as one);
#   5. the Windows build (MinGW-w64 cross build, docs/windows.md): suite 'windows'
#      under Wine, agreement with build/ included; skipped only if Wine cannot start.
# Counts come from each run's meson-logs/testlog.json (one JSON object per
# test), not from meson's text output. Ends with one line
# "N passed, N failed, N skipped" and exits non-zero if anything failed; a
# build dir whose setup, build or meson test did not run counts as a failure.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh || { echo "deps: installing packages failed"; echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
skipped=0

# count_results TESTLOG: prints "passed failed skipped" from meson's testlog.json.
count_results() {
  python3 - "$1" <<'PY'
import json, sys
passed = failed = skipped = 0
with open(sys.argv[1]) as log:
    for line in log:
        if not line.strip():
            continue
        result = json.loads(line).get("result")
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:  # FAIL, TIMEOUT, UNEXPECTEDPASS, ERROR, or anything unknown
            failed += 1
print(passed, failed, skipped)
PY
}

# The C++ compiler id (gcc, clang) a configured build dir uses, or nothing.
configured_compiler() {
  python3 - "$1/meson-info/intro-compilers.json" <<'PY' 2>/dev/null
import json, sys
print(json.load(open(sys.argv[1]))["host"]["cpp"]["id"])
PY
}

# run_build DIR "MESON SETUP ARGS" "MESON TEST ARGS" [COMPILER]
# COMPILER (clang) sets CC and CXX for the setup; a dir configured with
# another compiler is wiped and set up again.
run_build() {
  local dir=$1 setup_args=$2 test_args=$3 compiler=${4:-} log testlog rc counts ok fail skip
  local -a setup_env=()
  [ "$compiler" = clang ] && setup_env=(CC=clang CXX=clang++)
  log=$(mktemp)
  echo "=== $dir: ${setup_env[*]} meson setup $setup_args"
  if [ -f "$dir/build.ninja" ] && [ -n "$compiler" ] && [ "$(configured_compiler "$dir")" != "$compiler" ]; then
    echo "=== $dir: configured with $(configured_compiler "$dir"), not $compiler: setting it up again"
    rm -rf "$dir"
  fi
  if [ ! -f "$dir/build.ninja" ]; then
    # shellcheck disable=SC2086
    env "${setup_env[@]}" meson setup "$dir" $setup_args >"$log" 2>&1 || { cat "$log"; failed=$((failed + 1)); rm -f "$log"; return; }
  fi
  if ! ninja -C "$dir" >"$log" 2>&1; then
    tail -50 "$log"; echo "=== $dir: build FAILED"; failed=$((failed + 1)); rm -f "$log"; return
  fi
  rm -f "$log"
  testlog=$dir/meson-logs/testlog.json
  rm -f "$testlog"   # a stale log from an earlier run must not count
  # shellcheck disable=SC2086
  meson test -C "$dir" --print-errorlogs --num-processes 2 $test_args
  rc=$?
  if [ ! -s "$testlog" ] || ! counts=$(count_results "$testlog"); then
    echo "=== $dir: meson test did not run (exit $rc, no $testlog)"
    failed=$((failed + 1)); return
  fi
  read -r ok fail skip <<<"$counts"
  if [ "$rc" -ne 0 ] && [ "$fail" -eq 0 ]; then
    echo "=== $dir: meson test exited $rc with no failed test in $testlog"
    fail=1
  fi
  echo "=== $dir: $ok passed, $fail failed, $skip skipped"
  passed=$((passed + ok)); failed=$((failed + fail)); skipped=$((skipped + skip))
}

export CHR_STRESS_SECONDS=${CHR_STRESS_SECONDS:-3}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

run_build build "" ""
run_build build-asan "-Db_sanitize=address,undefined -Db_lundef=false -Dbenchmarks=disabled" "--no-suite install" clang
run_build build-tsan "-Db_sanitize=thread -Db_lundef=false -Dbenchmarks=disabled -Dcli=disabled" "--suite concurrency"

# 4. Debian packages: scripts/package.sh builds them (lintian: no errors); tests/package/run.sh
#    installs them, checks them as a new user would and purges them. As root only.
if [ "$(id -u)" -ne 0 ]; then echo "=== packages: skipped (needs root)"; skipped=$((skipped + 1))
elif nice -n 15 bash scripts/package.sh build-deb && bash tests/package/run.sh build-deb; then passed=$((passed + 1))
else echo "=== packages: FAILED"; failed=$((failed + 1)); fi

# 5. Windows: cmocka cross-built from Debian's source package, the suites under Wine
#    in a Wine prefix of the step's own, whose wineserver is stopped at the end.
export WINEPREFIX=$PWD/build-win-deps/wine
mkdir -p build-win-deps
if ! wine_error=$(bash scripts/cross/wine-run.sh cmd /c exit 0 2>&1 >/dev/null); then
  echo "=== build-win: skipped (Wine cannot start: $(tail -1 <<<"$wine_error"))"; skipped=$((skipped + 1))
elif ! cmocka_tree=$(bash scripts/cross/cmocka-source.sh build-win-deps); then
  echo "=== build-win: FAILED (no cmocka source package)"; failed=$((failed + 1))
else
  CHRING_LINUX_CLI=$PWD/build/src/cli/chring run_build build-win \
    "--cross-file scripts/cross/x86_64-w64-mingw32.txt -Dcmocka_source=$cmocka_tree -Dbindings=disabled -Dnginx=disabled -Dbenchmarks=disabled -Detcd=disabled" \
    "--suite windows"
fi
WINEPREFIX=$WINEPREFIX "$(command -v wineserver || echo /usr/lib/wine/wineserver64)" -k 2>/dev/null || true

echo "${passed} passed, ${failed} failed, ${skipped} skipped"
[ "$failed" -eq 0 ]
