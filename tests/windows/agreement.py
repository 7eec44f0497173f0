#!/usr/bin/env python3
"""The Windows build agrees with the Linux build (suite 'windows').

The same chring CLI, built for Linux and for Windows (run under Wine), on
the same membership (weights and zones), must print:
  - the same fingerprint (`chring inspect --format json`);
  - the same owner and replicas for each of 100,000 keys
    (`chring lookup --replicas 3 --format csv`, keys on stdin), compared
    line for line;
  - the same `chring demo` output, figure for figure;
for the built-in hasher, a plugin's (murmur3_128), md5 (OpenSSL on Linux, CNG
on Windows) and the ketama placement.

The Linux CLI is CHRING_LINUX_CLI, else build/src/cli/chring of the
source tree (scripts/test.sh builds it first); its plugins are the ones
of its build tree. Usage: agreement.py --wine WINE_RUN --windows-cli EXE
Prints one line per comparison, exits 1 if any differs.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KEYS = 100_000
MEMBERS = ["--node=node-%02d=%d@zone-%d" % (i, 1 + i % 3, i % 4) for i in range(24)]
CONFIGS = {
    "xxh3 (built in)": [],
    "murmur3_128 (plugin)": ["--hasher", "murmur3_128"],
    "md5 (OpenSSL / CNG)": ["--hasher", "md5", "--seed", "7"],
    "ketama": ["--placement", "ketama"],
}


def linux_cli():
    cli = os.environ.get("CHRING_LINUX_CLI") or os.path.join(HERE, "..", "..", "build", "src", "cli", "chring")
    if not os.access(cli, os.X_OK):
        sys.exit("agreement: no Linux chring at %s (set CHRING_LINUX_CLI, or build build/ first)" % cli)
    return os.path.abspath(cli)


def run(cmd, env, stdin=None):
    out = subprocess.run(cmd, input=stdin, env=env, capture_output=True, timeout=600)
    if out.returncode != 0:
        sys.exit("agreement: %s exited %d: %s" % (" ".join(cmd[:3]), out.returncode,
                                                  out.stderr.decode(errors="replace")[-500:]))
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wine", required=True)
    ap.add_argument("--windows-cli", required=True)
    args = ap.parse_args()
    lin = linux_cli()
    lin_build = os.path.dirname(os.path.dirname(os.path.dirname(lin)))
    lin_env = dict(os.environ)
    lin_env["CHRING_PLUGIN_PATH"] = ":".join(sorted(
        d for d in glob.glob(os.path.join(lin_build, "plugins", "*")) if os.path.isdir(d)))
    win_env = dict(os.environ)  # meson test's CHRING_PLUGIN_PATH and WINEPATH, for Windows
    linux = lambda argv, stdin=None: run([lin] + argv, lin_env, stdin)
    windows = lambda argv, stdin=None: run([args.wine, args.windows_cli] + argv, win_env, stdin)

    keys = "".join("key-%d\n" % i for i in range(KEYS)).encode()
    failed = 0
    for name, config in CONFIGS.items():
        inspect = ["inspect", "--format", "json"] + config + MEMBERS
        fp_l = json.loads(linux(inspect))["ring"]["fingerprint"]
        fp_w = json.loads(windows(inspect))["ring"]["fingerprint"]
        ok = fp_l is not None and fp_l == fp_w
        print("%s %s: fingerprint %s (Windows %s)" % ("ok  " if ok else "FAIL", name, fp_l, fp_w))
        failed += not ok

        lookup = ["lookup", "--replicas", "3", "--format", "csv"] + config + MEMBERS
        out_l = linux(lookup, keys).splitlines()
        out_w = windows(lookup, keys).splitlines()
        differ = [i for i, (a, b) in enumerate(zip(out_l, out_w)) if a != b]
        ok = len(out_l) == len(out_w) == KEYS + 1 and not differ
        print("%s %s: owners and replicas of %d keys, %d lines differ%s" % (
            "ok  " if ok else "FAIL", name, KEYS, len(differ) + abs(len(out_l) - len(out_w)),
            "" if not differ else " (first: %r vs %r)" % (out_l[differ[0]], out_w[differ[0]])))
        failed += not ok

    # Every line but the one that says how long the run took.
    timing = lambda line: line.startswith("Measured in ")
    demo_l = [l for l in linux(["demo"]).decode().splitlines() if not timing(l)]
    demo_w = [l for l in windows(["demo"]).decode().splitlines() if not timing(l)]
    differ = [i for i, (a, b) in enumerate(zip(demo_l, demo_w)) if a != b]
    ok = demo_l and len(demo_l) == len(demo_w) and not differ
    print("%s chring demo: %d lines, %d differ%s" % (
        "ok  " if ok else "FAIL", len(demo_l), len(differ) + abs(len(demo_l) - len(demo_w)),
        "" if not differ else " (first: %r vs %r)" % (demo_l[differ[0]], demo_w[differ[0]])))
    failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
