#!/usr/bin/env python3
"""The built libchring is ABI-compatible with the committed baseline.

Runs abidw on the library (the exported functions and the public types
they reach) and abidiff against abi/libchring.abi. Fails when abidiff
finds an incompatible change (exit bit 8: a removed function) or any change
other than added functions (exit bit 4 with --no-added-syms: a changed
parameter, return or field type, a moved field, a grown struct; abidiff
reports those with bit 4 only). Added functions pass. A field appended to a
growable struct (docs/compatibility.md, "How structs grow") fails too: no
libabigail suppression tells an append from a change, so that commit
refreshes the baseline with scripts/abi-baseline.sh and its diff shows the
one new data member.

Skips (exit 77) when abidw or abidiff is missing (Debian: abigail-tools),
in sanitizer builds (the baseline is of a normal build), and without DWARF
(-Ddebug=false, or a stripped library).

Usage: check_abi.py LIBRARY BASELINE HEADERS_DIR ABIDW ABIDIFF
                    READELF B_SANITIZE DEBUG
"""
import os
import subprocess
import sys
import tempfile

SKIP = 77
# The same options as scripts/abi-baseline.sh: exported functions and the
# public types they reach, no build paths (the file is the same from any
# build directory).
ABIDW_OPTIONS = ["--no-corpus-path", "--no-comp-dir-path", "--short-locs",
                 "--drop-private-types", "--drop-undefined-syms",
                 "--exported-interfaces-only"]
ABIDIFF_ERROR, ABIDIFF_USAGE, ABIDIFF_CHANGE, ABIDIFF_INCOMPATIBLE = 1, 2, 4, 8


def skip(reason):
    print("SKIP: " + reason)
    return SKIP


def has_dwarf(readelf, library):
    out = subprocess.run([readelf, "-S", "-W", library], check=True, capture_output=True,
                         text=True).stdout
    return ".debug_info" in out


def main(argv):
    if len(argv) != 9:
        raise SystemExit(__doc__)
    library, baseline, headers, abidw, abidiff, readelf, sanitize, debug = argv[1:]
    if not abidw or not abidiff or not os.path.exists(abidw) or not os.path.exists(abidiff):
        return skip("abidw/abidiff not found (install abigail-tools)")
    if sanitize not in ("", "none"):
        return skip("sanitizer build (b_sanitize=%s): the baseline is of a normal build"
                    % sanitize)
    if debug != "true" or not has_dwarf(readelf, library):
        return skip("no DWARF in %s (debug=%s): abidw needs -g" % (library, debug))

    with tempfile.TemporaryDirectory() as tmp:
        current = os.path.join(tmp, "libchring.abi")
        subprocess.run([abidw] + ABIDW_OPTIONS + ["--headers-dir", headers, "--out-file",
                                                  current, library], check=True)
        base_cmd = [abidiff, baseline, current]
        full = subprocess.run(base_cmd, capture_output=True, text=True)
        sys.stdout.write(full.stdout)
        sys.stderr.write(full.stderr)
        if full.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE):
            print("FAIL: abidiff could not compare (exit %d)" % full.returncode)
            return 1
        if full.returncode & ABIDIFF_INCOMPATIBLE:
            print("FAIL: incompatible ABI change against %s (abidiff exit %d)"
                  % (baseline, full.returncode))
            return 1
        changed = subprocess.run(base_cmd[:1] + ["--no-added-syms"] + base_cmd[1:],
                                 capture_output=True, text=True)
        if changed.returncode & ~ABIDIFF_CHANGE:
            print("FAIL: abidiff --no-added-syms exit %d" % changed.returncode)
            return 1
        if changed.returncode & ABIDIFF_CHANGE:
            print("FAIL: an ABI change other than added functions against %s: a changed "
                  "type or function breaks callers built against the release"
                  % baseline)
            return 1
    if full.returncode & ABIDIFF_CHANGE:
        print("OK: only added functions against %s; scripts/abi-baseline.sh records them "
              "at the next release" % baseline)
    else:
        print("OK: the ABI of %s equals %s" % (library, baseline))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
