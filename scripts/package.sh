#!/usr/bin/env bash
# Builds chring's Debian packages and checks them with lintian:
#
#   scripts/package.sh [OUTDIR]      # default: build-deb/
#
# The source tree (the files git tracks or would track: no build trees) is
# copied to a temporary directory and built there with
# `dpkg-buildpackage -us -uc -b`, so nothing is written next to the
# checkout; the .deb, .changes and .buildinfo files land in OUTDIR. lintian
# then checks the .changes and fails the script on any error (warnings are
# printed and counted; a tag that is expected carries its reason in
# debian/*.lintian-overrides).
#
# dh_auto_test runs only debian/build-check.sh (seconds), not the suites:
# scripts/test.sh runs those from its own build trees, and
# tests/package/run.sh checks the installed packages. DEB_BUILD_OPTIONS
# from the environment is passed on (nocheck skips even the quick check).
# Needs root for nothing but scripts/deps.sh (the build dependencies).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
outdir=$(realpath -m "${1:-build-deb}")

bash scripts/deps.sh
dpkg-checkbuilddeps debian/control

work=$(mktemp -d "${TMPDIR:-/tmp}/chring-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
src=$work/chring
mkdir -p "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" ls-files -z --cached --others --exclude-standard \
        | (cd "$root" && xargs -0 cp -a --parents -t "$src" 2>/dev/null || true)
    # Files git tracks but that were deleted in the work tree are not copied.
else
    tar -C "$root" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$src" -xf -
fi
[ -f "$src/debian/control" ] || { echo "package: copying the source tree failed" >&2; exit 1; }

echo "=== package: dpkg-buildpackage -us -uc -b in $src"
# CPU seconds too: on a loaded machine they, divided by the cores, tell what
# an idle one would take.
TIMEFORMAT="=== package: built in %0R s (CPU %0U s user + %0S s system)"
if ! { time (cd "$src" && nice -n 15 dpkg-buildpackage -us -uc -b -j"$(nproc)" >"$work/build.log" 2>&1); } 2>"$work/time"; then
    tail -60 "$work/build.log"; echo "=== package: dpkg-buildpackage FAILED (log above)"; exit 1
fi
grep '^build-check:' "$work/build.log" || true
cat "$work/time"

mkdir -p "$outdir"
rm -f "$outdir"/*.deb "$outdir"/*.changes "$outdir"/*.buildinfo
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$outdir"/
cp "$work/build.log" "$outdir/build.log"
ls -1 "$outdir"/*.deb

echo "=== package: lintian"
changes=$(ls "$outdir"/*.changes)
set +e
lintian --fail-on error --info --display-level '>=warning' "$changes" | tee "$outdir/lintian.txt"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
    echo "=== package: lintian reports errors (exit $rc)"
    exit 1
fi
echo "=== package: lintian: no errors ($(grep -c '^W:' "$outdir/lintian.txt" || true) warnings)"
