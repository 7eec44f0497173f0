#!/usr/bin/env bash
# Sets everything up, builds chring and runs `chring demo` with its
# built-in defaults. Extra arguments go to `chring demo`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
# `meson devenv` gives the uninstalled tool the build's plugins
# (CHRING_PLUGIN_PATH): the library does not look for its build tree.
exec meson devenv -C build -w "$PWD" build/src/cli/chring demo "$@"
