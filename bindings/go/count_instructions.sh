#!/usr/bin/env bash
# Instructions per key of every lookup benchmark in bench_test.go, counted
# by callgrind for the whole process at two numbers of keys: the difference
# over the extra keys is the cost of one key (the binding call or the C
# reference, with the cgo transition), setup excluded. The Go runtime's own
# threads (sysmon) are counted too, so compare rows with each other rather
# than with the C library's own counts. (--toggle-collect cannot be used:
# cgo's switch to the system stack looks like a return to callgrind.)
#
#   meson devenv -C BUILD -w bindings/go ./count_instructions.sh [NODES...]
#
# (default 10 100 1000). Prints one Markdown table row per call. Needs
# valgrind; Go's asynchronous preemption signals, which callgrind cannot
# follow, are turned off.
set -euo pipefail
cd "$(dirname "$0")"
command -v valgrind >/dev/null || { echo "count_instructions.sh: valgrind not found" >&2; exit 1; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 100 1000)
bin=$(mktemp -d)/chring.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" .

# total CASE NODES KEYS: instructions of the whole run.
total() {
  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" \
      -test.run '^$' -test.bench "^BenchmarkLookup\$/^nodes=$2\$/^$1\$" -test.benchtime="$3x" 2>&1 |
    awk '/Collected :/ { print $4 }'
}

# count CASE NODES KEYS: instructions per key, from runs of KEYS and 4*KEYS keys.
count() {
  local a b
  a=$(total "$1" "$2" "$3")
  b=$(total "$1" "$2" $((4 * $3)))
  awk -v a="$a" -v b="$b" -v n="$3" 'BEGIN { printf "%.0f", (b - a) / (3 * n) }'
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
