#!/usr/bin/env python3
"""One version: meson.build's project version, and every copy of it agrees.

Compares, with meson.build's `project(... version : 'X.Y.Z')` (also passed
by meson as --meson-version, so a stale build dir shows too):
  - chring.h's CHR_VERSION_MAJOR/MINOR/PATCH (read from the file, and as a
    compiled program saw them), and CHR_VERSION_NUMBER = X*10000 + Y*100 + Z;
  - chr_version() and chr_version_string() of the built libchring;
  - the Go binding's BindingVersion, the Rust crate's Cargo.toml (and its
    Cargo.lock entry), the Lua module's _VERSION and CHR_VERSION_* constants,
    and the OpenResty example's _VERSION;
  - chring-sys's Cargo.toml and Cargo.lock entry and chring's "=X.Y.Z"
    requirement on it; the rockspec's file name and version, dist.ini's
    version, debian/changelog's first version, the manual pages' .TH lines.
  - every "Since: X.Y" of the public headers: no call is newer than the
    project (a "Since: 0.2" in version 0.1.0 names a release that does not
    exist).

Usage: check_version.py --source-root DIR --meson-version X.Y.Z --probe PROGRAM
Prints every mismatch and exits 1, or prints one OK line.
"""
import argparse
import os
import re
import subprocess
import sys


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def one(pattern, text, what, flags=re.M):
    found = re.findall(pattern, text, flags)
    if len(found) != 1:
        raise SystemExit(f"check_version: {what}: {len(found)} matches of {pattern!r}, want 1")
    return found[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--meson-version", required=True)
    ap.add_argument("--probe", required=True)
    args = ap.parse_args()
    root = args.source_root

    version = one(r"^project\(.*?\bversion\s*:\s*'([^']*)'", read(root, "meson.build"),
                  "meson.build project version", re.M | re.S)
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise SystemExit(f"check_version: meson.build's version {version!r} is not MAJOR.MINOR.PATCH")
    major, minor, patch = (int(p) for p in version.split("."))
    number = major * 10000 + minor * 100 + patch

    # (what, value found, value wanted)
    checks = [("meson.project_version() of this build", args.meson_version, version)]

    header = read(root, "include/c/chring.h")
    for name, want in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
        got = one(rf"^#define\s+CHR_VERSION_{name}\s+(\d+)\s*$", header, f"chring.h CHR_VERSION_{name}")
        checks.append((f"chring.h CHR_VERSION_{name}", int(got), want))

    for path in ("include/c/chring.h", "include/c/chring_plugin.h"):
        text = read(root, path)
        sinces = re.findall(r"\bSince:\s*(\d+)\.(\d+)", text)
        newer = sorted({f"{a}.{b}" for a, b in sinces if (int(a), int(b)) > (major, minor)})
        checks.append((f"{path}: 'Since:' lines newer than {major}.{minor}", newer, []))
    checks.append(("include/c/chring.h: 'Since:' lines",
                   len(re.findall(r"\bSince:", header)) > 0, True))

    out = subprocess.run([args.probe], stdout=subprocess.PIPE, text=True, check=True).stdout
    fields = dict(line.split(" ", 1) for line in out.splitlines())
    checks.append(("compiled CHR_VERSION_MAJOR MINOR PATCH NUMBER", fields.get("macros"),
                   f"{major} {minor} {patch} {number}"))
    checks.append(("chr_version()", fields.get("chr_version"), str(number)))
    checks.append(("chr_version_string()", fields.get("chr_version_string"), version))

    go = read(root, "bindings/go/ring.go")
    checks.append(("Go BindingVersion (bindings/go/ring.go)",
                   one(r'^const BindingVersion = "([^"]*)"', go, "Go BindingVersion"), version))

    cargo = read(root, "bindings/rust/Cargo.toml")
    package = one(r"^\[package\]\n(.*?)(?:^\[|\Z)", cargo, "Cargo.toml [package]", re.M | re.S)
    checks.append(("Rust package version (bindings/rust/Cargo.toml)",
                   one(r'^version\s*=\s*"([^"]*)"', package, "Cargo.toml version"), version))
    lock = read(root, "bindings/rust/Cargo.lock")
    checks.append(("Rust chring entry of bindings/rust/Cargo.lock",
                   one(r'^name = "chring"\nversion = "([^"]*)"', lock, "Cargo.lock chring"), version))

    lua = read(root, "bindings/lua/lib/chring.lua")
    checks.append(("Lua _VERSION (bindings/lua/lib/chring.lua)",
                   one(r'^local _M = \{ _VERSION = "([^"]*)" \}', lua, "Lua _VERSION"), version))
    lua_ffi = read(root, "bindings/lua/lib/chring/ffi.lua")   # the header's constants
    for name, want in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
        got = one(rf"\bCHR_VERSION_{name} = (\d+)", lua_ffi, f"Lua CHR_VERSION_{name}")
        checks.append((f"Lua CHR_VERSION_{name}", int(got), want))

    resty = read(root, "bindings/nginx/openresty/chring_balancer.lua")
    checks.append(("OpenResty example _VERSION (bindings/nginx/openresty/chring_balancer.lua)",
                   one(r'^local _M = \{ _VERSION = "([^"]*)" \}', resty, "OpenResty _VERSION"), version))

    sys_cargo = read(root, "bindings/rust/chring-sys/Cargo.toml")
    checks.append(("Rust chring-sys version (bindings/rust/chring-sys/Cargo.toml)",
                   one(r'^version\s*=\s*"([^"]*)"', sys_cargo, "chring-sys version"), version))
    checks.append(("chring's requirement on chring-sys (bindings/rust/Cargo.toml)",
                   one(r'^chring-sys = \{ version = "=([^"]*)"', cargo, "chring-sys requirement"), version))
    checks.append(("Rust chring-sys entry of bindings/rust/Cargo.lock",
                   one(r'^name = "chring-sys"\nversion = "([^"]*)"', lock, "Cargo.lock chring-sys"), version))

    # Packaging: LuaRocks, OPM, Debian, the manual pages.
    rockspecs = [f for f in os.listdir(os.path.join(root, "bindings/lua")) if f.endswith(".rockspec")]
    checks.append(("LuaRocks rockspec file (bindings/lua)", rockspecs, [f"chring-{version}-1.rockspec"]))
    for f in rockspecs:
        checks.append((f"LuaRocks version (bindings/lua/{f})",
                       one(r'^version = "([^"]*)-\d+"', read(root, "bindings/lua/" + f), "rockspec version"), version))
    checks.append(("OPM version (bindings/lua/dist.ini)",
                   one(r"^version = (\S+)", read(root, "bindings/lua/dist.ini"), "dist.ini version"), version))
    checks.append(("Debian version (debian/changelog, first entry)",
                   re.match(r"chring \(([^)-]*)", read(root, "debian/changelog")).group(1), version))
    for page in ("chring.1", "chring.3"):
        checks.append((f"manual page docs/man/{page}",
                       one(r'^\.TH CHRING \d "[^"]*" "chring ([^"]*)"', read(root, "docs/man/" + page), page), version))

    bad = [(what, got, want) for what, got, want in checks if got != want]
    for what, got, want in bad:
        print(f"{what}: {got!r}, want {want!r} (meson.build's version is {version})")
    if bad:
        return 1
    print(f"OK: {len(checks)} copies of the version agree with meson.build's {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
