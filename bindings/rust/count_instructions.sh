#!/usr/bin/env bash
# Instructions per key of each call in examples/bench_lookup.rs, counted by
# callgrind inside that case's function only (--toggle-collect), one round
# over the 2^18 keys at each of the 3 ring sizes. Repeatable whatever else
# the machine runs, where timings on a busy host are not.
#
#   meson devenv -C BUILD -w bindings/rust ./count_instructions.sh
#
# Needs valgrind; builds the example in release mode first.
set -euo pipefail
cd "$(dirname "$0")"
command -v valgrind >/dev/null || { echo "count_instructions.sh: valgrind not found" >&2; exit 1; }
cargo build --release --offline --example bench_lookup >&2
bin=${CARGO_TARGET_DIR:-target}/release/examples/bench_lookup
echo '| call | instructions per key (10, 100 and 1,000 nodes together) |'
echo '|---|---|'
for f in c_snapshot_lookup snapshot_lookup c_ring_lookup ring_lookup c_batch lookup_batch; do
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "--toggle-collect=bench_lookup::$f" "$bin" 1 2>&1 |
    awk -v f="$f" '/Collected :/ { printf "| `%s` | %.1f |\n", f, $4 / (3 * 262144) }'
done
