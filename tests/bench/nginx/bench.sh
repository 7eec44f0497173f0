#!/usr/bin/env bash
# Benchmark: requests/s through the chring upstream module (and the OpenResty
# example) vs nginx's built-in `hash $request_uri consistent;` over the same
# loopback backends, with wrk. Prints a Markdown report (tests/bench/nginx/RESULTS.md
# holds a committed one). Not part of the pass/fail suite.
#
#   bash tests/bench/nginx/bench.sh [BUILD_DIR] [bench.py options...]
#
# BUILD_DIR defaults to build/ (configured and built here if needed);
# options: --seconds 5 --rounds 2 --threads 2 --connections 50 --backends 4.
set -euo pipefail
cd "$(dirname "$0")/../../.."

build=${1:-build}
[ $# -gt 0 ] && shift
command -v wrk >/dev/null || { echo "bench: wrk is not installed (scripts/deps.sh)" >&2; exit 1; }
[ -f "$build/build.ninja" ] || meson setup "$build" >/dev/null
ninja -C "$build" -j2 >/dev/null
# The library does not look for its build tree: name the build's plugins.
CHRING_PLUGIN_PATH=$(find "$build/plugins" -name 'chring-*.so' -printf '%h\n' | sort -u | paste -sd:)
export CHRING_PLUGIN_PATH
exec python3 tests/bench/nginx/bench.py --build "$build" "$@"
