#!/usr/bin/env python3
"""Tests of the chring command-line tool, run by meson (suite 'cli').

    cli_test.py --chring PATH --data DIR --golden DIR CHECK [NAME]

CHECK is one of:
  golden NAME     run a fixed command and compare stdout with golden/NAME.out
  update-golden   rewrite every golden file from the current build (then review the diff)
  demo            the demo's hash % N figures match the closed form within 0.2 points, ketama's
                  collateral is above 0 and native's 0, and more (its run time is the benchmark
                  cli_demo in tests/bench, never a pass/fail figure)
  collateral      `sim` moves keys only onto grown / off shrunk nodes (native), and says so
  bad-input       bad arguments and files: a clear one-line message and a non-zero exit, no crash

chring runs without LD_LIBRARY_PATH, as a user would run it: it must find libchring
through its rpath. The library does not look for its build tree, so the build's plugins
come from CHRING_PLUGIN_PATH, which meson test sets.
"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys

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
    (["sim", "--nodes", "3"], None, 1, "nothing to simulate"),
    (["sim", "--nodes", "3", "--remove", "nope"], None, 1, "--remove nope: chr_ring_apply: no node 'nope'"),
    (["sim", "--nodes", "3", "--reweight", "node-1"], None, 1, "expected ID=WEIGHT"),
    (["sim", "--nodes", "3", "--remove", "node-1=2"], None, 1, "give only the id"),
    (["sim", "--nodes", "3", "--add", "node-1"], None, 1, "already in the ring"),
    (["sim", "--nodes", "3", "--add", "x=abc"], None, 1, "--add x=abc: weight 'abc' is not a whole number"),
    (["sim", "--nodes", "3", "--add", "x", "--keys", "0"], None, 2, "--keys"),
    (["sim", "--nodes", "3", "--add", "x", "--key-file", "missing.txt"], None, 1, "missing.txt: cannot open"),
    (["sim", "--nodes", "3", "--add", "x", "--placement", "native,bogus"], None, 1, "unknown placement mode 'bogus'"),
    (["sim", "-m", "compat.members", "--add", "y=5", "--placement", "ketama-unweighted"], None, 1, "weight"),
    (["inspect"], None, 1, "no members"),
    (["inspect", "-m", "missing.members"], None, 1, "missing.members: cannot open membership file"),
    (["inspect", "-m", "."], None, 1, ".: "),
    (["inspect", "--nodes", "2", "--placement", "bogus"], None, 1,
     "unknown placement mode 'bogus' (this build knows: native"),
    (["inspect", "--nodes", "2", "--hasher", "nope"], None, 1, "no hasher named 'nope'"),
    (["inspect", "--nodes", "2", "--hasher", "nope"], None, 1, "(available: "),
    (["inspect", "--nodes", "2", "--tokens-per-weight", "0"], None, 1, "tokens_per_weight 0 is out of range"),
    (["inspect", "--nodes", "2", "--placement", "ketama", "--hasher", "xxh3"], None, 1,
     "is defined with hasher 'md5', not 'xxh3'"),
    (["inspect", "--node", "a=99999999"], None, 1, "weight '99999999' is over the limit 1000000"),
    (["inspect", "--node", "a@b"], None, 0, ""),  # '@' without '=' is part of the id
    (["inspect", "--node", "="], None, 1, "id is empty"),
    (["inspect", "--nodes", "2", "--svg", "/nonexistent-dir/x.svg"], None, 1, "cannot write the SVG"),
    (["inspect", "--nodes", "0"], None, 2, "--nodes"),
    (["lookup", "-m", "-"], None, 1, "cannot both come from stdin"),
    (["lookup", "--nodes", "2", "--replicas", "0", "k"], None, 2, "--replicas"),
    (["lookup", "-m", "empty.members", "k"], None, 1, "no node with tokens"),
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
        elif status == 1 and not (err.startswith("chring: ") and err.count("\n") == 1):
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
    return failures


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--chring", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("check", choices=["golden", "update-golden", "demo", "collateral", "bad-input"])
    p.add_argument("name", nargs="?")
    opts = p.parse_args()
    opts.chring = os.path.abspath(opts.chring)
    if opts.check == "golden":
        failures = golden(opts, opts.name)
    elif opts.check == "update-golden":
        failures = update_golden(opts)
    else:
        failures = {"demo": demo, "collateral": collateral, "bad-input": bad_input}[opts.check](opts)
    for f in failures:
        print("FAIL:", f)
    print(f"{opts.check}{' ' + opts.name if opts.name else ''}: {'FAIL' if failures else 'ok'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
