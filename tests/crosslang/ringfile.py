#!/usr/bin/env python3
"""Cross-language ring files: C, Go, Rust and Lua write byte-identical
canonical files (and JSON twins) for the same rings, and each loads every
language's files to the fingerprint C computes, exporting them unchanged.

The rings (seeded, so every run is the same): ids with every byte value
(NUL, space, '%', '#', LF, bytes >= 0x80), zones of 0..64 bytes, every
placement, an empty ring. Each language builds them by calls from one spec
file (tag = position, as a file's loader does), then exports.
"""
import argparse
import glob
import os
import random
import sys

from toolchains import Programs, add_arguments, run

LANGS = ("c", "go", "rust", "lua")


def spec_rings():
    rnd = random.Random(16)
    rings = []

    def rand_bytes(lo, hi):
        return bytes(rnd.randrange(256) for _ in range(rnd.randint(lo, hi)))

    # Native: every byte value in some id, zones 0..64 bytes.
    nodes, seen = [], set()
    for b in range(256):
        node_id = bytes([b]) + rand_bytes(0, 12)
        if node_id in seen:
            continue
        seen.add(node_id)
        nodes.append((node_id, rnd.randint(0, 5), rand_bytes(0, 64) if b % 3 else b""))
    rings.append((0, 20, 0, nodes))
    rings.append((0, 7, 12345, [(b"a", 1, b""), (b"a b", 2, b"z 1"), (b"%41", 3, b"%"), (b"#x", 1, b"\n")]))
    rings.append((0, 160, 1, []))  # no members
    # Compatibility placements: the file's order is part of the ring.
    rings.append((1, 160, 0, [(f"10.0.0.{i}:11211".encode(), rnd.randint(1, 5), b"") for i in range(12)]))
    rings.append((2, 160, 0, [(rand_bytes(1, 20), rnd.randint(0, 1), rand_bytes(0, 8)) for _ in range(9)]))
    rings.append((3, 160, 0, [(f"backend-{i}:80".encode(), rnd.randint(1, 5), b"") for i in range(10)]))
    return rings


def hexed(b):
    return b.hex() if b else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    add_arguments(ap)
    ap.add_argument("--ringfile-c", required=True)
    args = ap.parse_args()

    work = os.path.join(args.work, "ringfile")
    os.makedirs(work, exist_ok=True)
    for old in glob.glob(os.path.join(work, "*")):
        os.remove(old)
    rings = spec_rings()
    spec = os.path.join(args.work, "ringfile-spec.txt")
    with open(spec, "w") as f:
        for placement, tpw, seed, nodes in rings:
            f.write(f"ring {placement} {tpw} {seed}\n")
            for node_id, weight, zone in nodes:
                f.write(f"node {hexed(node_id)} {weight} {hexed(zone)}\n")

    programs = Programs(args)
    tools = programs.commands(args, args.ringfile_c, "ringfile")
    for lang, (cmd, e) in tools.items():
        run(f"{lang} build", cmd + ["build", spec, work, lang], env=e)

    failed = 0
    for n in range(len(rings)):
        for ext in ("txt", "json"):
            ref = open(os.path.join(work, f"c-{n}.{ext}"), "rb").read()
            for lang in LANGS[1:]:
                got = open(os.path.join(work, f"{lang}-{n}.{ext}"), "rb").read()
                if got != ref:
                    failed += 1
                    at = next((i for i, (a, b) in enumerate(zip(ref, got)) if a != b), min(len(ref), len(got)))
                    print(f"ring {n} .{ext}: {lang} differs from c at byte {at}: "
                          f"c {ref[at:at + 60]!r} {lang} {got[at:at + 60]!r}")
    # Each language loads every language's text files.
    files = [os.path.join(work, f"{lang}-{n}.txt") for n in range(len(rings)) for lang in LANGS]
    results = {lang: run(f"{lang} load", cmd + ["load"] + files, env=e).splitlines()
               for lang, (cmd, e) in tools.items()}
    reference = results["c"]
    if len(reference) != len(files):
        print(f"c load printed {len(reference)} lines for {len(files)} files")
        failed += 1
    for n in range(len(rings)):
        fps = {reference[n * len(LANGS) + i].split()[0] for i in range(len(LANGS))}
        if len(fps) != 1:
            print(f"ring {n}: C loads the four files to different fingerprints {fps}")
            failed += 1
    for lang in LANGS:
        for path, want, got in zip(files, reference, results[lang]):
            fp_want = want.split()[0]
            if got != f"{fp_want} same":
                failed += 1
                print(f"{lang} loading {os.path.basename(path)}: got '{got}', want '{fp_want} same'")
    # The shape of the reference: distinct rings, the nodes all there.
    fps = [reference[n * len(LANGS)].split()[0] for n in range(len(rings))]
    if len(set(fps)) != len(rings):
        print(f"rings share fingerprints: {fps}")
        failed += 1
    for n, (_, _, _, nodes) in enumerate(rings):
        lines = [l for l in open(os.path.join(work, f"c-{n}.txt"), "rb").read().split(b"\n")
                 if l and not l.startswith(b"%%")]
        if len(lines) != len(nodes):
            print(f"ring {n}: {len(lines)} member lines for {len(nodes)} members")
            failed += 1
    print(f"{len(rings)} rings x {len(LANGS)} languages (text and JSON), {len(files)} files loaded by each: "
          f"{'ok' if not failed else f'{failed} failures'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
