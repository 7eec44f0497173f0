#!/usr/bin/env bash
# Instructions per key of every lookup benchmark in bench_test.go, counted
# by callgrind inside the benchmark loop only, on its own thread: with
# CHRING_COUNT_INSTRUCTIONS set, each loop switches counting on and off
# (CALLGRIND_TOGGLE_COLLECT, cref.go), so the count is the binding call or
# the C reference with its cgo transition, and none of the setup or the Go
# runtime's other threads. Counts are repeatable whatever else the machine
# runs, where timings on a busy host are not.
#
#   meson devenv -C BUILD -w bindings/go ./count_instructions.sh [NODES...]
#
# (default 10 100 1000). Prints one Markdown table row per call. Needs
# valgrind and its header valgrind/callgrind.h; Go's asynchronous
# preemption signals, which callgrind cannot follow, are turned off.
set -euo pipefail
cd "$(dirname "$0")"
command -v valgrind >/dev/null || { echo "count_instructions.sh: valgrind not found" >&2; exit 1; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 100 1000)
bin=$(mktemp -d)/chring.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" .

# count CASE NODES KEYS: instructions per key (run1's one key + KEYS).
count() {
  CHRING_COUNT_INSTRUCTIONS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
      --collect-atstart=no --callgrind-out-file=/dev/null "$bin" -test.run '^$' \
      -test.bench "^BenchmarkLookup\$/^nodes=$2\$/^$1\$" -test.benchtime="$3x" 2>&1 |
    awk -v n="$3" '/Collected :/ { printf "%.1f", $4 / (n + 1) }'
}

cases=(C_snapshot_lookup Snapshot.LookupIndex Snapshot.Lookup C_ring_lookup Ring.Lookup
       C_snapshot_lookup_batch Snapshot.LookupKeys Snapshot.LookupBatch Snapshot.LookupNodes)
printf '| call |'; for n in "${sizes[@]}"; do printf ' %s nodes |' "$n"; done; printf '\n|---|'
for _ in "${sizes[@]}"; do printf -- '---|'; done; printf '\n'
for c in "${cases[@]}"; do
  case $c in
    *batch|*Keys|*Batch|*Nodes) keys=102400 ;;
    *) keys=20000 ;;
  esac
  printf '| `%s` |' "$c"
  for n in "${sizes[@]}"; do printf ' %s |' "$(count "$c" "$n" "$keys")"; done
  printf '\n'
done
