#!/usr/bin/env bash
# Sets everything up, builds chring and runs `chring demo` with its
# built-in defaults. Extra arguments go to `chring demo`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
exec build/src/cli/chring demo "$@"
