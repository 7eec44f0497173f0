#!/bin/sh
# Runs a Windows program under Wine for the Windows tests' scripts and
# scripts/test.sh: Debian's wine64 package installs the loader as
# /usr/lib/wine/wine64, outside PATH. The Wine prefix is WINEPREFIX
# (scripts/test.sh sets one of its own), else Wine's default; Wine's own
# diagnostics are off.
set -e
wine=$(command -v wine64 || true)
[ -n "$wine" ] || wine=/usr/lib/wine/wine64
[ -x "$wine" ] || { echo "wine-run.sh: wine64 not found (Debian package wine64)" >&2; exit 127; }
export WINEDEBUG="${WINEDEBUG:--all}"
exec "$wine" "$@"
