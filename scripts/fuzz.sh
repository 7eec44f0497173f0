#!/usr/bin/env bash
# scripts/fuzz.sh NAME SECONDS [LIBFUZZER ARGS...]
# A long run of one fuzzer (tests/fuzz/fuzz_NAME.cpp; names: api_ops,
# ringfile_parser, ringfile_roundtrip, plugin_descriptors, plugin_elf) in
# one process (no -jobs:
# the machine is shared):
#   - builds a clang ASan+UBSan build in $FUZZ_BUILD (default build-fuzz) if missing;
#   - runs for SECONDS (-max_total_time) from the committed corpus
#     tests/fuzz/corpus/NAME and the regression inputs tests/fuzz/regressions/NAME,
#     writing new inputs to $FUZZ_BUILD/fuzz-out/NAME/new;
#   - merges the inputs that add coverage over the committed corpus into
#     $FUZZ_BUILD/fuzz-out/NAME/merged (copy them to the corpus to keep them);
#   - prints the executions and the final coverage (cov: edges, ft: features).
# Crash inputs go to $FUZZ_BUILD/fuzz-out/NAME/crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
    echo "usage: scripts/fuzz.sh NAME SECONDS [LIBFUZZER ARGS...]" >&2
    exit 2
fi
name=$1 seconds=$2
shift 2
build=${FUZZ_BUILD:-build-fuzz}
corpus=tests/fuzz/corpus/$name
regressions_dir=""
[ -d "tests/fuzz/regressions/$name" ] && regressions_dir=tests/fuzz/regressions/$name
[ -d "$corpus" ] || { echo "fuzz.sh: no corpus $corpus (names: $(ls tests/fuzz/corpus | tr '\n' ' '))" >&2; exit 2; }

if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false \
        -Dfuzzers=enabled -Dbindings=disabled -Dnginx=disabled -Dbenchmarks=disabled
fi
ninja -C "$build" >/dev/null   # the harness and the plugins it loads
exe=$build/tests/fuzz/fuzz_$name
[ -x "$exe" ] || { echo "fuzz.sh: $exe was not built (is the compiler clang?)" >&2; exit 1; }

out=$build/fuzz-out/$name
mkdir -p "$out/new" "$out/merged"
log=$out/run.log
echo "fuzz.sh: $exe -max_total_time=$seconds $* (log: $log)"
set +e
"$exe" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/" "$@" \
    "$out/new" "$corpus" ${regressions_dir} >"$log" 2>&1
rc=$?
set -e

# The new inputs that add coverage over the committed corpus.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$corpus"/* "$tmp"/ 2>/dev/null || true
"$exe" -merge=1 "$tmp" "$out/new" >"$out/merge.log" 2>&1 || true
added=0
for f in "$tmp"/*; do
    b=$(basename "$f")
    if [ ! -e "$corpus/$b" ]; then cp "$f" "$out/merged/"; added=$((added + 1)); fi
done

# libFuzzer writes a tab after "#N" ("#4096\tpulse  cov: ..."), not a space.
grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED|RELOAD)' "$log" | tail -1 || true
grep -E 'stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb' "$log" || true
echo "fuzz.sh: $added new corpus entries in $out/merged; exit status $rc"
if [ "$rc" -ne 0 ]; then
    grep -E 'ERROR|check failed|finding|SUMMARY|Test unit written' "$log" | head -20 || true
fi
exit "$rc"
