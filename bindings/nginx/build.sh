#!/usr/bin/env bash
# Builds the chring upstream module against Debian's nginx-dev sources.
#
#   build.sh [--rpath DIRS] PKG_CONFIG_DIR WORK_DIR OUTPUT
#   build.sh --relink WORK_DIR OUTPUT [DIRS]
#
# PKG_CONFIG_DIR  directory holding chring.pc or chring-uninstalled.pc (a
#                 Meson build's meson-uninstalled/)
# WORK_DIR        scratch copy of nginx's source tree (configure and make
#                 write into it; /usr/share/nginx/src is never written)
# OUTPUT          where the module .so goes
# --rpath DIRS    the module's rpath (colon-separated; empty for none);
#                 default: each -L directory of `pkg-config --libs chring`,
#                 so that the module loads that very libchring.so.1
# --relink        links the objects of an earlier build in WORK_DIR again
#                 with rpath DIRS (none if empty or absent): Meson's copy
#                 for `meson install`, whose rpath names the installed
#                 libdir, or nothing for a system prefix
#
# NGINX_SRC overrides the nginx source tree (default /usr/share/nginx/src).
# CFLAGS, CPPFLAGS and LDFLAGS from the environment (dpkg-buildflags' when a
# Debian package is built) are added to nginx's own flags.
# Configure reruns only when the module's `config` (which lists its source
# files: ngx_http_upstream_chring*.c, and ngx_http_upstream_chring.h as a
# dependency of each), this script or the nginx tree changed; make then
# recompiles what changed.
set -euo pipefail

module=ngx_http_upstream_chring_module
usage() {
    echo "usage: $0 [--rpath DIRS] PKG_CONFIG_DIR WORK_DIR OUTPUT" >&2
    echo "       $0 --relink WORK_DIR OUTPUT [DIRS]" >&2
    exit 2
}

# link WORK_DIR OUTPUT RPATH: (re)links the module with that rpath and
# copies it to OUTPUT. The .so in WORK_DIR is removed first and after, so
# that make always links again and no copy with another rpath is reused.
link() {
    local work=$1 output=$2 rpath=$3 linker='$(CC)'
    [ -n "$rpath" ] && linker="\$(CC) -Wl,-rpath,$rpath"
    rm -f "$work/objs/$module.so"
    make -s -C "$work" -f objs/Makefile modules LINK="$linker" >>"$work/make.log" 2>&1 \
        || { cat "$work/make.log" >&2; exit 1; }
    mkdir -p "$(dirname "$output")"
    cp "$work/objs/$module.so" "$output.tmp"
    mv -f "$output.tmp" "$output"
    rm -f "$work/objs/$module.so"
}

if [ "${1:-}" = "--relink" ]; then
    [ $# -eq 3 ] || [ $# -eq 4 ] || usage
    work=$(realpath "$2")
    [ -f "$work/objs/Makefile" ] || { echo "$0: $work holds no configured nginx tree" >&2; exit 1; }
    : >"$work/make.log"
    link "$work" "$(realpath -m "$3")" "${4:-}"
    exit 0
fi

rpath_given=0
rpath=
if [ "${1:-}" = "--rpath" ]; then
    [ $# -ge 2 ] || usage
    rpath_given=1
    rpath=$2
    shift 2
fi
[ $# -eq 3 ] || usage

pc_dir=$(realpath "$1")
work=$(realpath -m "$2")
output=$(realpath -m "$3")
module_dir=$(cd "$(dirname "$0")" && pwd)
nginx_src=${NGINX_SRC:-/usr/share/nginx/src}

if [ ! -x "$nginx_src/configure" ]; then
    echo "$0: no nginx source tree at $nginx_src (install nginx-dev)" >&2
    exit 1
fi

export PKG_CONFIG_PATH="$pc_dir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkg-config --exists chring || { echo "$0: chring.pc (or chring-uninstalled.pc) not found in $pc_dir" >&2; exit 1; }

if [ "$rpath_given" -eq 0 ]; then
    for flag in $(pkg-config --libs-only-L chring); do
        rpath=${rpath:+$rpath:}${flag#-L}
    done
fi

# Debian's own configure flags: the module signature (PCRE, gzip, SSL, ...)
# must match the nginx binary that loads the module.
if [ -f "$nginx_src/conf_flags" ]; then
    # shellcheck disable=SC1091
    . "$nginx_src/conf_flags"
else
    NGX_CONF_FLAGS=(--with-compat)
fi

flags="${CFLAGS:-} ${CPPFLAGS:-} ${LDFLAGS:-}"
stamp="$work/.chring-configured"
if [ ! -f "$stamp" ] || [ "$module_dir/config" -nt "$stamp" ] || [ "$0" -nt "$stamp" ] \
    || [ "$nginx_src/configure" -nt "$stamp" ] || [ "$(cat "$stamp")" != "$pc_dir $flags" ]; then
    rm -rf "$work"
    mkdir -p "$work"
    cp -a "$nginx_src/." "$work/"
    (
        cd "$work"
        # The rpath is given at link time (link above), not by `config`.
        CHRING_NGINX_NO_RPATH=1 ./configure "${NGX_CONF_FLAGS[@]}" --with-compat \
            --with-cc-opt="${CFLAGS:-} ${CPPFLAGS:-} -fPIC $(pkg-config --cflags chring)" \
            --with-ld-opt="${LDFLAGS:-} -fPIC" \
            --add-dynamic-module="$module_dir" >configure.log 2>&1 \
            || { tail -30 configure.log >&2; exit 1; }
    )
    echo "$pc_dir $flags" >"$stamp"
fi

: >"$work/make.log"
link "$work" "$output" "$rpath"
