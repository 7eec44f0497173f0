#!/usr/bin/env python3
"""The Windows build's own checks, run under Wine (suite 'windows').

1. chring.dll exports exactly the CHR_API functions of chring.h (its
   export table, read with MinGW's objdump), and chring.def lists the same.
2. Plugin discovery: a directory holding chring.dll, win_probe.exe and one
   plugin finds that plugin with no configuration (beside chring.dll);
   CHRING_PLUGIN_PATH is split at ';' (a missing entry is skipped).
3. Trust rules: a plugin file, or the directory holding it, that other
   users may write (Wine shows a file's Unix mode o+w as a write grant to
   Everyone in its access list) is refused with CHR_EPLUGIN_UNTRUSTED.
4. PE checks: corrupted copies of a plugin (truncated, another machine,
   not a DLL, the PE header or the section table out of the file, no
   sections) are refused with CHR_EPLUGIN_NOTSO and a reason, and the
   process lives on.

Usage: check_windows.py --wine WINE_RUN --objdump OBJDUMP --header CHRING_H
       --dll CHRING_DLL --probe WIN_PROBE_EXE --plugins PLUGIN_DLL...
Prints one line per check and exits 1 if any failed.
"""
import argparse
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EPLUGIN_NOTSO, EPLUGIN_UNTRUSTED = -12, -16
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def win_path(path):
    """The name Wine gives a Unix path (drive Z: is the Unix root)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def api_functions(header):
    spec = importlib.util.spec_from_file_location(
        "check_exports", os.path.join(HERE, "..", "core", "check_exports.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with open(header, encoding="utf-8") as f:
        return module.api_functions(f.read())


def dll_exports(objdump, dll):
    out = subprocess.run([objdump, "-p", dll], check=True, capture_output=True, text=True).stdout
    names, in_table = set(), False
    for line in out.splitlines():
        if line.startswith("[Ordinal/Name Pointer] Table"):
            in_table = True
            continue
        if in_table:
            m = re.match(r"\s*\[\s*\d+\]\s+(\S+)", line)
            if not m:
                break
            names.add(m.group(1))
    return names


def run_probe(args, probe, probe_args, env_path=None):
    env = {k: v for k, v in os.environ.items() if k not in ("CHRING_PLUGIN_PATH", "WINEPATH")}
    if env_path is not None:
        env["CHRING_PLUGIN_PATH"] = env_path
    out = subprocess.run([args.wine, probe] + probe_args, env=env, capture_output=True, text=True,
                         timeout=120)
    lines = {}
    for line in out.stdout.splitlines():
        parts = line.split(" ", 3)
        if len(parts) >= 3:
            lines[parts[1]] = parts
    return out.returncode, lines


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--wine", "--objdump", "--header", "--dll", "--probe"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--plugins", nargs="+", required=True)
    args = ap.parse_args()
    plugins = {os.path.basename(p): p for p in args.plugins}

    # 1. exports
    want = api_functions(args.header)
    have = dll_exports(args.objdump, args.dll)
    check(have == want, "chring.dll exports the %d CHR_API functions of chring.h, nothing else%s" % (
        len(want), "" if have == want else " (extra: %s; missing: %s)" % (
            sorted(have - want)[:5], sorted(want - have)[:5])))
    def_file = os.path.join(os.path.dirname(args.dll), "chring.def")
    with open(def_file, encoding="utf-8") as f:
        listed = set(re.findall(r"^\s+(chr_\w+)", f.read(), flags=re.M))
    check(listed == want, "chring.def lists the same %d functions" % len(listed))

    with tempfile.TemporaryDirectory(prefix="chring-win-", dir=os.path.dirname(args.dll)) as top:
        os.chmod(top, 0o755)
        # 2. beside chring.dll, then CHRING_PLUGIN_PATH
        beside = os.path.join(top, "app")
        os.mkdir(beside, 0o755)
        for f in (args.dll, args.probe, plugins["chring-fnv1a.dll"]):
            shutil.copy(f, beside)
        probe = os.path.join(beside, os.path.basename(args.probe))
        rc, out = run_probe(args, probe, ["fnv1a_64", "murmur3_128"])
        fnv = out.get("fnv1a_64", [])
        check(rc == 0 and fnv[:1] == ["ok"] and fnv[2].lower().startswith(win_path(beside).lower()),
              "a plugin beside chring.dll is found with no configuration (%s)" % " ".join(fnv))
        check(out.get("murmur3_128", [""])[0] == "error", "a plugin that is nowhere is not found")
        extra = os.path.join(top, "extra")
        os.mkdir(extra, 0o755)
        shutil.copy(plugins["chring-murmur3.dll"], extra)
        rc, out = run_probe(args, probe, ["murmur3_128"], "C:\\no\\such\\dir;" + win_path(extra))
        mm = out.get("murmur3_128", [])
        check(rc == 0 and mm[:1] == ["ok"] and mm[2].lower().startswith(win_path(extra).lower()),
              "CHRING_PLUGIN_PATH is ';'-separated (%s)" % " ".join(mm))

        # 3. trust rules
        loose = os.path.join(top, "loose")
        os.mkdir(loose, 0o755)
        target = os.path.join(loose, "chring-crc32.dll")
        shutil.copy(plugins["chring-crc32.dll"], target)
        rc, out = run_probe(args, probe, ["@" + win_path(target)])
        check(out.get("@" + win_path(target), [""])[0] == "ok",
              "a plugin only its owner may write is loaded")
        for changed, mode, reason, what in ((target, 0o666, "writable by", "a plugin file"),
                                            (loose, 0o777, "plugin directory", "a plugin in a directory")):
            os.chmod(changed, mode)
            rc, out = run_probe(args, probe, ["@" + win_path(target)])
            got = out.get("@" + win_path(target), ["", "", "", ""])
            check(got[0] == "error" and got[2] == str(EPLUGIN_UNTRUSTED) and reason in got[3],
                  "%s others may write is refused (%s)" % (what, " ".join(got)))
            os.chmod(changed, 0o755 if changed == loose else 0o644)

        # 4. PE checks on corrupted copies
        with open(plugins["chring-fnv1a.dll"], "rb") as f:
            good = f.read()
        pe_at = struct.unpack_from("<I", good, 0x3C)[0]
        opt_size = struct.unpack_from("<H", good, pe_at + 20)[0]

        def patched(offset, fmt, value):
            b = bytearray(good)
            struct.pack_into(fmt, b, offset, value)
            return bytes(b)

        cases = {
            "truncated": (good[: len(good) // 2], "past the end of the file"),
            "machine": (patched(pe_at + 4, "<H", 0x14C), "built for machine 0x014c"),
            "not-dll": (patched(pe_at + 22, "<H", struct.unpack_from("<H", good, pe_at + 22)[0] & ~0x2000),
                        "not a DLL image"),
            "lfanew": (patched(0x3C, "<I", len(good) + 64), "PE header offset"),
            "sections": (patched(pe_at + 6, "<H", 0), "0 sections"),
            "table": (patched(pe_at + 6, "<H", 96), "section table"),
            "optional": (patched(pe_at + 20, "<H", opt_size + 60000), "section table"),
            "mz": (b"ZM" + good[2:], "no MZ signature"),
        }
        corrupt = os.path.join(top, "corrupt")
        os.mkdir(corrupt, 0o755)
        for name, (data, reason) in cases.items():
            path = os.path.join(corrupt, "chring-%s.dll" % name)
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, 0o644)
            rc, out = run_probe(args, probe, ["@" + win_path(path), "fnv1a_64"])
            got = out.get("@" + win_path(path), ["", "", "", ""])
            check(rc == 0 and got[0] == "error" and got[2] == str(EPLUGIN_NOTSO) and reason in got[3]
                  and out.get("fnv1a_64", [""])[0] == "ok",
                  "PE check: %s copy refused (%s)" % (name, " ".join(got[2:])))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
