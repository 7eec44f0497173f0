#!/usr/bin/env python3
"""Tests of the chring command-line tool, run by meson (suite 'cli').

    cli_test.py --chring PATH --data DIR --golden DIR [--fingerprint PATH] CHECK [NAME]

CHECK is one of:
  golden NAME     run a fixed command and compare stdout with golden/NAME.out
  update-golden   rewrite every golden file from the current build (then review the diff)
  demo            the demo's hash % N figures match the closed form within 0.2 points, ketama's
                  collateral is above 0 and native's 0, and more (its run time is the benchmark
                  cli_demo in tests/bench, never a pass/fail figure)
  collateral      `sim` moves keys only onto grown / off shrunk nodes (native), and says so
  bad-input       bad arguments and files: a clear one-line message and a non-zero exit, no crash
  escapes         C0, C1, bidi controls and invalid UTF-8 in ids, keys and messages are escaped
  ring-files      check on valid and malformed ring files (the parser's FILE:LINE message), export
                  round trips (export of export is byte-identical; check, %%fingerprint and
                  chr_ring_fingerprint agree), the JSON twin, --revision, atomic -o (a killed
                  writer's temporary file deleted by the next write), directives vs flags
  key-limits      --key-file and lookup's stdin: keys up to 64 KiB, key files up to 256 MiB, FILE:LINE
  sim-load        sim --workload: the bounded busiest node within its cap, the plain ring over it
  diff            chring diff against chring lookup: the keys it lists are those that move, ranges
                  sorted and summing to the moved share, no owner never spelled as an id, the refusals

chring runs without LD_LIBRARY_PATH, as a user would run it: it must find libchring
through its rpath. The library does not look for its build tree, so the build's plugins
come from CHRING_PLUGIN_PATH, which meson test sets.
"""
import argparse
import csv
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading

# name -> (arguments, file for stdin or None). Run in the data directory, so
# paths in the output are the short names below. No timings in any of them.
GOLDEN = {
    "inspect_small": (["inspect", "-m", "small.members"], None),
    "inspect_small_csv": (["inspect", "-m", "small.members", "--format", "csv"], None),
    "inspect_small_json": (["inspect", "-m", "small.members", "--format", "json"], None),
    "inspect_mixed": (["inspect", "-m", "mixed.members"], None),
    "inspect_tokens": (["inspect", "-m", "tiny.members", "--tokens-per-weight", "3", "--tokens"], None),
    "inspect_hasher": (["inspect", "-m", "tiny.members", "--hasher", "sha1", "--seed", "5"], None),
    "inspect_empty": (["inspect", "-m", "empty.members"], None),
    "inspect_flags": (["inspect", "--nodes", "3", "--node", "big=4@rack%201", "--seed", "7"], None),
    "lookup_args": (["lookup", "-m", "small.members", "--", "user:1", "user:2", "session:abc", "-dash"], None),
    "lookup_replicas": (["lookup", "-m", "small.members", "--replicas", "3"], "keys.txt"),
    "lookup_csv": (["lookup", "-m", "mixed.members", "--format", "csv", "--replicas", "2"], "keys.txt"),
    "lookup_json": (["lookup", "-m", "mixed.members", "--format", "json", "--replicas", "2"], "keys.txt"),
    "lookup_percent": (["lookup", "-m", "mixed.members", "--percent", "--no-header"], "percent_keys.txt"),
    "sim_small": (["sim", "-m", "small.members", "--add", "cache-f=2@eu-west-1c", "--remove", "cache-b",
                   "--keys", "20000"], None),
    "sim_reweight_json": (["sim", "-m", "small.members", "--reweight", "cache-a=3", "--reweight", "cache-d=1",
                           "--keys", "5000", "--flows", "3", "--format", "json"], None),
    "sim_key_file_csv": (["sim", "-m", "tiny.members", "--remove", "beta", "--key-file", "keys.txt",
                          "--format", "csv"], None),
    "sim_compat": (["sim", "-m", "compat.members", "--add", "10.0.0.5:11211", "--keys", "20000",
                    "--placement", "native,ketama,nginx", "--flows", "2"], None),
    "check_small": (["check", "small.members"], None),
    "check_directives_json": (["check", "directives.ring", "--format", "json"], None),
    "check_mixed_csv": (["check", "mixed.members", "--format", "csv"], None),
    "export_small": (["export", "-m", "small.members"], None),
    "export_mixed_json": (["export", "-m", "mixed.members", "--format", "json"], None),
    "export_flags_revision": (["export", "--nodes", "2", "--node", "big=4@rack%201", "--node", "a%20b", "--revision", "9"],
                              None),
    "export_compat_ketama": (["export", "-m", "compat.members", "--placement", "ketama"], None),
    "export_stdin_directives": (["export", "-m", "-"], "directives.ring"),
    "inspect_directives": (["inspect", "-m", "directives.ring", "--seed", "7"], None),
    "diff_small": (["diff", "small.members", "small_after.members", "--keys", "keys.txt"], None),
    "diff_small_json": (["diff", "small.members", "small_added.members", "--format", "json", "--replicas", "3",
                         "--policy", "zones-first"], None),
    "diff_small_csv": (["diff", "small.members", "small_after.members", "--format", "csv"], None),
    "check_marks": (["check", "marks.ring"], None),
    "inspect_marks_json": (["inspect", "-m", "marks.ring", "--format", "json"], None),
    "export_marks": (["export", "-m", "marks.ring"], None),
    "lookup_marks": (["lookup", "-m", "marks.ring", "--replicas", "3"], "keys.txt"),
}


def run_chring(args, chring, cwd, stdin_path=None):
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)  # load libchring through chring's own rpath, as installed
    stdin = open(os.path.join(cwd, stdin_path), "rb") if stdin_path else subprocess.DEVNULL
    try:
        return subprocess.run([chring] + args, cwd=cwd, stdin=stdin, capture_output=True, env=env, timeout=120)
    finally:
        if stdin_path:
            stdin.close()


def golden(opts, name):
    args, stdin = GOLDEN[name]
    r = run_chring(args, opts.chring, opts.data, stdin)
    if r.returncode != 0:
        return [f"{name}: exit {r.returncode}: {r.stderr.decode(errors='replace')}"]
    path = os.path.join(opts.golden, name + ".out")
    with open(path, "rb") as f:
        want = f.read()
    if r.stdout == want:
        return []
    got_lines, want_lines = r.stdout.decode(errors="replace").splitlines(), want.decode(errors="replace").splitlines()
    for i, (g, w) in enumerate(zip(got_lines, want_lines)):
        if g != w:
            return [f"{name}: line {i + 1} differs\n  want: {w}\n  got:  {g}"]
    return [f"{name}: {len(got_lines)} lines, golden has {len(want_lines)}"]


