#!/bin/sh
# Runs the Lua binding's tests with luajit against the libchring that
# pkg-config finds (PKG_CONFIG_PATH=<build>/pkgconfig for a build tree).
# CHRING_LIB, if set, names the library file instead.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
LUAJIT=${LUAJIT:-luajit}
if [ -z "${CHRING_LIB:-}" ]; then
    CHRING_LIB="$(pkg-config --variable=libdir chring)/libchring.so"
fi
: "${CHRING_INCLUDE_DIR:=$(pkg-config --variable=includedir chring)}"
export CHRING_LIB CHRING_INCLUDE_DIR
export LUA_PATH="$here/lib/?.lua;$here/t/?.lua;;"
exec "$LUAJIT" "$here/t/run.lua" "$@"
