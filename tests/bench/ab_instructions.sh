#!/usr/bin/env bash
# A/B of two builds of libchring.so by instruction counts:
#
#   tests/bench/ab_instructions.sh BUILD_A BUILD_B
#
# Runs BUILD_B's tests/bench/fixed_work under callgrind against each build's
# src/libchring.so (LD_LIBRARY_PATH overrides the binary's RUNPATH), counting
# only inside the measured API calls (--toggle-collect), with callgrind's
# cache simulation, and prints per operation the instructions and the
# simulated first-level data-cache misses (reads + writes) of each side, with
# B/A. Counts are repeatable for the same binaries and inputs whatever else
# the machine runs, so this separates a change of 1% where timed runs on a
# busy host cannot; what it does not show is timing itself (code alignment,
# branch prediction): ab.sh times the same rows.
# Needs valgrind. BUILD_A may be any older build with src/libchring.so.1.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BUILD_A BUILD_B" >&2; exit 2; }
build_a=$(cd "$1" && pwd)
build_b=$(cd "$2" && pwd)
driver=$build_b/tests/bench/fixed_work
[ -x "$driver" ] || { echo "ab_instructions.sh: $driver not built (ninja -C $2 tests/bench/fixed_work)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "ab_instructions.sh: valgrind not found" >&2; exit 1; }

plugin_path() {
  find "$1/plugins" -name 'chring-*.so' -printf '%h\n' 2>/dev/null | sort -u | paste -sd:
}

# count BUILD OP NODES COUNT FUNCTION...: "instructions D1-misses" inside FUNCTIONs.
count() {
  local build=$1 op=$2 nodes=$3 n=$4 toggles=() f
  shift 4
  for f in "$@"; do toggles+=("--toggle-collect=$f"); done
  CHRING_PLUGIN_PATH=$(plugin_path "$build") LD_LIBRARY_PATH=$build/src \
    valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file=/dev/null "${toggles[@]}" \
    "$driver" "$op" "$nodes" "$n" 2>&1 |
    awk '/Collected :/ { sub(/.*Collected : /, ""); print $1, $5 + $6 }'  # Ir Dr Dw I1mr D1mr D1mw ...
}

# row OP NODES COUNT FUNCTION...
row() {
  local op=$1 nodes=$2 n=$3 a b
  shift 3
  a=$(count "$build_a" "$op" "$nodes" "$n" "$@")
  b=$(count "$build_b" "$op" "$nodes" "$n" "$@")
  [ -n "$a" ] && [ -n "$b" ] || { echo "ab_instructions.sh: $op/$nodes failed" >&2; exit 1; }
  awk -v op="$op/$nodes" -v a="$a" -v b="$b" -v n="$n" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    printf "| %s | %.1f | %.1f | %.4f | %.2f | %.2f | %.4f |\n", op,
      x[1] / n, y[1] / n, y[1] / x[1], x[2] / n, y[2] / n, (x[2] ? y[2] / x[2] : 1)
  }'
}

echo "Instructions per operation (callgrind), A = $1, B = $2, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| operation | instructions A | B | B/A | D1 misses A | B | B/A |"
echo "|---|--:|--:|--:|--:|--:|--:|"
for nodes in 10 100 1000; do row ring_lookup $nodes 100000 chr_ring_lookup; done
for nodes in 10 100 1000; do row snapshot_lookup $nodes 100000 chr_snapshot_lookup; done
for nodes in 10 100 1000; do row ring_replicas3 $nodes 100000 chr_ring_replicas; done
for nodes in 10 100 1000; do row snapshot_replicas3 $nodes 100000 chr_snapshot_replicas; done
# Each round adds and removes one node; the add rows count the adds, the
# remove rows the removes, as bench_update times them.
row add_one_node 100 20 chr_ring_add
row add_one_node 1000 4 chr_ring_add
row remove_one_node 100 20 chr_ring_remove
row remove_one_node 1000 4 chr_ring_remove
row build_from_scratch 100 5 chr_ring_new chr_ring_apply chr_ring_free
row build_from_scratch 1000 2 chr_ring_new chr_ring_apply chr_ring_free
