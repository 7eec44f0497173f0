#!/usr/bin/env bash
# A/B comparison of two release builds of chring with the same benchmarks:
#
#   tests/bench/ab.sh BUILD_A BUILD_B [ROUNDS]        default ROUNDS: 5
#
# Each round runs every program once from each build, in alternating order
# (A then B, then B then A), so a burst of other work on the machine falls
# on both sides alike. Each run is a short repetition set; the table shows,
# per benchmark, the median over rounds of each side and B/A (above 1: B is
# slower). Both builds must already contain the benchmark programs
# (ninja -C BUILD tests/bench/bench_lookup tests/bench/bench_update).
#
# Environment: AB_PROGRAMS (default "lookup update"), AB_FILTER (a
# --benchmark_filter regex, default all), AB_MIN_TIME (default 0.3),
# AB_SAME_BINARY=1: run BUILD_B's benchmark programs on both sides, each
# against its own build's src/libchring.so (LD_LIBRARY_PATH overrides the
# RUNPATH), so only the library differs; BUILD_A then needs only the
# library and the xxhash plugin built. Programs that link the core
# statically (bench_scale, bench_memory) cannot be compared this way.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 BUILD_A BUILD_B [ROUNDS]" >&2; exit 2; }
build_a=$(cd "$1" && pwd)
build_b=$(cd "$2" && pwd)
rounds=${3:-5}
programs=${AB_PROGRAMS:-lookup update}
filter=${AB_FILTER:-.}
min_time=${AB_MIN_TIME:-0.3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

plugin_path() {
  find "$1/plugins" -name 'chring-*.so' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:
}

run_side() {  # run_side LABEL BUILD ROUND
  local label=$1 build=$2 round=$3 program bin_dir=$2 libs=
  if [ "${AB_SAME_BINARY:-0}" = 1 ]; then bin_dir=$build_b; libs=$build/src; fi
  for program in $programs; do
    LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    CHRING_PLUGIN_PATH=$(plugin_path "$build") "$bin_dir/tests/bench/bench_$program" \
      --benchmark_filter="$filter" \
      --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
      --benchmark_min_time="$min_time" \
      --benchmark_out="$out/$label.$program.$round.json" --benchmark_out_format=json \
      >/dev/null 2>&1 || { echo "ab.sh: bench_$program of $build failed" >&2; exit 1; }
  done
}

for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds..." >&2
  if [ $((round % 2)) -eq 1 ]; then
    run_side a "$build_a" "$round"; run_side b "$build_b" "$round"
  else
    run_side b "$build_b" "$round"; run_side a "$build_a" "$round"
  fi
done

echo "A/B: A = $1, B = $2; $rounds rounds, medians of per-round medians;" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 - "$out" <<'EOF'
import glob, json, os, statistics, sys
d = sys.argv[1]
vals = {"a": {}, "b": {}}
order = []
for path in sorted(glob.glob(os.path.join(d, "*.json"))):
    side = os.path.basename(path).split(".")[0]
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        t = b["real_time"] if "manual_time" in name else b["cpu_time"]
        vals[side].setdefault(name, []).append((t, b["time_unit"]))
        if name not in order:
            order.append(name)
print("| benchmark | A | B | B/A |")
print("|---|--:|--:|--:|")
worst = 0.0
for name in order:
    if name not in vals["a"] or name not in vals["b"]:
        continue
    a = statistics.median(t for t, _ in vals["a"][name])
    b = statistics.median(t for t, _ in vals["b"][name])
    unit = vals["a"][name][0][1]
    ratio = b / a if a else float("nan")
    worst = max(worst, ratio)
    print(f"| {name} | {a:,.1f} {unit} | {b:,.1f} {unit} | {ratio:.3f} |")
print()
print(f"largest B/A: {worst:.3f}")
EOF