def update_golden(opts):
    for name, (args, stdin) in GOLDEN.items():
        r = run_chring(args, opts.chring, opts.data, stdin)
        if r.returncode != 0:
            sys.exit(f"{name}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
        with open(os.path.join(opts.golden, name + ".out"), "wb") as f:
            f.write(r.stdout)
        print("wrote", name)
    return []


def json_of(opts, args):
    r = run_chring(args + ["--format", "json"], opts.chring, opts.data)
    if r.returncode != 0:
        raise AssertionError(f"{args}: exit {r.returncode}: {r.stderr.decode(errors='replace')}")
    return json.loads(r.stdout)


# The demo's section 5 cluster as `sim` spells it: 10.0.0.N:11211 of weight N, and its changes.
KETAMA_SERVERS = [arg for n in range(1, 11) for arg in ("--node", f"10.0.0.{n}:11211={n}")]
KETAMA_CHANGES = {
    "add 10.0.0.11:11211 (weight 5)": ["--add", "10.0.0.11:11211=5"],
    "remove 10.0.0.7:11211 (weight 7)": ["--remove", "10.0.0.7:11211"],
    "reweight 10.0.0.4:11211 (weight 4 -> 8)": ["--reweight", "10.0.0.4:11211=8"],
}
KETAMA_KEYS_MAX = 200000  # the demo routes at most this many keys through ketama (MD5)


def demo_ketama(opts, d, keys):
    """Section 5: native collateral 0, ketama's above 0, and the same counts `sim` finds."""
    failures = []
    rows = {row["change"]: row for row in d.get("ketama_moves", [])}
    if sorted(rows) != sorted(KETAMA_CHANGES):
        return [f"ketama_moves rows {sorted(rows)}, want {sorted(KETAMA_CHANGES)}"]
    for change, row in rows.items():
        if row["keys"] != min(keys, KETAMA_KEYS_MAX):
            failures.append(f"ketama_moves {change}: {row['keys']} keys routed of {keys}")
        if row["native_collateral"] != 0:
            failures.append(f"ketama_moves {change}: native collateral {row['native_collateral']}")
        # Weighted ketama recomputes every server's point count on any change; with these
        # fixed servers and keys (ketama ignores --hasher and --seed) that moves keys between
        # unchanged servers in every row: 0.9% to 4.6% of the keys at 200,000 keys.
        if row["ketama_collateral"] <= 0:
            failures.append(f"ketama_moves {change}: ketama collateral {row['ketama_collateral']}, want > 0")
        if not (0 < row["ketama_collateral"] < row["ketama_moved"]):
            failures.append(f"ketama_moves {change}: collateral {row['ketama_collateral']} "
                            f"of {row['ketama_moved']} moved")
        for scheme in ("native", "ketama"):
            pct = 100 * row[f"{scheme}_moved"] / row["keys"]
            if abs(row[f"{scheme}_moved_pct"] - pct) > 1e-6:
                failures.append(f"ketama_moves {change}: {scheme}_moved_pct {row[f'{scheme}_moved_pct']} != {pct}")
        # 160 tokens per unit of weight: the changed server's share is within 1.6x of its weight share.
        if not (row["ideal_pct"] / 1.6 <= row["native_moved_pct"] <= row["ideal_pct"] * 1.6):
            failures.append(f"ketama_moves {change}: native moved {row['native_moved_pct']}%, "
                            f"ideal {row['ideal_pct']}%")
    # The same servers, tags and change through `sim` give the same counts.
    for change, ops in KETAMA_CHANGES.items():
        s = json_of(opts, ["sim"] + KETAMA_SERVERS + ops + ["--keys", str(min(keys, KETAMA_KEYS_MAX)),
                                                            "--placement", "native,ketama"])
        by = {row["scheme"]: row for row in s["moves"]}
        got = (rows[change]["native_moved"], rows[change]["ketama_moved"], rows[change]["ketama_collateral"])
        want = (by["ring (native)"]["moved"], by["ring (ketama)"]["moved"], by["ring (ketama)"]["collateral"])
        if got != want:
            failures.append(f"ketama_moves {change}: demo (native moved, ketama moved, ketama collateral) "
                            f"{got}, sim {want}")
    return failures


def demo(opts):
    """The demo's story holds: the closed form, collateral 0, 1/sqrt(V), blast radius, replicas, ketama."""
    failures = []
    d = json_of(opts, ["demo"])
    failures += demo_ketama(opts, d, 1000000)
    failures += demo_ketama(opts, json_of(opts, ["demo", "--keys", "20000"]), 20000)
    if d["setup"]["keys"] != 1000000:
        failures.append(f"demo default keys: {d['setup']['keys']}")
    pairs = {(row["from"], row["to"]) for row in d["key_moves"]}
    for need in [(10, 9), (10, 11), (10, 12), (100, 99)]:
        if need not in pairs:
            failures.append(f"demo lacks the {need[0]} -> {need[1]} row")
    for row in d["key_moves"]:
        n, m = row["from"], row["to"]
        closed = 100 * (1 - min(n, m) * math.gcd(n, m) / (n * m))
        # 1M keys: the binomial standard error of a ~90% share is 0.03 points; 0.2 is > 6 sigma.
        if abs(row["modulo_moved_pct"] - closed) > 0.2:
            failures.append(f"{n}->{m}: hash % N moved {row['modulo_moved_pct']}%, closed form {closed:.4f}%")
        if abs(row["modulo_closed_form_pct"] - closed) > 1e-6:
            failures.append(f"{n}->{m}: printed closed form {row['modulo_closed_form_pct']} != {closed}")
        ideal = 100 * abs(n - m) / max(n, m)
        if abs(row["ideal_pct"] - ideal) > 1e-6:
            failures.append(f"{n}->{m}: ideal {row['ideal_pct']} != {ideal}")
        if row["ring_collateral"] != 0:
            failures.append(f"{n}->{m}: ring collateral {row['ring_collateral']}")
        # The moved share is the changed nodes' share of the circle: 160 tokens keep it
        # within a factor 1.6 of ideal (stdev/mean ~ 0.08 per node).
        if not (ideal / 1.6 <= row["ring_moved_pct"] <= ideal * 1.6):
            failures.append(f"{n}->{m}: ring moved {row['ring_moved_pct']}%, ideal {ideal}%")
    tokens = [row["tokens_per_node"] for row in d["balance"]]
    if tokens != [1, 16, 64, 160, 256, 1000]:
        failures.append(f"balance rows {tokens}")
    for row in d["balance"]:
        # 100 nodes: the sample stdev/mean has a relative error of about 1/sqrt(200) = 7%.
        if row["tokens_per_node"] >= 16 and not (0.7 <= row["measured_over_law"] <= 1.35):
            failures.append(f"balance V={row['tokens_per_node']}: stdev/mean {row['stdev_over_mean']} "
                            f"is {row['measured_over_law']}x the 1/sqrt(V) law")
        if row["min_over_mean"] > 1 or row["max_over_mean"] < 1:
            failures.append(f"balance V={row['tokens_per_node']}: min/max around the mean are wrong")
    blast = {row["tokens_per_node"]: row for row in d["blast_radius"]}
    if blast[1]["survivors_taking"] != 1 or abs(blast[1]["largest_take_pct"] - 100) > 1e-9:
        failures.append(f"blast radius with 1 token: {blast[1]}")
    if blast[160]["survivors_taking"] != 9 or blast[160]["largest_take_pct"] > 30:
        failures.append(f"blast radius with 160 tokens: {blast[160]}")
    for col in ("tokens_1_pct", "tokens_16_pct", "tokens_160_pct"):
        total = sum(row[col] for row in d["blast_radius_by_survivor"])
        if abs(total - 100) > 0.01:
            failures.append(f"blast radius shares {col} sum to {total}")
    for row in d["replicas"]:
        if row["method"] == "chring replicas" and row["distinct_pct"] != 100:
            failures.append(f"replicas: {row}")
        if row["method"].startswith("next 3") and not (5 < row["doubled_pct"] < 50):
            failures.append(f"naive replicas should double up often: {row}")
    # The table a person reads is there too, with every section; past the ketama cap it says
    # how many keys section 5 used.
    r = run_chring(["demo", "--keys", "300000"], opts.chring, opts.data)
    text = r.stdout.decode()
    for heading in ("1. Keys that move", "2. How even", "3. Blast radius", "4. Replicas", "5. Weighted ketama",
                    "Measured with the first 200,000 of the 300,000 keys"):
        if heading not in text:
            failures.append(f"demo text lacks '{heading}'")
    return failures


def collateral(opts):
    """Native placement: moves only onto grown nodes / off shrunk ones, exactly."""
    failures = []
    base = ["sim", "--nodes", "20", "--keys", "50000"]
    cases = {
        "add two": ["--add", "new-1", "--add", "new-2=3"],
        "remove one": ["--remove", "node-7"],
        "reweight up": ["--reweight", "node-3=3"],
        "reweight down": ["--reweight", "node-3=0"],
        "all at once": ["--add", "new-1", "--remove", "node-7", "--reweight", "node-3=2", "--reweight", "node-9=0"],
        "replace": ["--remove", "node-4", "--add", "node-4=2"],
    }
    for name, ops in cases.items():
        d = json_of(opts, base + ops)
        native = next(row for row in d["moves"] if row["scheme"] == "ring (native)")
        if native["collateral"] != 0:
            failures.append(f"{name}: native collateral {native['collateral']}")
        if native["moved"] == 0:
            failures.append(f"{name}: nothing moved")
        modulo = next(row for row in d["moves"] if row["scheme"] == "hash % N")
        # Unweighted hash % N changes only when the list of nodes with weight > 0 does.
        if name not in ("replace", "reweight up") and modulo["collateral"] == 0:
            failures.append(f"{name}: hash % N shows no collateral; the counter cannot be trusted")
        # Exactly: moved = keys lost by shrunk nodes + ... = keys gained by grown nodes.
        gained = lost = 0
        for row in d["nodes"]:
            before = row["keys_before_pct"] * 50000 / 100
            after = row["keys_after_pct"] * 50000 / 100
            if after > before:
                gained += after - before
            else:
                lost += before - after
        if abs(gained - native["moved"]) > 0.5 and name in ("add two", "reweight up"):
            failures.append(f"{name}: moved {native['moved']} but grown nodes gained {gained}")
        if abs(lost - native["moved"]) > 0.5 and name in ("remove one", "reweight down"):
            failures.append(f"{name}: moved {native['moved']} but shrunk nodes lost {lost}")
        flows = sum(row["keys"] for row in d["flows"])
        if flows != native["moved"]:
            failures.append(f"{name}: flows add up to {flows}, moved {native['moved']}")
    # The counter does see collateral when there is some: weighted ketama recomputes points.
    d = json_of(opts, ["sim", "-m", "compat.members", "--add", "10.0.0.5:11211=2", "--keys", "50000",
                       "--placement", "native,ketama"])
    by = {row["scheme"]: row for row in d["moves"]}
    if by["ring (native)"]["collateral"] != 0 or by["ring (ketama)"]["collateral"] == 0:
        failures.append(f"native vs ketama collateral: {by}")
    return failures


# (arguments, stdin file, exit status, text the message must contain)
BAD = [
    ([], None, 2, "a command is required"),
    (["frobnicate"], None, 2, "unknown command 'frobnicate'"),
    (["--bogus"], None, 2, "--bogus"),
    (["demo", "--keys", "5"], None, 2, "--keys"),
    (["demo", "--format", "xml"], None, 2, "xml"),
    (["demo", "--hasher", "no-such-hasher"], None, 1, "no-such-hasher"),
    (["sim", "--nodes", "3"], None, 2, "nothing to simulate"),
    (["sim", "--nodes", "3", "--remove", "nope"], None, 1, "--remove nope: chr_ring_apply: no node 'nope'"),
    (["sim", "--nodes", "3", "--reweight", "node-1"], None, 2, "expected ID=WEIGHT"),
    (["sim", "--nodes", "3", "--remove", "node-1=2"], None, 2, "give only the id"),
    (["sim", "--nodes", "3", "--add", "node-1"], None, 1, "already in the ring"),
    (["sim", "--nodes", "3", "--add", "x=abc"], None, 2, "--add x=abc: weight 'abc' is not a whole number"),
    (["sim", "--nodes", "3", "--add", "x", "--keys", "0"], None, 2, "--keys"),
    (["sim", "--nodes", "3", "--add", "x", "--key-file", "missing.txt"], None, 1, "missing.txt: cannot open"),
    (["sim", "--nodes", "3", "--add", "x", "--placement", "native,bogus"], None, 2, "unknown placement mode 'bogus'"),
    (["sim", "-m", "compat.members", "--add", "y=5", "--placement", "ketama-unweighted"], None, 1, "weight"),
    (["inspect"], None, 2, "no members"),
    (["inspect", "-m", "missing.members"], None, 1, "missing.members: cannot open the ring file: No such file"),
    (["inspect", "-m", "."], None, 1, "chring: .: is a directory, not a ring file"),
    (["inspect", "-m", "bad_bom.members"], None, 1,
     "bad_bom.members:1: the file starts with a UTF-8 byte order mark (EF BB BF): save it without one"),
    (["lookup", "-m", "bad_bom.members", "k"], None, 1, "bad_bom.members:1: the file starts with a UTF-8 byte order"),
    (["inspect", "-m", "/dev/zero"], None, 1,
     "chring: /dev/zero:1: NUL byte: this is binary data, not a ring file (a ring file is text)"),
    (["inspect", "-m", "empty.members"], None, 0,
     "chring: warning: the ring has no node with tokens (empty.members has no member lines): every lookup in it fails"),
    (["inspect", "--node", "a=0"], None, 0, "chring: warning: the ring has no node with tokens (every member has weight 0)"),
    # A duplicate names both places: the file's line, which --node, or --nodes N.
    (["inspect", "-m", "small.members", "--node", "cache-b=3"], None, 1,
     "chring: --node cache-b=3: duplicate id 'cache-b' (first in small.members:5)"),
    (["lookup", "-m", "tiny.members", "--node", "beta", "k"], None, 1, "--node beta: duplicate id 'beta' (first in tiny.members:"),
    (["inspect", "-m", "tiny.members", "--nodes", "2", "--node", "node-2=4"], None, 2,
     "--node node-2=4: duplicate id 'node-2' (first in --nodes 2)"),
    (["sim", "--node", "a", "--node", "b", "--add", "c", "d"], None, 2, "The following argument was not expected: d"),
    (["inspect", "--node", "a", "--node", "b", "--node", "a=3"], None, 2, "--node a=3: duplicate id 'a' (first in --node a)"),
    (["inspect", "--nodes", "2", "--placement", "bogus"], None, 2,
     "unknown placement mode 'bogus' (this build knows: native"),
    (["inspect", "--nodes", "2", "--hasher", "nope"], None, 1, "no hasher named 'nope'"),
    (["inspect", "--nodes", "2", "--hasher", "nope"], None, 1, "(available: "),
    (["inspect", "--nodes", "2", "--tokens-per-weight", "0"], None, 2, "--tokens-per-weight: '0' is under the minimum 1"),
    (["inspect", "--nodes", "2", "--placement", "ketama", "--hasher", "xxh3"], None, 1,
     "is defined with hasher 'md5', not 'xxh3'"),
    (["inspect", "--node", "a=99999999"], None, 2, "weight '99999999' is over the limit 1000000"),
    (["inspect", "--node", "a@b"], None, 0, ""),  # '@' without '=' is part of the id
    (["inspect", "--node", "="], None, 2, "id is empty"),
    (["inspect", "--nodes", "2", "--svg", "/nonexistent-dir/x.svg"], None, 1, "cannot write the SVG"),
    (["inspect", "--nodes", "0"], None, 2, "--nodes"),
    (["lookup", "-m", "-"], None, 2, "cannot both come from stdin"),
    (["lookup", "--nodes", "2", "--replicas", "0", "k"], None, 2, "--replicas"),
    (["lookup", "-m", "empty.members", "k"], None, 1,
     "chring: no key can have an owner: empty.members has no member lines (give members with a weight above 0)"),
    (["lookup", "--node", "a=0", "k"], None, 1, "no key can have an owner: every member has weight 0"),
    (["sim", "-m", "empty.members", "--add", "a"], None, 1, "before the changes no node has a weight above 0"),
    (["sim", "--nodes", "1", "--reweight", "node-1=0"], None, 1, "after the changes no node"),
    (["sim", "--nodes", "2", "--add", "x", "--key-file", "empty.members"], None, 1, "has no keys"),
    (["lookup", "--nodes", "2", "--percent", "%zz"], None, 1, "key '%zz': '%' at byte 1"),
    (["lookup", "--nodes", "2", "--plugin-dir", "/nonexistent", "--hasher", "absent", "k"], None, 1, "absent"),
    (["inspect", "-m", "bad_fields_few.members"], None, 1,
     "bad_fields_few.members:2: expected 'id weight [zone]', found 1 field"),
    (["inspect", "-m", "bad_fields_many.members"], None, 1, "bad_fields_many.members:1: expected"),
    (["inspect", "-m", "bad_weight.members"], None, 1, "bad_weight.members:3: weight '12x' is not a whole number"),
    (["inspect", "-m", "bad_weight_range.members"], None, 1, "bad_weight_range.members:1: weight '1000001' is over"),
    (["inspect", "-m", "bad_weight_sign.members"], None, 1, "bad_weight_sign.members:1: weight '-1'"),
    (["inspect", "-m", "bad_percent.members"], None, 1, "bad_percent.members:2: id 'b%2': '%' at byte 2"),
    (["inspect", "-m", "bad_duplicate.members"], None, 1, "bad_duplicate.members:4: duplicate id 'a' (first on line 1)"),
    (["inspect", "-m", "bad_control.members"], None, 1, "bad_control.members:1: id 'a\\x07b': raw control byte"),
    (["inspect", "-m", "bad_id_long.members"], None, 1, "bad_id_long.members:1: id is 257 bytes long"),
    (["inspect", "-m", "bad_zone_long.members"], None, 1, "bad_zone_long.members:1: zone is 65 bytes long"),
    (["lookup", "-m", "bad_weight.members", "k"], None, 1, "bad_weight.members:3:"),
    (["sim", "-m", "bad_duplicate.members", "--add", "x"], None, 1, "bad_duplicate.members:4:"),
    (["inspect", "-m", "-"], "bad_weight.members", 1, "<stdin>:3: weight '12x'"),
    (["sim", "-m", "-", "--add", "x", "--key-file", "-"], None, 2, "cannot both come from stdin"),
    # Ring files with directives: the library's parser, FILE:LINE.
    (["inspect", "-m", "bad_directive.ring"], None, 1, "bad_directive.ring:2: unknown directive %%colour (known: "),
    (["lookup", "-m", "bad_after_member.ring", "k"], None, 1,
     "bad_after_member.ring:2: directive %%seed after the first member (line 1): directives come first"),
    (["inspect", "-m", "bad_fingerprint.ring"], None, 1,
     "bad_fingerprint.ring:7: %%fingerprint 0x0000000000000001 does not match the ring the file describes (0x"),
    # The %%fingerprint is the file's ring's: members from flags come after the check.
    (["inspect", "-m", "canonical.ring", "--node", "extra=2"], None, 0, ""),
    (["inspect", "-m", "directives.ring", "--node", "beta=5"], None, 1,
     "chring: --node beta=5: duplicate id 'beta' (first in directives.ring:8)"),
    # Directives set the options; a flag given must agree with them (exit 2), naming the line.
    (["inspect", "-m", "directives.ring", "--seed", "7", "--tokens-per-weight", "40", "--placement", "native",
      "--hasher", "xxh3"], None, 0, ""),
    (["inspect", "-m", "directives.ring", "--seed", "5"], None, 2,
     "chring: --seed 5: directives.ring:4: %%seed 7 differs from the ring's seed 5 (a ring file with option "
     "directives sets the ring's options"),
    (["lookup", "-m", "directives.ring", "--tokens-per-weight", "160", "k"], None, 2,
     "--tokens-per-weight 160: directives.ring:5: %%tokens-per-weight 40 differs"),
    (["sim", "-m", "directives.ring", "--add", "x", "--placement", "native,ketama"], None, 2,
     "--placement ketama: directives.ring:3: %%placement native differs from the ring's placement ketama"),
    (["inspect", "-m", "directives.ring", "--hasher", "md5"], None, 2,
     "--hasher md5: directives.ring:3: the file's hasher is xxh3 (no %%hasher line: the default) differs"),
    (["inspect", "-m", "directives.ring", "--hasher", "nope"], None, 2,
     "--hasher nope conflicts with the options of directives.ring (placement native, hasher xxh3, seed 7"),
    (["check", "directives.ring", "--seed", "1"], None, 2, "--seed 1: directives.ring:4: %%seed 7 differs"),
    # A plain member list takes the flags.
    (["check", "compat.members", "--placement", "ketama-unweighted"], None, 0, ""),
    (["check", "small.members", "--placement", "ketama-unweighted"], None, 1,
     "small.members:5: weight 2 of 'cache-b' is out of range for placement ketama-unweighted"),
    # check and export.
    (["check"], None, 2, "file is required"),
    (["check", "missing.members"], None, 1, "chring: missing.members: cannot open the ring file"),
    (["check", "bad_duplicate.members"], None, 1, "chring: bad_duplicate.members:4: duplicate id 'a' (first on line 1)"),
    (["check", "-"], "bad_weight.members", 1, "chring: <stdin>:3: weight '12x' is not a whole number"),
    (["check", "/dev/zero"], None, 1, "chring: /dev/zero:1: NUL byte"),
    (["check", "empty.members"], None, 0, "chring: warning: the ring has no node with tokens"),
    (["check", "small.members", "--format", "xml"], None, 2, "xml"),
    (["export"], None, 2, "no members"),
    (["export", "--nodes", "2", "--format", "csv"], None, 2, "csv"),
    (["export", "--nodes", "2", "--revision", "-1"], None, 2, "--revision: '-1' is not a whole number"),
    (["export", "--nodes", "2", "--revision", "18446744073709551616"], None, 2, "is over the limit"),
    (["export", "--nodes", "2", "-o", "/nonexistent-dir/ring.txt"], None, 1,
     "chring: /nonexistent-dir/ring.txt: cannot write the ring file: No such file or directory"),
    (["export", "--nodes", "2", "-o", "."], None, 1, "cannot write the ring file"),
    (["export", "-m", "bad_percent.members"], None, 1, "bad_percent.members:2: id 'b%2': '%' at byte 2"),
    # Numbers: decimal digits in range, or exit 2 (no wrap-around of -1 or 2^64).
    (["inspect", "--nodes", "2", "--seed", "-1"], None, 2, "--seed: '-1' is not a whole number"),
    (["inspect", "--nodes", "2", "--seed", "18446744073709551616"], None, 2,
     "--seed: '18446744073709551616' is over the limit 18446744073709551615"),
    (["inspect", "--nodes", "2", "--seed", "99999999999999999999999"], None, 2, "is over the limit"),
    (["inspect", "--nodes", "2", "--seed", "18446744073709551615"], None, 0, ""),
    (["inspect", "--nodes", "2", "--seed", "0x10"], None, 2, "--seed: '0x10' is not a whole number"),
    (["inspect", "--nodes", "2", "--seed", "+5"], None, 2, "--seed: '+5' is not a whole number"),
    (["inspect", "--nodes", "2", "--seed", " 5"], None, 2, "--seed: ' 5' is not a whole number"),
    (["inspect", "--nodes", "2", "--seed", ""], None, 2, "--seed"),
    (["inspect", "--nodes", "2", "--tokens-per-weight", "65537"], None, 2, "'65537' is over the limit 65536"),
    (["inspect", "--nodes", "2", "--tokens-per-weight", "4294967297"], None, 2, "is over the limit 65536"),
    (["inspect", "--nodes", "-1"], None, 2, "--nodes: '-1' is not a whole number"),
    (["inspect", "--nodes", "1048577"], None, 2, "--nodes: '1048577' is over the limit 1048576"),
    (["lookup", "--nodes", "2", "--replicas", "-1", "k"], None, 2, "--replicas: '-1' is not a whole number"),
    (["lookup", "--nodes", "2", "--replicas", "18446744073709551617", "k"], None, 2, "--replicas"),
    (["sim", "--nodes", "2", "--add", "x", "--keys", "1e6"], None, 2, "--keys: '1e6' is not a whole number"),
    (["sim", "--nodes", "2", "--add", "x", "--flows", "-1"], None, 2, "--flows: '-1' is not a whole number"),
    (["demo", "--keys", "18446744073709551616"], None, 2, "--keys: '18446744073709551616' is over the limit"),
    # CLI11's own errors: one line, the prefix, where to look for help.
    (["inspect", "--bogus"], None, 2, "chring: The following argument was not expected: --bogus (see chring inspect --help)"),
    (["inspect", "--nodes"], None, 2, "--nodes"),
    (["sim", "--keys", "abc", "--keys", "5"], None, 2, "--keys"),
    (["inspect", "--nodes", "2", "--bogus\x1b[2J"], None, 2, "--bogus\\x1B[2J"),
]


def bad_input(opts):
    failures = []
    for args, stdin, status, text in BAD:
        r = run_chring(args, opts.chring, opts.data, stdin)
        err = r.stderr.decode(errors="replace")
        what = "chring " + " ".join(args)
        if r.returncode < 0:
            failures.append(f"{what}: killed by {signal.Signals(-r.returncode).name}")
        elif r.returncode != status:
            failures.append(f"{what}: exit {r.returncode}, want {status}; stderr: {err.strip()}")
        elif text not in err:
            failures.append(f"{what}: stderr lacks '{text}': {err.strip()}")
        elif status != 0 and not (err.startswith("chring: ") and err.count("\n") == 1):
            failures.append(f"{what}: want one line 'chring: ...', got: {err!r}")
        elif status != 0 and r.stdout:
            failures.append(f"{what}: printed to stdout on failure: {r.stdout[:200]!r}")
        for bad in ("terminate called", "Sanitizer", "Segmentation", "internal error"):
            if bad in err:
                failures.append(f"{what}: {bad}: {err.strip()}")
        if failures and failures[-1].startswith(what):
            print("not ok:", what)
        else:
            print("ok:", what)
    failures += members_limits(opts)
    failures += endless_line(opts)
    # --help and --version stay normal: stdout, exit 0.
    for args, want in ((["--help"], "Usage: chring"), (["sim", "--help"], "Usage: chring sim"),
                       (["--version"], "chring ")):
        r = run_chring(args, opts.chring, opts.data)
        out = r.stdout.decode(errors="replace")
        if r.returncode != 0 or want not in out or not out.endswith("\n") or r.stderr:
            failures.append(f"chring {' '.join(args)}: exit {r.returncode}, stdout {out[:80]!r}, stderr {r.stderr!r}")
    return failures


def members_limits(opts):
    """Lines up to 64 KiB and ring files up to 256 MiB (the library's limits); past them the parser's
    FILE:LINE message, or the size, and no unbounded growth."""
    line_max, file_max = 64 << 10, 256 << 20
    comment = b"#" + b"x" * 1022 + b"\n"  # 1 KiB lines
    full = b"a 1\n" + comment * ((file_max - 4) // len(comment))
    full += b"#" * (file_max - len(full) - 1) + b"\n"  # exactly 256 MiB
    cases = [
        (b"a 1\n#" + b"y" * (line_max - 1) + b"\nb 1\n", 0, ""),  # exactly 64 KiB: fine
        (b"a 1\nb 1\n#" + b"y" * line_max + b"\n", 1, "<stdin>:3: line is 65537 bytes long (limit 65536)"),
        (b"a 1\n#" + b"y" * (line_max - 2) + b"\r\n", 0, ""),  # the CR counts, the LF does not
        (b"a 1\n#" + b"y" * (line_max - 1) + b"\r\n", 1, "<stdin>:2: line is 65537 bytes long (limit 65536)"),
        (full, 0, ""),
        (full + b"b 1\n", 1, "chring: <stdin>: is more than 268435456 bytes (the limit for a ring file)"),
    ]
    failures = []
    for data, status, text in cases:
        r = subprocess.run([opts.chring, "inspect", "-m", "-", "--format", "json"], input=data,
                           capture_output=True, timeout=120)
        err = r.stderr.decode(errors="replace")
        what = f"ring file of {len(data)} bytes on stdin"
        if r.returncode != status or text not in err:
            failures.append(f"{what}: exit {r.returncode}, want {status} and '{text}'; stderr: {err.strip()[:300]}")
        elif status and not (err.startswith("chring: <stdin>") and err.count("\n") == 1):
            failures.append(f"{what}: want one line 'chring: <stdin>...', got {err[:300]!r}")
        elif status == 0 and json.loads(r.stdout)["ring"]["nodes"] < 1:
            failures.append(f"{what}: members lost")
    # A regular file over the limit is refused by its size, before it is read (sparse: no disk).
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.ring")
        with open(big, "wb") as f:
            f.truncate(file_max + 1)
        r = run_chring(["check", big], opts.chring, tmp)
        want = f"chring: {big}: is {file_max + 1} bytes (limit {file_max})"
        if r.returncode != 1 or r.stderr.decode(errors="replace").strip() != want:
            failures.append(f"sparse file over the limit: exit {r.returncode}, stderr {r.stderr[:300]!r}, want {want!r}")
    return failures


# Runs argv[1:] with stdout on /dev/null and prints its exit status and peak memory (KiB).
PEAK_MEMORY = """
import os, sys
pid = os.fork()
if pid == 0:
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def endless_line(opts):
    """A line over 64 KiB ends the read of a ring file in that line (FILE:LINE), however long it
    is: 300 MiB of 'a' without a newline through a pipe is not read whole (the writer is cut off
    and chring's peak memory stays far below the 256 MiB it would hold); an earlier bad line is
    still the one named; a file and a pipe of the same bytes get the same message."""
    line_max, endless = 64 << 10, 300 << 20
    too_long = "line is more than 65536 bytes long (limit 65536)"
    failures = []
    for prefix, want in ((b"", f"<stdin>:1: {too_long}"), (b"a 1\n# ok\n", f"<stdin>:3: {too_long}"),
                         (b"a 1\nb x\n", "<stdin>:2: weight 'x' is not a whole number")):
        with tempfile.TemporaryFile() as err:
            # A small process in between forks chring: a child's peak memory counts the memory
            # of the process it was forked from, which for this one may be hundreds of MiB.
            p = subprocess.Popen([sys.executable, "-c", PEAK_MEMORY, opts.chring, "check", "-"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
            written = [0]

            def feed():
                chunk = b"a" * (1 << 20)
                try:
                    p.stdin.write(prefix)
                    while written[0] < endless:
                        p.stdin.write(chunk)
                        written[0] += len(chunk)
                except OSError:  # chring stopped reading: EPIPE
                    pass
                try:
                    p.stdin.close()
                except OSError:
                    pass

            writer = threading.Thread(target=feed)
            writer.start()
            status, peak_kib = map(int, p.stdout.read().split())
            p.wait()
            writer.join()
            err.seek(0)
            text = err.read().decode(errors="replace")
        what = f"check - of {prefix!r} + 300 MiB of 'a'"
        if status != 1 or not text.startswith("chring: " + want) or text.count("\n") != 1:
            failures.append(f"{what}: exit {status}, stderr {text[:300]!r}, want 'chring: {want}'")
        if written[0] > 64 << 20:
            failures.append(f"{what}: {written[0] >> 20} MiB read before it stopped")
        if peak_kib > 128 << 10:
            failures.append(f"{what}: peak memory {peak_kib >> 10} MiB")
    # The same bytes from a file and from a pipe: the same message (where a read stops does not
    # depend on how the bytes arrive).
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "long.ring")
        with open(path, "wb") as f:
            f.write(b"a 1\n#" + b"y" * (line_max + 4464) + b"\nb 1\n")
        from_file = run_chring(["check", "long.ring"], opts.chring, tmp)
        from_pipe = run_chring(["check", "-"], opts.chring, tmp, "long.ring")
        want = f"long.ring:2: {too_long}"
        got = (from_file.returncode, from_file.stderr.decode(), from_pipe.returncode, from_pipe.stderr.decode())
        if got != (1, f"chring: {want}\n", 1, f"chring: {want.replace('long.ring', '<stdin>')}\n"):
            failures.append(f"a 70,000-byte line from a file and a pipe: {got}")
    return failures


# Byte sequences a terminal acts on: C0 (ESC), C1 (U+0085, U+009B CSI), bidi marks,
# overrides and isolates, and bytes that are not UTF-8. None may reach stdout or stderr.
HIDDEN = [b"\x1b", b"\xc2\x85", b"\xc2\x9b", b"\xd8\x9c", b"\xe2\x80\x8e", b"\xe2\x80\x8f",
          b"\xe2\x80\xaa", b"\xe2\x80\xae", b"\xe2\x81\xa6", b"\xe2\x81\xa9", b"\xff"]

# (arguments, stdin, text stdout must contain, text stderr must contain)
ESCAPES = [
    (["inspect", "--node", "evil%C2%9B2J", "--node", "ok"], None, b"evil%C2%9B2J", b""),
    (["inspect", "--node", "a%E2%80%AEb=2", "--node", "c%E2%81%A6d", "--node", "e%E2%80%8Ff"], None,
     b"a%E2%80%AEb", b""),
    (["inspect", "--node", "a%D8%9Cb", "--node", "x%FFy", "--format", "csv"], None, b"a%D8%9Cb", b""),
    (["inspect", "--node", "evil%C2%9B2J", "--node", "r%E2%80%AEl", "--format", "json"], None,
     b'"evil%C2%9B2J"', b""),
    (["lookup", "--nodes", "2", b"evil\xc2\x9b2J".decode("utf-8"), "a\u202eb"], None, b"evil\\xC2\\x9B2J", b""),
    (["lookup", "--nodes", "2", "--format", "csv", "a\u2066b"], None, b"a\\xE2\\x81\\xA6b", b""),
    (["lookup", "--nodes", "2"], "hidden_keys.txt", b"k\\x1B[2J", b""),
    (["lookup", "--nodes", "2", "--format", "json"], "hidden_keys.txt", b"\\u009B", b""),
    # The library names ids and hashers in its messages as files write them (%XX).
    (["sim", "--nodes", "2", "--remove", "gone%E2%80%AE"], None, b"", b"no node 'gone%E2%80%AE'"),
    (["sim", "--nodes", "2", "--remove", "gone%C2%9B2J"], None, b"", b"no node 'gone%C2%9B2J'"),
    (["inspect", "--nodes", "2", "--placement", "x\u202ey"], None, b"", b"x\\xE2\\x80\\xAEy"),
    (["inspect", "--nodes", "2", "--hasher", "h\u009b2J"], None, b"", b"hasher named 'h%C2%9B2J'"),
    (["inspect", "-m", "hidden_id.members"], None, b"", b"hidden_id.members:2: id 'b"),
]


def escapes(opts):
    """Ids, keys and messages never carry C1, bidi or invalid UTF-8 bytes raw."""
    failures = []
    for args, stdin, out_text, err_text in ESCAPES:
        what = "chring " + " ".join(args)
        r = run_chring(args, opts.chring, opts.data, stdin)
        if r.returncode < 0:
            failures.append(f"{what}: killed by {signal.Signals(-r.returncode).name}")
            continue
        for name, stream in (("stdout", r.stdout), ("stderr", r.stderr)):
            for seq in HIDDEN:
                if seq in stream:
                    failures.append(f"{what}: {name} carries {seq!r} raw: {stream[:300]!r}")
        if out_text not in r.stdout:
            failures.append(f"{what}: stdout lacks {out_text!r}: {r.stdout[:300]!r}")
        if err_text not in r.stderr:
            failures.append(f"{what}: stderr lacks {err_text!r}: {r.stderr[:300]!r}")
        if r.stderr and not (r.stderr.startswith(b"chring: ") and r.stderr.count(b"\n") == 1):
            failures.append(f"{what}: stderr is not one 'chring: ' line: {r.stderr!r}")
    return failures


def replica_shares(opts):
    """inspect's replica shares (small.members: zones a (2 nodes), b, c; a
    draining node): they sum to min(n, nodes with tokens) percent x 100, a
    share of n = 1 under nodes is the ownership, and exactly the nodes over
    1.5x their weight's share get a warning."""
    failures = []
    for n, policy in ((1, "nodes"), (3, "zones-first"), (2, "nts"), (9, "nodes")):
        args = ["inspect", "-m", "small.members", "--replicas", str(n), "--policy", policy]
        r = run_chring(args + ["--format", "json"], opts.chring, opts.data)
        what = "chring " + " ".join(args)
        if r.returncode != 0:
            failures.append(f"{what}: exit {r.returncode}: {r.stderr!r}")
            continue
        doc = json.loads(r.stdout)
        rows, nodes = doc["replica_shares"], doc["nodes"]
        total = sum(row["replica_pct"] for row in rows)
        want = 100.0 * min(n, sum(1 for node in nodes if node["tokens"] > 0))
        if abs(total - want) > 1e-5:
            failures.append(f"{what}: shares sum to {total}%, want {want}%")
        if n == 1:
            for row, node in zip(rows, nodes):
                if abs(row["replica_pct"] - node["ownership_pct"]) > 1e-6:
                    failures.append(f"{what}: {row['node']} holds {row['replica_pct']}%, owns "
                                    f"{node['ownership_pct']}%")
        heavy = sorted(row["node"] for row in rows if row["load"] is not None and row["load"] > 1.5)
        warned = sorted(line.split(" ")[2] for line in r.stderr.decode().splitlines()
                        if line.startswith("chring: warning: ") and "its weight's share" in line)
        if heavy != warned:
            failures.append(f"{what}: warnings for {warned}, nodes over 1.5x: {heavy}")
    # zones-first, 3 replicas, 3 zones: cache-c (alone in its zone) holds every key
    doc = json_of(opts, ["inspect", "-m", "small.members"])
    c = next(row for row in doc.get("replica_shares", []) if row["node"] == "cache-c")
    if c["replica_pct"] != 100.0:
        failures.append(f"inspect (zones: zones-first by default): cache-c holds {c['replica_pct']}%")
    # a ring without zones shows no replica table unless asked
    if "replica_shares" in json_of(opts, ["inspect", "--nodes", "3"]):
        failures.append("inspect --nodes 3: a replica table without zones or --replicas")
    return failures


def owners_by_lookup(opts, members, keys):
    """Each key's owner by `chring lookup` (the diff's independent check)."""
    r = run_chring(["lookup", "-m", members, "--format", "csv", "--no-header"], opts.chring, opts.data, keys)
    if r.returncode != 0:
        raise AssertionError(f"lookup -m {members}: exit {r.returncode}: {r.stderr!r}")
    return [line.rsplit(",", 1)[1] for line in r.stdout.decode().splitlines()]


def diff_check(opts):
    """chring diff against chring lookup and its own tables: the keys it says
    move are exactly those whose owners differ between the two files, the
    ranges sum to the share that moves, sorted, disjoint, never wrapping; per
    node, gained and lost sum to that share; adding a node gives only ranges
    to it; the plan for 1 replica is the ranges; and the refusals."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        keys = os.path.join(tmp, "keys.txt")
        with open(keys, "w") as f:
            f.write("".join(f"key:{i}\n" for i in range(3000)))
        for old, new in (("small.members", "small_after.members"), ("small.members", "small_added.members"),
                         ("small_after.members", "small.members"), ("empty.members", "small.members"),
                         ("small.members", "small.members")):
            what = f"diff {old} {new}"
            doc = json_of(opts, ["diff", old, new, "--keys", keys, "--replicas", "1"])
            before, after = owners_by_lookup(opts, old, keys) if old != "empty.members" else None, \
                owners_by_lookup(opts, new, keys)
            moved = {row["key"]: (row["from"], row["to"]) for row in doc["moved_keys"]}
            for i, owner in enumerate(after):
                key, was = f"key:{i}", before[i] if before else None  # no owner: null
                if (was != owner) != (key in moved) or (key in moved and moved[key] != (was, owner)):
                    failures.append(f"{what}: {key} {was} -> {owner}, diff says {moved.get(key)}")
                    break
            ranges = doc["ranges"]
            total, prev = 0.0, None
            for r in ranges:
                first, last = int(r["first"], 16), int(r["last"], 16)
                if first > last or (prev is not None and prev >= first):
                    failures.append(f"{what}: range {r} out of order or wrapping")
                prev = last
                total += (last - first + 1) / 2 ** 64
            if abs(total * 100 - doc["diff"]["moved_pct"]) > 1e-6:  # JSON percentages: 9 digits
                failures.append(f"{what}: ranges total {total * 100}%, moved {doc['diff']['moved_pct']}%")
            gained = sum(row["gained_pct"] or 0 for row in doc["nodes"])
            lost = sum(row["lost_pct"] or 0 for row in doc["nodes"])
            if old != "empty.members" and (abs(gained - doc["diff"]["moved_pct"]) > 1e-6 or abs(lost - gained) > 1e-6):
                failures.append(f"{what}: gained {gained}%, lost {lost}%, moved {doc['diff']['moved_pct']}%")
            plan = [(e["first"], e["last"], e["to"]) for e in doc["plan"]]
            if plan != [(r["first"], r["last"], r["to"]) for r in ranges]:
                failures.append(f"{what}: the plan for 1 replica is not the ranges")
            if new == "small_added.members" and any(r["to"] != "cache-f" for r in ranges):
                failures.append(f"{what}: a range that does not go to the added cache-f")
            cells = sum(c["share_pct"] for c in doc["matrix"])
            if abs(cells - 100) > 1e-6:
                failures.append(f"{what}: the matrix sums to {cells}%")
    failures += diff_no_owner(opts)
    for args, status, text in (
            (["diff", "small.members", "seed7.ring"], 1, "seed 0 and 7"),
            (["diff", "-", "-"], 2, "cannot both be standard input"),
            (["diff", "small.members", "small_after.members", "--replicas", "3", "--policy", "racks"], 2,
             "unknown replica policy 'racks'"),
            (["diff", "small.members", "small_after.members", "--replicas", "17"], 2, "--replicas"),
            (["diff", "small.members"], 2, "new"),
            (["diff", "small.members", "missing.members"], 1, "missing.members")):
        r = run_chring(args, opts.chring, opts.data)
        err = r.stderr.decode(errors="replace")
        if r.returncode != status or text not in err or not err.startswith("chring: ") or err.count("\n") != 1:
            failures.append(f"chring {' '.join(args)}: exit {r.returncode}, stderr {err!r}; want exit {status} "
                            f"and one line with {text!r}")
    return failures


def diff_no_owner(opts):
    """No owner (a ring without tokens) is null in JSON and an empty CSV field, never "-",
    which is also a valid id: a diff to an empty ring and one to a ring of member '-' differ."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("x.members", "x 1\n"), ("dash.members", "- 1\n"), ("none.members", "")):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        for new, owner in (("none.members", None), ("dash.members", "-")):
            r = run_chring(["diff", "x.members", new, "--format", "json", "--replicas", "1"], opts.chring, tmp)
            doc = json.loads(r.stdout)
            tos = {row["to"] for table in ("ranges", "matrix", "plan") for row in doc[table]}
            lost_to = {flow["node"] for row in doc["nodes"] if row["node"] == "x" for flow in row["lost_to"]}
            if r.returncode != 0 or tos != {owner} or lost_to != {owner}:
                failures.append(f"diff x.members {new} --format json: exit {r.returncode}, to {tos}, lost to "
                                f"{lost_to}, want {owner!r}")
            r = run_chring(["diff", "x.members", new, "--format", "csv"], opts.chring, tmp)
            rows = list(csv.reader(r.stdout.decode().splitlines()))
            header = next(row for row in rows if row[:1] == ["table"] and "to" in row and "first" in row)
            tos = {row[header.index("to")] for row in rows if row[:1] == ["ranges"]}
            if r.returncode != 0 or tos != {owner or ""}:
                failures.append(f"diff x.members {new} --format csv: exit {r.returncode}, to {tos}, "
                                f"want {{{owner or ''!r}}}")
    return failures


# (file, flags, the line of the message check must print, exit status 1)
MALFORMED = [
    ("bad_fields_few.members", "bad_fields_few.members:2: expected 'id weight [zone]', found 1 field"),
    ("bad_weight.members", "bad_weight.members:3: weight '12x' is not a whole number (0..1000000)"),
    ("bad_percent.members", "bad_percent.members:2: id 'b%2': '%' at byte 2 is not followed by two hex digits"),
    ("bad_duplicate.members", "bad_duplicate.members:4: duplicate id 'a' (first on line 1)"),
    ("bad_control.members", "bad_control.members:1: id 'a\\x07b': raw control byte 0x07 (write it as %07)"),
    ("bad_bom.members", "bad_bom.members:1: the file starts with a UTF-8 byte order mark"),
    ("bad_directive.ring", "bad_directive.ring:2: unknown directive %%colour"),
    ("bad_after_member.ring", "bad_after_member.ring:2: directive %%seed after the first member (line 1)"),
    ("bad_fingerprint.ring", "bad_fingerprint.ring:7: %%fingerprint 0x0000000000000001 does not match"),
    ("hidden_id.members", "hidden_id.members:2: id 'b"),
]

# Inputs of export round trips: arguments that name a ring (stdin file or None).
EXPORTS = [
    (["-m", "small.members"], None),
    (["-m", "mixed.members"], None),
    (["-m", "directives.ring"], None),
    (["-m", "canonical.ring"], None),
    (["-m", "empty.members"], None),
    (["-m", "compat.members", "--placement", "ketama"], None),
    (["-m", "compat.members", "--placement", "nginx", "--node", "10.0.0.9:11211=3"], None),
    (["-m", "small.members", "--hasher", "sha1", "--seed", "11", "--tokens-per-weight", "7"], None),
    (["--nodes", "3", "--node", "evil%C2%9B2J=2@r%E2%80%AEl", "--node", "x%FFy", "--node", "%23hash"], None),
    (["-m", "-", "--node", "late"], "mixed.members"),
    (["-m", "tiny.members", "--revision", "18446744073709551615"], None),
]


def fingerprint_line(text):
    for line in text.splitlines():
        if line.startswith(b"%%fingerprint "):
            return line.split()[1].decode()
    return None


def ring_files(opts):
    """check on valid and malformed files; export round trips; the JSON twin; -o."""
    failures = []
    # Malformed: exit 1, one line, the parser's FILE:LINE message; nothing on stdout.
    for name, want in MALFORMED:
        r = run_chring(["check", name], opts.chring, opts.data)
        err = r.stderr.decode(errors="replace")
        if r.returncode != 1 or not err.startswith("chring: " + want) or err.count("\n") != 1 or r.stdout:
            failures.append(f"check {name}: exit {r.returncode}, stderr {err!r}, want 'chring: {want}...'")
    # Valid: check's fingerprint is inspect's, and chr_ring_fingerprint's of the same file.
    for name in ("small.members", "mixed.members", "directives.ring", "canonical.ring", "empty.members", "marks.ring"):
        c = json_of(opts, ["check", name])
        i = json_of(opts, ["inspect", "-m", name])
        capi = subprocess.run([opts.fingerprint, os.path.join(opts.data, name)], capture_output=True, text=True)
        want = (i["ring"]["fingerprint"], i["ring"]["nodes"], i["ring"]["tokens"], capi.stdout.strip())
        got = (c["file"]["fingerprint"], c["file"]["members"], c["file"]["tokens"], c["file"]["fingerprint"])
        if got != want:
            failures.append(f"check {name}: (fingerprint, members, tokens, C fingerprint) {got}, want {want}")
        if [m["position"] for m in c["members"]] != list(range(c["file"]["members"])):
            failures.append(f"check {name}: members not in file order: {c['members']}")
    if json_of(opts, ["check", "canonical.ring"])["file"]["canonical"] != "yes":
        failures.append("check canonical.ring: not reported canonical")
    if json_of(opts, ["check", "canonical.ring"])["file"]["revision"] != 3:
        failures.append("check canonical.ring: revision 3 not reported")

    with tempfile.TemporaryDirectory() as tmp:
        for n, (args, stdin) in enumerate(EXPORTS):
            what = "chring export " + " ".join(args)
            first, second = os.path.join(tmp, f"{n}.ring"), os.path.join(tmp, f"{n}.again.ring")
            r = run_chring(["export"] + args + ["-o", first], opts.chring, opts.data, stdin)
            if r.returncode != 0 or r.stdout:
                failures.append(f"{what} -o: exit {r.returncode}, stdout {r.stdout[:100]!r}, stderr {r.stderr[:300]!r}")
                continue
            with open(first, "rb") as f:
                text = f.read()
            # stdout (a pipe) carries the same canonical bytes as -o.
            piped = run_chring(["export"] + args, opts.chring, opts.data, stdin)
            if piped.stdout != text:
                failures.append(f"{what}: stdout differs from -o")
            # Export of the export: byte-identical, with no option flag (the file has them all).
            r = run_chring(["export", "-m", first, "-o", second], opts.chring, opts.data)
            with open(second, "rb") as f:
                again = f.read()
            if r.returncode != 0 or again != text:
                failures.append(f"{what}: export of the export differs (exit {r.returncode}): {text[:200]!r} / {again[:200]!r}")
            # The %%fingerprint = check's = chr_ring_fingerprint's, and the JSON twin's.
            c = json_of(opts, ["check", first])
            capi = subprocess.run([opts.fingerprint, first], capture_output=True, text=True).stdout.strip()
            j = run_chring(["export", "-m", first, "--format", "json"], opts.chring, opts.data)
            twin = json.loads(j.stdout)
            fps = {fingerprint_line(text), c["file"]["fingerprint"], capi, twin["fingerprint"]}
            if len(fps) != 1 or None in fps:
                failures.append(f"{what}: fingerprints disagree: %%fingerprint {fingerprint_line(text)}, check "
                                f"{c['file']['fingerprint']}, chr_ring_fingerprint {capi}, JSON {twin['fingerprint']}")
            if c["file"]["canonical"] != "yes":
                failures.append(f"{what}: check does not find the export canonical")
            ids = [m["id"] for m in twin["members"]]
            lines = [ln.split(b" ")[0].decode() for ln in text.splitlines() if not ln.startswith(b"%%")]
            if ids != lines or len(ids) != c["file"]["members"]:
                failures.append(f"{what}: JSON ids {ids[:5]} vs text {lines[:5]}, check {c['file']['members']}")
        # --revision: written, kept by a later export, replaced by another --revision.
        rev = os.path.join(tmp, "rev.ring")
        run_chring(["export", "-m", "small.members", "--revision", "41", "-o", rev], opts.chring, opts.data)
        with open(rev, "rb") as f:
            text = f.read()
        kept = run_chring(["export", "-m", rev], opts.chring, opts.data).stdout
        replaced = run_chring(["export", "-m", rev, "--revision", "42"], opts.chring, opts.data).stdout
        if b"\n%%revision 41\n" not in text or kept != text or replaced != text.replace(b"revision 41", b"revision 42"):
            failures.append(f"--revision: {text!r} / kept {kept!r} / replaced {replaced!r}")
        # -o replaces a file atomically, keeps its mode, leaves no temporary file; a failed
        # export leaves the old file as it was.
        target = os.path.join(tmp, "live.ring")
        with open(target, "wb") as f:
            f.write(b"old 1\n")
        os.chmod(target, 0o640)
        before = set(os.listdir(tmp))
        r = run_chring(["export", "--nodes", "2", "-o", target], opts.chring, opts.data)
        with open(target, "rb") as f:
            new = f.read()
        if r.returncode != 0 or not new.startswith(b"%%ring-file 1\n") or os.stat(target).st_mode & 0o777 != 0o640:
            failures.append(f"-o over an existing file: exit {r.returncode}, {new[:40]!r}, "
                            f"mode {oct(os.stat(target).st_mode & 0o777)}")
        r = run_chring(["export", "-m", "bad_weight.members", "-o", target], opts.chring, opts.data)
        with open(target, "rb") as f:
            if r.returncode != 1 or f.read() != new:
                failures.append("a failed export changed the -o file")
        if set(os.listdir(tmp)) != before:
            failures.append(f"-o left files behind: {sorted(set(os.listdir(tmp)) - before)}")
        fresh = os.path.join(tmp, "fresh.ring")
        r = run_chring(["export", "--nodes", "1", "-o", fresh], opts.chring, opts.data)
        mask = os.umask(0)
        os.umask(mask)
        if r.returncode != 0 or os.stat(fresh).st_mode & 0o777 != 0o666 & ~mask:
            failures.append(f"-o new file: mode {oct(os.stat(fresh).st_mode & 0o777)}, umask {oct(mask)}")
        failures += dead_writer_temps(opts, tmp)
    failures += export_terminal(opts)
    return failures


def dead_writer_temps(opts, tmp):
    """A writer killed mid-write (SIGXFSZ: past its file size limit) leaves its temporary file and
    the old file as it was; the next write of the same file deletes that temporary file, but not
    one a live writer holds locked, nor files that only look alike."""
    import fcntl
    import resource
    import signal
    failures = []
    d = os.path.join(tmp, "temps")
    os.mkdir(d)
    target = os.path.join(d, "ring")
    run_chring(["export", "--nodes", "2", "-o", target], opts.chring, opts.data)
    with open(target, "rb") as f:
        old = f.read()

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    p = subprocess.run([opts.chring, "export", "--nodes", "200", "-o", target], cwd=opts.data,
                       capture_output=True, preexec_fn=small_files)
    left = [n for n in os.listdir(d) if n.startswith(".ring.chring-")]
    with open(target, "rb") as f:
        kept = f.read()
    if p.returncode != -signal.SIGXFSZ or len(left) != 1 or kept != old:
        return [f"a writer past its size limit: exit {p.returncode}, left {left}, old file kept {kept == old}"]
    lookalikes = [".ring.backup", ".ring.chring-short", ".ring.chring-toolong", ".other.chring-AbC123"]
    for name in lookalikes:
        with open(os.path.join(d, name), "wb") as f:
            f.write(b"not a temporary file\n")
    live = os.path.join(d, ".ring.chring-Live01")
    fd = os.open(live, os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # this process: a writer still at work
        r = run_chring(["export", "--nodes", "3", "-o", target], opts.chring, opts.data)
        names = sorted(os.listdir(d))
        want = sorted(["ring", ".ring.chring-Live01"] + lookalikes)
        if r.returncode != 0 or names != want:
            failures.append(f"the next write: exit {r.returncode}, files {names}, expected {want}")
    finally:
        os.close(fd)
    r = run_chring(["export", "--nodes", "3", "-o", target], opts.chring, opts.data)
    names = sorted(os.listdir(d))
    want = sorted(["ring"] + lookalikes)
    if r.returncode != 0 or names != want:
        failures.append(f"a write after the live writer is gone: exit {r.returncode}, files {names}, expected {want}")
    return failures


def export_terminal(opts):
    """Canonical bytes keep a C1 control in an id; on a terminal it is shown escaped."""
    import pty
    args = ["export", "--node", "evil%C2%9B2J", "--node", "r%E2%80%AEl"]
    failures = []
    piped = run_chring(args, opts.chring, opts.data).stdout
    if b"evil\xc2\x9b2J 1\n" not in piped:
        failures.append(f"export to a pipe is not canonical: {piped!r}")
    for extra, want in (([], b"evil%C2%9B2J 1"), (["--format", "json"], b'"evil\\u009B2J"')):
        master, slave = pty.openpty()
        p = subprocess.Popen([opts.chring] + args + extra, cwd=opts.data, stdout=slave, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        p.wait(timeout=60)
        for seq in HIDDEN:
            if seq in out:
                failures.append(f"export {extra} to a terminal carries {seq!r} raw: {out!r}")
        if want not in out:
            failures.append(f"export {extra} to a terminal lacks {want!r}: {out!r}")
    return failures


def key_limits(opts):
    """Keys up to 64 KiB, key files up to 256 MiB; past them FILE:LINE (or the size), exit 1."""
    line_max, file_max = 64 << 10, 256 << 20
    failures = []
    sim = ["sim", "--nodes", "3", "--add", "x", "--format", "json", "--key-file"]
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            (b"a\n" + b"k" * line_max + b"\nb\n", 0, None),
            (b"a\n" + b"k" * line_max + b"\r\nb\n", 0, None),  # a trailing CR is not part of the key
            (b"a\nb\n" + b"k" * (line_max + 1) + b"\nc\n", 1, "keys.txt:3: the key is longer than 65536 bytes"),
            (b"a\n" + b"k" * (line_max + 1), 1, "keys.txt:2: the key is longer than 65536 bytes"),
        ]
        path = os.path.join(tmp, "keys.txt")
        for data, status, text in cases:
            with open(path, "wb") as f:
                f.write(data)
            r = run_chring(sim + ["keys.txt"], opts.chring, tmp)
            err = r.stderr.decode(errors="replace")
            what = f"key file of {len(data)} bytes"
            if r.returncode != status or (text and not err.startswith("chring: " + text)):
                failures.append(f"{what}: exit {r.returncode}, want {status} '{text}': {err[:300]}")
            elif status == 0 and "3 keys from keys.txt" not in json.loads(r.stdout)["setup"]["keys"]:
                failures.append(f"{what}: {json.loads(r.stdout)['setup']['keys']}")
        with open(path, "wb") as f:
            f.truncate(file_max + 1)
        r = run_chring(sim + ["keys.txt"], opts.chring, tmp)
        if r.returncode != 1 or f"keys.txt: is {file_max + 1} bytes (limit {file_max})" not in r.stderr.decode():
            failures.append(f"key file over 256 MiB: exit {r.returncode}: {r.stderr[:300]!r}")
    # A stream: stops at the first key over the limit (no unbounded growth).
    r = run_chring(sim + ["/dev/zero"], opts.chring, opts.data)
    if r.returncode != 1 or "/dev/zero:1: the key is longer than 65536 bytes" not in r.stderr.decode():
        failures.append(f"--key-file /dev/zero: exit {r.returncode}: {r.stderr[:300]!r}")
    r = subprocess.run([opts.chring, "lookup", "--nodes", "2"], input=b"a\n" + b"k" * (line_max + 1) + b"\n",
                       capture_output=True, timeout=120)
    if r.returncode != 1 or "<stdin>:2: the key is longer than 65536 bytes" not in r.stderr.decode() or r.stdout:
        failures.append(f"lookup stdin key over 64 KiB: exit {r.returncode}: {r.stderr[:300]!r} {r.stdout[:100]!r}")
    r = subprocess.run([opts.chring, "lookup", "--nodes", "2"], input=b"k" * line_max + b"\r\n",
                       capture_output=True, timeout=120)
    if r.returncode != 0 or r.stdout.count(b"\n") != 2:
        failures.append(f"lookup stdin key of 64 KiB: exit {r.returncode}: {r.stderr[:300]!r}")
    return failures


def sim_load(opts):
    """sim --workload: with the bound, the busiest node holds at most
    ceil(balance x (in flight + 1) / nodes) requests (10 equal nodes); the
    plain ring holds more for Zipf 1.1 hot keys; every request of the plain
    ring is served at home with one probe; the SVG is written; --workload
    refuses membership changes."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        svg = os.path.join(tmp, "load.svg")
        args = ["sim", "--nodes", "10", "--workload", "zipf:1.1", "--requests", "200000",
                "--in-flight", "1000", "--balance", "1.25", "--svg", svg]
        doc = json_of(opts, args)
        rows = {row["scheme"]: row for row in doc["load"]}
        plain, bounded = rows["plain ring"], rows["bounded 1.25x"]
        cap = -(-(125 * 1001) // 1000)  # ceil(1.25 * 1001 / 10) = 126
        if bounded["max_load"] > cap:
            failures.append(f"bounded max load {bounded['max_load']} over {cap}")
        if plain["max_load"] <= cap:
            failures.append(f"plain max load {plain['max_load']} not over {cap}: no hot key effect")
        if plain["away_pct"] != 0 or plain["probes_mean"] != 1:
            failures.append(f"plain ring: {plain}")
        if not 0 < bounded["away_pct"] < 50:
            failures.append(f"bounded share away from home {bounded['away_pct']}%")
        if len(doc["nodes"]) != 10 or any(n["bounded"] > cap for n in doc["nodes"]):
            failures.append(f"per-node peaks: {doc['nodes']}")
        with open(svg) as f:
            if "<svg" not in f.read(500):
                failures.append("--svg did not write an SVG")
    r = run_chring(["sim", "--nodes", "3", "--workload", "zipf:1.1", "--add", "x"], opts.chring, opts.data)
    if r.returncode != 2 or b"--workload" not in r.stderr:
        failures.append(f"--workload with --add: exit {r.returncode}, {r.stderr!r}")
    r = run_chring(["sim", "--nodes", "3", "--workload", "pareto"], opts.chring, opts.data)
    if r.returncode != 2 or b"expected 'uniform' or 'zipf:S'" not in r.stderr:
        failures.append(f"--workload pareto: exit {r.returncode}, {r.stderr!r}")
    return failures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--chring", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--fingerprint", help="tests/cli/ring_fingerprint, for ring-files")
    p.add_argument("check", choices=["golden", "update-golden", "demo", "collateral", "bad-input", "escapes",
                                     "ring-files", "key-limits", "replica-shares", "diff", "sim-load"])
    p.add_argument("name", nargs="?")
    opts = p.parse_args()
    opts.chring = os.path.abspath(opts.chring)
    if opts.check == "golden":
        failures = golden(opts, opts.name)
    elif opts.check == "update-golden":
        failures = update_golden(opts)
    else:
        failures = {"demo": demo, "collateral": collateral, "bad-input": bad_input, "escapes": escapes,
                    "ring-files": ring_files, "key-limits": key_limits,
                    "replica-shares": replica_shares, "diff": diff_check,
                    "sim-load": sim_load}[opts.check](opts)
    for f in failures:
        print("FAIL:", f)
    print(f"{opts.check}{' ' + opts.name if opts.name else ''}: {'FAIL' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
