#!/usr/bin/env bash
# Builds the chring upstream module against Debian's nginx-dev sources.
#
#   build.sh PKG_CONFIG_DIR WORK_DIR OUTPUT
#
# PKG_CONFIG_DIR  directory holding chring.pc or chring-uninstalled.pc (a
#                 Meson build's meson-uninstalled/)
# WORK_DIR        scratch copy of nginx's source tree (configure and make
#                 write into it; /usr/share/nginx/src is never written)
# OUTPUT          where the module .so goes
#
# NGINX_SRC overrides the nginx source tree (default /usr/share/nginx/src).
# Configure reruns only when the module's `config`, this script or the
# nginx tree changed; make then recompiles what changed.
set -euo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 PKG_CONFIG_DIR WORK_DIR OUTPUT" >&2
    exit 2
fi

pc_dir=$(realpath "$1")
work=$(realpath -m "$2")
output=$(realpath -m "$3")
module_dir=$(cd "$(dirname "$0")" && pwd)
nginx_src=${NGINX_SRC:-/usr/share/nginx/src}
module=ngx_http_upstream_chring_module

if [ ! -x "$nginx_src/configure" ]; then
    echo "$0: no nginx source tree at $nginx_src (install nginx-dev)" >&2
    exit 1
fi

export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg-config --exists chring || { echo "$0: chring.pc (or chring-uninstalled.pc) not found in $pc_dir" >&2; exit 1; }

# Debian's own configure flags: the module signature (PCRE, gzip, SSL, ...)
# must match the nginx binary that loads the module.
if [ -f "$nginx_src/conf_flags" ]; then
    # shellcheck disable=SC1091
    . "$nginx_src/conf_flags"
else
    NGX_CONF_FLAGS=(--with-compat)
fi

stamp="$work/.chring-configured"
if [ ! -f "$stamp" ] || [ "$module_dir/config" -nt "$stamp" ] || [ "$0" -nt "$stamp" ] \
    || [ "$nginx_src/configure" -nt "$stamp" ] || [ "$(cat "$stamp")" != "$pc_dir" ]; then
    rm -rf "$work"
    mkdir -p "$work"
    cp -a "$nginx_src/." "$work/"
    (
        cd "$work"
        ./configure "${NGX_CONF_FLAGS[@]}" --with-compat \
            --with-cc-opt="-fPIC $(pkg-config --cflags chring)" \
            --add-dynamic-module="$module_dir" >configure.log 2>&1 \
            || { tail -30 configure.log >&2; exit 1; }
    )
    echo "$pc_dir" >"$stamp"
fi

make -s -C "$work" -f objs/Makefile modules >"$work/make.log" 2>&1 \
    || { cat "$work/make.log" >&2; exit 1; }
mkdir -p "$(dirname "$output")"
cp "$work/objs/$module.so" "$output"
