#!/usr/bin/env bash
# Builds the benchmarks, runs every one of them with repetitions and prints
# one table of medians and ratios (Markdown, as in RESULTS.md).
#
#   tests/bench/run.sh [builddir]      default builddir: build-bench
#
# The build dir is configured with --buildtype=release if it does not exist.
# Environment: BENCH_REPETITIONS (default 9), BENCH_MIN_TIME (seconds per
# repetition, default 0.5). Repetitions of the benchmarks of one program are
# run in random order, so that a burst of other work on the machine does not
# fall on one of them only. Raw JSON is kept in <builddir>/bench-results/.
# Close other heavy work first: the machine has 2 cores and the reader
# benchmarks use both.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=${1:-$source_dir/build-bench}
repetitions=${BENCH_REPETITIONS:-9}
min_time=${BENCH_MIN_TIME:-0.5}

if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$source_dir" --buildtype=release >/dev/null
fi
buildtype=$(meson introspect --buildoptions "$build_dir" |
  python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "buildtype"))')
if [ "$buildtype" != release ]; then
  echo "warning: $build_dir is buildtype=$buildtype, not release: numbers are not comparable" >&2
fi
# Only what the benchmarks need (their programs, libchring, the hash
# plugins), so work in progress elsewhere in the tree does not stop a run.
targets=$(meson introspect --targets "$build_dir" | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    if t["type"] == "shared module" or os.path.basename(t["filename"][0]).startswith("bench_"):
        print(os.path.relpath(t["filename"][0], sys.argv[1]))' "$build_dir")
# shellcheck disable=SC2086
if ! ninja -C "$build_dir" -j2 $targets >"$build_dir/bench-build.log" 2>&1; then
  tail -40 "$build_dir/bench-build.log" >&2
  echo "run.sh: the build failed (log: $build_dir/bench-build.log)" >&2
  exit 1
fi

bench_dir=$build_dir/tests/bench
if [ ! -x "$bench_dir/bench_lookup" ]; then
  echo "run.sh: no benchmark programs in $bench_dir (is Google Benchmark or libmemcached missing?)" >&2
  exit 1
fi
# bench_memory links the core statically and finds hash plugins through this.
CHRING_PLUGIN_PATH=$(find "$build_dir/plugins" -name 'chring-*.so' -printf '%h\n' | sort -u | paste -sd:)
export CHRING_PLUGIN_PATH

load_before=$(cut -d' ' -f1 /proc/loadavg)
results=$build_dir/bench-results
mkdir -p "$results"
rm -f "$results"/*.json "$results"/*.txt
for program in lookup update threads memory search; do
  echo "running bench_$program ($repetitions repetitions of ${min_time}s)..." >&2
  "$bench_dir/bench_$program" \
    --benchmark_repetitions="$repetitions" \
    --benchmark_report_aggregates_only=true \
    --benchmark_enable_random_interleaving=true \
    --benchmark_min_time="$min_time" \
    --benchmark_out="$results/$program.json" --benchmark_out_format=json \
    >"$results/$program.txt" 2>&1 || { cat "$results/$program.txt" >&2; exit 1; }
done

echo "chring core benchmarks: medians of $repetitions repetitions of ${min_time}s;" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'); 1-min load average $load_before before, $(cut -d' ' -f1 /proc/loadavg) after"
echo
python3 "$source_dir/tests/bench/report.py" "$results"/*.json
