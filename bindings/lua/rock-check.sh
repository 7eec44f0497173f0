#!/bin/sh
# `luarocks make` of chring-*.rockspec into a temporary tree, against the
# libchring that pkg-config names (its -I and -L directories as CHRING_INCDIR
# and CHRING_LIBDIR: for a build tree, <build>/meson-uninstalled), then
# LuaJIT loads the installed rock through `luarocks path` and routes a key.
# LUAJIT and LUAROCKS name the programs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
luajit=${LUAJIT:-luajit}
luarocks=${LUAROCKS:-luarocks}
work=$(mktemp -d "${TMPDIR:-/tmp}/chring-rock.XXXXXX")
trap 'rm -rf "$work"' EXIT

incdir= libdir=
for flag in $(pkg-config --cflags-only-I chring); do
    [ -f "${flag#-I}/chring.h" ] && incdir=${flag#-I} && break
done
for flag in $(pkg-config --libs-only-L chring); do
    [ -e "${flag#-L}/libchring.so" ] && libdir=${flag#-L} && break
done
: "${incdir:=$(pkg-config --variable=includedir chring)}"
: "${libdir:=$(pkg-config --variable=libdir chring)}"

rockspec=$(ls "$here"/chring-*.rockspec)
(cd "$here" && "$luarocks" --lua-version 5.1 make --tree "$work/tree" "$rockspec" \
    CHRING_INCDIR="$incdir" CHRING_LIBDIR="$libdir") >"$work/make.log" 2>&1 \
    || { cat "$work/make.log" >&2; exit 1; }
lua_path=$("$luarocks" --lua-version 5.1 path --tree "$work/tree" --lr-path)
# Every module chring loads (chring.ring, chring.follow, ...) must come from
# the rock: the count of those found elsewhere is printed, and must be 0.
out=$(LUA_PATH="$lua_path" CHRING_LIB="$libdir/libchring.so.1" ROCK_TREE="$work/tree/" "$luajit" -e '
    local chring = require "resty.chring"
    local ring = assert(chring.new())
    assert(ring:add("cache-a", 1)); assert(ring:add("cache-b", 2))
    local tree, modules, outside = os.getenv("ROCK_TREE"), 0, 0
    for name in pairs(package.loaded) do
        if name:match("^chring%.") then
            modules = modules + 1
            local path = package.searchpath(name, package.path)
            if not path or path:sub(1, #tree) ~= tree then outside = outside + 1 end
        end
    end
    io.write(package.searchpath("chring", package.path), " ", ring:lookup("user:42"),
             " ", modules, " modules, ", outside, " outside the rock")')
case $out in
    "$work/tree/"*" cache-b "[1-9]*" modules, 0 outside the rock")
        echo "luarocks make: $(basename "$rockspec") installed; $out" ;;
    *) echo "the rock's chring did not route user:42 to cache-b from the rock alone: $out" >&2; exit 1 ;;
esac
