#!/usr/bin/env python3
"""The JSON twin of every vector is valid JSON that says what the ring file says.

For each tests/vectors/ring-file/NAME.ring: `make_vectors json` parses as
JSON with the documented keys in order; each member's `id`/`zone` (the
ring file spelling, %XX decoded) equals its base64 form; the fingerprint
and member count equal NAME.expect's; the members are those of the
canonical text, in its order.

Usage: check_json.py MAKE_VECTORS VECTORS_DIR
"""
import base64
import json
import os
import re
import subprocess
import sys
import urllib.parse

KEYS = ["format", "version", "placement", "hasher", "seed", "tokens_per_weight", "revision",
        "fingerprint", "members"]


def run(tool, mode, path):
    return subprocess.run([tool, mode, path], check=True, capture_output=True).stdout


def main(argv):
    tool, folder = argv[1], argv[2]
    problems, checked = [], 0
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".ring"):
            continue
        path = os.path.join(folder, name)
        doc = json.loads(run(tool, "json", path), object_pairs_hook=lambda pairs: pairs)
        keys = [k for k, _ in doc]
        doc = dict(doc)
        expect = open(path[:-5] + ".expect", encoding="utf-8").read()
        canonical = run(tool, "canonical", path).split(b"\n")
        members = [line.split(b" ") for line in canonical if line and not line.startswith(b"%%")]
        has_revision = "\nrevision -\n" not in expect
        if keys != [k for k in KEYS if k != "revision" or has_revision]:
            problems.append("%s: keys %s" % (name, keys))
        if doc["fingerprint"] != re.search(r"^fingerprint (\S+)$", expect, re.M).group(1):
            problems.append("%s: fingerprint %s" % (name, doc["fingerprint"]))
        if len(doc["members"]) != int(re.search(r"^members (\d+)$", expect, re.M).group(1)):
            problems.append("%s: %d members" % (name, len(doc["members"])))
        for m, line in zip(doc["members"], members):
            m = dict(m)
            for field in ("id", "zone"):
                if urllib.parse.unquote_to_bytes(m[field]) != base64.b64decode(m[field + "_base64"]):
                    problems.append("%s: %s %r differs from its base64" % (name, field, m[field]))
            if m["id"].encode() != line[0] or m["weight"] != int(line[1]):
                problems.append("%s: member %r is not line %r" % (name, m["id"], line))
        checked += 1
    for p in problems:
        print(p)
    print("%d vectors, %d problems" % (checked, len(problems)))
    return 1 if problems or checked < 8 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
