#!/usr/bin/env bash
# Writes abi/libchring.abi, the ABI baseline that tests/core/check_abi.py
# (test 'abi_baseline', suite core) compares the built library against.
# Run at each release, from a normal build (debugoptimized, no sanitizer),
# and commit the result with the release, or with a commit that appends a
# field to a growable struct (docs/compatibility.md, "The ABI
# baseline"): it records what the release promised, so refreshing it for
# any other change would hide a break.
#
# Usage: scripts/abi-baseline.sh [BUILD_DIR]   (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
lib="$build/src/libchring.so.1"
command -v abidw >/dev/null || { echo "abidw not found: apt-get install abigail-tools" >&2; exit 1; }
[ -e "$lib" ] || { echo "no $lib: build the library first (ninja -C $build)" >&2; exit 1; }
readelf -S -W "$lib" | grep -q '\.debug_info' ||
  { echo "$lib has no DWARF: configure with -Ddebug=true (debugoptimized is)" >&2; exit 1; }
# The same options as tests/core/check_abi.py (ABIDW_OPTIONS): the
# exported functions and the public types they reach, no build paths.
abidw --no-corpus-path --no-comp-dir-path --short-locs --drop-private-types \
  --drop-undefined-syms --exported-interfaces-only --headers-dir "$root/include/c" \
  --out-file "$root/abi/libchring.abi" "$lib"
echo "wrote $root/abi/libchring.abi ($(wc -c < "$root/abi/libchring.abi") bytes)"
