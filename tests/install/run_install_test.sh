#!/bin/sh
# Installs a build into a staging root (meson install --destdir), builds
# quickstart.c against it with nothing but `pkg-config --cflags --libs
# chring`, and runs it with the staged library, which must find its hash
# plugin next to itself (CHRING_PLUGIN_PATH is unset). Everything it writes
# goes to one temporary directory, removed on exit; the build dir's
# meson-logs/install-log.txt, which meson install rewrites, is put back.
#
# Usage: run_install_test.sh MESON BUILD_DIR QUICKSTART_C "CC" [CFLAG...]
set -eu

meson=$1 builddir=$2 source=$3 cc=$4
shift 4

fail() {
    echo "install test: $*" >&2
    exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/chring-install-test.XXXXXX")
stage=$work/root
install_log=$builddir/meson-logs/install-log.txt
had_log=no
if [ -f "$install_log" ]; then
    cp -p "$install_log" "$work/install-log.txt"
    had_log=yes
fi
cleanup() {
    if [ "$had_log" = yes ]; then
        cp -p "$work/install-log.txt" "$install_log"
    else
        rm -f "$install_log"
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

"$meson" install -C "$builddir" --destdir "$stage" --no-rebuild --quiet >"$work/install.out" 2>&1 ||
    { cat "$work/install.out" >&2; fail "meson install failed"; }

pc=$(find "$stage" -path '*/pkgconfig/chring.pc')
[ "$(printf '%s\n' "$pc" | grep -c .)" -eq 1 ] || fail "expected one staged chring.pc, found: $pc"

# Only the staged tree: no system .pc directories, paths rebased into it.
unset PKG_CONFIG_PATH
PKG_CONFIG_LIBDIR=$(dirname "$pc")
PKG_CONFIG_SYSROOT_DIR=$stage
export PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
flags=$(pkg-config --cflags --libs chring) || fail "pkg-config does not know the staged chring"
for flag in $flags; do
    case $flag in
    -I* | -L*) case ${flag#-?} in "$stage"/*) ;; *) fail "$flag points outside the staged tree" ;; esac ;;
    esac
done
libdir=$(pkg-config --variable=libdir chring)
case $libdir in "$stage"/*) ;; *) libdir=$stage$libdir ;; esac # pkgconf rebases variables too
[ -e "$libdir/libchring.so.1" ] || fail "no libchring.so.1 in the staged libdir $libdir"

# $cc may be several words (e.g. ccache cc): split on purpose.
# shellcheck disable=SC2086
$cc -std=c99 -Wall -Wextra -pedantic -Werror "$@" -o "$work/quickstart" "$source" $flags ||
    fail "quickstart.c does not build against the staged install"

unset CHRING_PLUGIN_PATH
LD_LIBRARY_PATH=$libdir
export LD_LIBRARY_PATH
resolved=$(ldd "$work/quickstart" | sed -n 's/.*libchring\.so\.1 => \([^ ]*\).*/\1/p')
[ "$resolved" = "$libdir/libchring.so.1" ] || fail "libchring resolves to '$resolved', not the staged copy"

owner=$("$work/quickstart") || fail "quickstart failed"
case $owner in
cache-a | cache-b) ;;
*) fail "quickstart printed '$owner', not a member" ;;
esac
echo "staged install: quickstart built with '$flags', ran against $resolved, printed $owner"
