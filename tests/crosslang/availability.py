#!/usr/bin/env python3
"""Cross-language availability: C, Go, Rust and Lua follow the same ring
file with %%down lines and route every key the same, with the same
availability digest.

Each case is a ring file (members, %%down lines, maybe %%panic-threshold)
that every language follows into an empty ring and routes a fixed key set
through: owners, a batch, replica lists of every member. The outputs must
be byte-identical to C's. C's own output is checked against the same
members without marks: a key goes to the first member of its unmarked
replica walk that is not down, or, in panic, to its unmarked owner.
"""
import argparse
import os
import random
import sys

from toolchains import Programs, add_arguments, run

MEMBERS5 = [("srv-a", 1), ("srv-b", 1), ("srv-c", 2), ("edge 2", 1), ("srv-e", 1)]
MEMBERS4 = [(f"eq-{i}", 1) for i in range(4)]
# name, members, ids down, threshold (None: the default), panic expected
CASES = [
    ("one-down", MEMBERS5, ["edge 2"], None, False),
    ("two-of-five", MEMBERS5, ["srv-c", "srv-a"], None, False),  # exactly 50% of the weight: honoured
    ("three-of-four", MEMBERS4, ["eq-0", "eq-2", "eq-3"], None, True),
    ("three-of-four-100", MEMBERS4, ["eq-0", "eq-2", "eq-3"], 100, False),
]
KEYS = 3000


def field(member_id):
    """A ring file's id field: the bytes a member line cannot hold as %XX."""
    return "".join(c if c.isalnum() or c in "-_.:" else f"%{ord(c):02X}" for c in member_id)


def ring_file(members, down, threshold):
    """Directives first, then the members."""
    lines = [f"%%down {field(i)}" for i in down]
    if threshold is not None:
        lines.append(f"%%panic-threshold {threshold}")
    lines += [f"{field(i)} {w}" for i, w in members]
    return "\n".join(lines) + "\n"


def parse(path):
    """The header fields and, per key, (owner, [replicas])."""
    with open(path) as f:
        lines = f.read().splitlines()
    head = lines[0].split()
    header = dict(zip(head[0::2], head[1::2]))
    keys = []
    for line in lines[1:]:
        owner, _, reps = line.partition(" ")
        keys.append((owner, reps.split(",")))
    return header, keys


def check_reference(name, marked, plain, down, panic):
    """C's output for the marked file against its unmarked twin."""
    problems = []
    header, keys = parse(marked)
    _, walks = parse(plain)
    if header["panic"] != str(int(panic)) or int(header["down"]) != len(down):
        problems.append(f"header {header}, want panic {int(panic)} down {len(down)}")
    if header["availability"] == "0" * 16 or header["applied"] != header["availability"]:
        problems.append(f"digest {header['availability']}, follower applied {header['applied']}")
    down_hex = {i.encode().hex() for i in down}
    moved = 0
    for n, ((owner, reps), (_, walk)) in enumerate(zip(keys, walks)):
        want = walk[0] if panic else next((m for m in walk if m not in down_hex), walk[0])
        if owner != want or reps[0] != owner:
            problems.append(f"key #{n}: owner {owner}, replicas from {reps[0]}, want {want}")
            break
        moved += owner != walk[0]
    if len(keys) != KEYS or len(walks) != KEYS:
        problems.append(f"{len(keys)} and {len(walks)} key lines for {KEYS} keys")
    if not panic and moved == 0:
        problems.append("no key moved off a down member")
    return [f"{name}: c: {p}" for p in problems], header, moved


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    ap.add_argument("--availability-c", required=True)
    args = ap.parse_args()

    work = os.path.join(args.work, "availability")
    os.makedirs(work, exist_ok=True)
    rnd = random.Random(26)
    keys = os.path.join(work, "keys.txt")
    with open(keys, "w") as f:
        for _ in range(KEYS):
            f.write(bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 24))).hex() + "\n")

    programs = Programs(args)
    tools = programs.commands(args, args.availability_c, "availability")
    failed = []
    digests = set()
    for name, members, down, threshold, panic in CASES:
        paths = {}
        for kind, marks in (("marked", down), ("plain", [])):
            paths[kind] = os.path.join(work, f"{name}-{kind}.ring")
            with open(paths[kind], "w") as f:
                f.write(ring_file(members, marks, threshold if marks else None))
        out = {lang: os.path.join(work, f"{name}-{lang}.txt") for lang in tools}
        for lang, (cmd, env) in tools.items():
            run(f"{name} {lang}", cmd + [paths["marked"], keys, out[lang]], env=env)
        plain = os.path.join(work, f"{name}-plain-c.txt")
        run(f"{name} c plain", tools["c"][0] + [paths["plain"], keys, plain], env=programs.env)
        problems, header, moved = check_reference(name, out["c"], plain, down, panic)
        failed += problems
        digests.add(header["availability"])
        reference = open(out["c"], "rb").read()
        for lang in ("go", "rust", "lua"):
            got = open(out[lang], "rb").read()
            if got != reference:
                at = next((i for i, (a, b) in enumerate(zip(reference, got)) if a != b),
                          min(len(reference), len(got)))
                line = reference[:at].count(b"\n") + 1
                failed.append(f"{name}: {lang} differs from c at line {line}: "
                              f"c {reference[at - 20:at + 40]!r} {lang} {got[at - 20:at + 40]!r}")
        print(f"{name}: {len(down)} of {len(members)} down, panic {header['panic']}, "
              f"digest {header['availability']}, {moved} of {KEYS} keys moved")
    if len(digests) != len(CASES):
        failed.append(f"cases share digests: {sorted(digests)}")
    for f in failed:
        print(f)
    print(f"{len(CASES)} cases x 4 languages: {'ok' if not failed else f'{len(failed)} failures'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
