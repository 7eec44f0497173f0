#!/usr/bin/env python3
"""Cross-language agreement: C, Go, Rust and Lua route every key the same.

Generates the shared input (gen_data), runs each language's router on it,
and compares their outputs byte for byte through SHA-256 digests: the
fingerprint line, the node and token counts, and per key the owner and the
replica list. On a mismatch it reports the first differing line with the
key it belongs to. The C output is also checked on its own (the right
number of lines, the owner first in every replica list), so that four
identical wrong answers cannot pass.
"""
import argparse
import hashlib
import os
import sys

from toolchains import Programs, add_arguments, run, timed_run


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def keys_of(data_path):
    with open(data_path) as f:
        lines = f.read().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("keys ")) + 1
    return lines[start:]


def first_difference(reference, other):
    with open(reference) as a, open(other) as b:
        for number, (x, y) in enumerate(zip(a, b), 1):
            if x != y:
                return number, x.rstrip("\n"), y.rstrip("\n")
    return None, None, None


def check_reference(path, key_count, replicas):
    """The C output's own shape: header lines, one line per key, owner first."""
    with open(path) as f:
        lines = f.read().splitlines()
    problems = []
    if len(lines) != key_count + 2:
        problems.append(f"{len(lines)} lines for {key_count} keys")
    if not lines or not lines[0].startswith("fingerprint "):
        problems.append("no fingerprint line")
    for number, line in enumerate(lines[2:], 3):
        owner, _, reps = line.partition(" ")
        reps = reps.split(",")
        if reps[0] != owner or len(reps) != replicas or len(set(reps)) != len(reps):
            problems.append(f"line {number}: owner/replicas malformed: {line[:120]}")
            break
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    ap.add_argument("--gen", required=True)
    ap.add_argument("--route-c", required=True)
    args = ap.parse_args()

    os.makedirs(args.work, exist_ok=True)
    data = os.path.join(args.work, "data.txt")
    out = {lang: os.path.join(args.work, f"out-{lang}.txt") for lang in ("c", "go", "rust", "lua")}
    programs = Programs(args)

    run("gen", [args.gen, data])
    keys = keys_of(data)
    with open(data) as f:
        header = f.read(200).splitlines()
    replicas = int(next(l for l in header if l.startswith("replicas ")).split()[1])

    commands = {
        "c": ([args.route_c], programs.env),
        "go": ([programs.go], programs.env),
        "rust": ([programs.rust], programs.env),
        "lua": ([args.luajit, args.lua_script], programs.lua_env),
    }
    timings = {lang: timed_run(lang, cmd + [data, out[lang]], env=env)[1]
               for lang, (cmd, env) in commands.items()}

    problems = check_reference(out["c"], len(keys), replicas)
    digests = {lang: sha256(path) for lang, path in out.items()}
    with open(out["c"]) as f:
        fingerprint = f.readline().split()[1]
        counts = f.readline().split()[1:]

    failed = 1 if problems else 0   # four checks: the reference's shape, then each language
    for p in problems:
        print(f"c: {p}")
    for lang in ("go", "rust", "lua"):
        if digests[lang] == digests["c"]:
            print(f"{lang:5} agrees with c ({timings[lang]:.2f}s)")
            continue
        failed += 1
        number, want, got = first_difference(out["c"], out[lang])
        if number is None:
            print(f"{lang:5} differs from c: one output is a prefix of the other")
            continue
        key = f" (key #{number - 3}, hex {keys[number - 3]!r})" if number > 2 else ""
        print(f"{lang:5} differs from c at line {number}{key}:\n  c:     {want[:200]}\n  {lang}:{' ' * (6 - len(lang))}{got[:200]}")

    print(f"membership: {counts[0]} nodes, {counts[1]} tokens; fingerprint {fingerprint}; "
          f"{len(keys)} keys, {replicas} replicas each; output sha256 {digests['c'][:16]}")
    print(f"{4 - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
