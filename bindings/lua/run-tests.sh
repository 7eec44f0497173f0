#!/bin/sh
# Runs the Lua binding's tests with luajit against the libchring that
# pkg-config finds (PKG_CONFIG_PATH=<build>/meson-uninstalled for a build
# tree, or an installed chring.pc). CHRING_LIB, if set, names the library
# file instead; CHRING_INCLUDE_DIR the directory holding chring.h.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
LUAJIT=${LUAJIT:-luajit}
# From the -L and -I flags, not the libdir/includedir variables: in Meson's
# uninstalled .pc those name no real directory.
if [ -z "${CHRING_LIB:-}" ]; then
    for flag in $(pkg-config --libs-only-L chring); do
        dir=${flag#-L}
        if [ -e "$dir/libchring.so" ]; then CHRING_LIB="$dir/libchring.so"; break; fi
    done
    : "${CHRING_LIB:=libchring.so.1}"   # a system install: the loader's own search
fi
if [ -z "${CHRING_INCLUDE_DIR:-}" ]; then
    for flag in $(pkg-config --cflags-only-I chring) "-I$(pkg-config --variable=includedir chring)"; do
        dir=${flag#-I}
        if [ -f "$dir/chring.h" ]; then CHRING_INCLUDE_DIR=$dir; break; fi
    done
    : "${CHRING_INCLUDE_DIR:=/usr/include}"
fi
export CHRING_LIB CHRING_INCLUDE_DIR
export LUA_PATH="$here/lib/?.lua;$here/t/?.lua;;"
if [ "${1:-}" = --bench ]; then   # the benchmark (bench.lua) instead of the tests
    shift
    exec "$LUAJIT" "$here/bench.lua" "$@"
fi
exec "$LUAJIT" "$here/t/run.lua" "$@"
