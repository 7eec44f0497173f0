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
# AB_ROWS=lookups or AB_ROWS=updates runs only those rows (default: all).
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

# net BUILD OP NODES COUNT FUNCTION...: count() less the same run with
# COUNT 0, for an OP whose setup calls the measured FUNCTIONs too.
net() {
  local build=$1 op=$2 nodes=$3 n=$4 k z
  shift 4
  k=$(count "$build" "$op" "$nodes" "$n" "$@")
  z=$(count "$build" "$op" "$nodes" 0 "$@")
  [ -n "$k" ] && [ -n "$z" ] || return 0
  awk -v k="$k" -v z="$z" 'BEGIN { split(k, x, " "); split(z, y, " "); print x[1] - y[1], x[2] - y[2] }'
}

# row OP NODES COUNT FUNCTION...; with ROW_NET=1, net() instead of count().
row() {
  local op=$1 nodes=$2 n=$3 a b how=count
  shift 3
  [ "${ROW_NET:-0}" = 1 ] && how=net
  a=$($how "$build_a" "$op" "$nodes" "$n" "$@")
  b=$($how "$build_b" "$op" "$nodes" "$n" "$@")
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
rows=${AB_ROWS:-all}
if [ "$rows" != updates ]; then
  for nodes in 10 100 1000; do row ring_lookup $nodes 100000 chr_ring_lookup; done
  for nodes in 10 100 1000; do row snapshot_lookup $nodes 100000 chr_snapshot_lookup; done
  for nodes in 10 100 1000; do row ring_replicas3 $nodes 100000 chr_ring_replicas; done
  for nodes in 10 100 1000; do row snapshot_replicas3 $nodes 100000 chr_snapshot_replicas; done
fi
if [ "$rows" != lookups ]; then
  # Each round adds and removes one node; the add rows count the adds, the
  # remove rows the removes, as bench_update times them.
  row add_one_node 100 20 chr_ring_add
  row add_one_node 1000 4 chr_ring_add
  row remove_one_node 100 20 chr_ring_remove
  row remove_one_node 1000 4 chr_ring_remove
  # One member's weight, to 2 and back; batches of 12 changes, each undoing
  # the one before (setup builds the ring with chr_ring_apply: net counts).
  row reweight_one_node 100 20 chr_ring_set_weight
  row reweight_one_node 1000 4 chr_ring_set_weight
  ROW_NET=1 row apply_batch 100 20 chr_ring_apply
  ROW_NET=1 row apply_batch 1000 4 chr_ring_apply
  # Every member to weight 2 (an update: 131,072 buckets hold 200,000
  # tokens) and back to 1 (a full build: 100,000 tokens no longer fill the
  # buckets), as in bench_update's reload_every_member.
  ROW_NET=1 row reload_every_member 100000 2 chr_ring_apply_text
  row build_from_scratch 100 5 chr_ring_new chr_ring_apply chr_ring_free
  row build_from_scratch 1000 2 chr_ring_new chr_ring_apply chr_ring_free
fi
