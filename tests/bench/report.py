#!/usr/bin/env python3
"""Prints one Markdown table from the Google Benchmark JSON files of run.sh:
medians of the repetitions, and the ratios chring / libmemcached,
chring / std::lower_bound and chring / xxh3 alone.

Per-operation times are CPU time of the measuring thread (a thread that is
descheduled by other work on the machine is not charged for it), except the
updates (wall time around the one call, Google Benchmark's manual time) and
the readers' total throughput (wall time).

Usage: report.py RESULT.json...
"""
import json
import sys

SIZES = (10, 100, 1000)
# (label, bench_search template argument), in the order of the study.
LAYOUTS = (
    ("std::lower_bound", "LowerBound"),
    ("branchless binary search", "BranchlessBinary"),
    ("Eytzinger layout, prefetching descent", "Eytzinger"),
    ("prefix table ceil(log2 T)+2 bits + lower_bound", "PrefixPlus2"),
    ("prefix table floor(log2 T) bits + 4-value window, owners apart", "PrefixWindow<uint32_t>"),
    ("the same, 16-bit owners", "PrefixWindow<uint16_t>"),
    ("the same, value+owner packed in 12 bytes", "PrefixWindowPacked"),
    ("the same, one 8-byte record (value << P) | owner", "PrefixRecords"),
    ("the same, 4-byte hot records + cold rest (chring before)", "PrefixHotCold<4>"),
    ("hot/cold, 8-record window, 1.5-3 tokens a bucket (chring)", "PrefixHotCold<8>"),
)
TO_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


class Results:
    """Median time (ns), counters, CV and error message per benchmark run name."""

    def __init__(self, paths):
        self.median = {}
        self.errors = {}
        self.cv = {}
        for path in paths:
            with open(path) as f:
                for run in json.load(f)["benchmarks"]:
                    self._add(run)

    def _add(self, run):
        name = run["run_name"]
        if run.get("error_occurred"):
            self.errors[name] = run["error_message"]
            return
        kind = run.get("aggregate_name") if run["run_type"] == "aggregate" else "single"
        if kind in ("median", "single"):
            scale = TO_NS[run["time_unit"]]
            self.median[name] = dict(run, real_ns=run["real_time"] * scale,
                                     cpu_ns=run["cpu_time"] * scale)
        elif kind == "cv":
            self.cv[name] = run["real_time"]

    def ns(self, name, field="cpu_ns"):
        run = self.median.get(name)
        return run[field] if run else None

    def counter(self, name, key):
        run = self.median.get(name)
        return run.get(key) if run else None


def fmt(value, digits=1):
    if value is None:
        return "—"
    return f"{value:,.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None else a / b


def table(results):
    rows = []

    def section(title):
        rows.append((f"**{title}**", "", "", ""))

    def row(label, values, digits=1):
        rows.append((label,) + tuple(v if isinstance(v, str) else fmt(v, digits) for v in values))

    def per_size(pattern, field="cpu_ns"):
        return [results.ns(pattern.format(n=n), field) for n in SIZES]

    def ketama(mode):
        cells = []
        for n in SIZES:
            name = f"ketama_lookup/{mode}/{n}"
            cells.append("cannot (below)" if name in results.errors else results.ns(name))
        return cells

    xxh3 = results.ns("xxh3_alone")
    lower = per_size("std_lower_bound/{n}")
    snap = per_size("snapshot_lookup/{n}")
    ring = per_size("ring_lookup/{n}")
    ketama_default = ketama("default")
    ketama_md5 = ketama("weighted_md5")

    section("Lookup, ns per key (one thread)")
    row("xxh3 of the key alone (floor)", [xxh3] * len(SIZES))
    row("std::lower_bound over the same token array", lower)
    row("chr_snapshot_lookup", snap)
    row("chr_ring_lookup", ring)
    row("chr_snapshot_replicas(3)", per_size("snapshot_replicas3/{n}"))
    row("chr_ring_replicas(3)", per_size("ring_replicas3/{n}"))
    row("libmemcached ketama (one-at-a-time, 100 points/server)", ketama_default)
    row("libmemcached ketama weighted (MD5, 160 points/server)", ketama_md5)

    def ratios(label, ours, theirs):
        row(label, [None if isinstance(b, str) else ratio(a, b) for a, b in zip(ours, theirs)], 2)

    section("Ratios (below 1 = chring faster)")
    ratios("chr_ring_lookup / libmemcached ketama", ring, ketama_default)
    ratios("chr_ring_lookup / libmemcached ketama weighted", ring, ketama_md5)
    ratios("chr_snapshot_lookup / libmemcached ketama", snap, ketama_default)
    ratios("chr_ring_lookup / std::lower_bound", ring, lower)
    ratios("chr_snapshot_lookup / std::lower_bound", snap, lower)
    ratios("chr_ring_lookup / xxh3 alone", ring, [xxh3] * len(SIZES))
    ratios("chr_snapshot_lookup / xxh3 alone", snap, [xxh3] * len(SIZES))

    section("Updates, µs (copy-on-write: a new snapshot per call)")
    for label, bench in (("add one node", "add_one_node"), ("remove one node", "remove_one_node"),
                         ("build from scratch (one chr_ring_apply batch)", "build_from_scratch")):
        times = [results.ns(f"{bench}/{n}/manual_time", "real_ns") for n in SIZES[1:]]
        row(label, [None] + [ns / 1e3 if ns else None for ns in times])

    section("Readers: chr_ring_lookup CPU ns per lookup per thread (total Mlookups/s)")
    for label, threads, writer in (("1 reader", 1, 0), ("2 readers", 2, 0),
                                   ("1 reader + 1 writer thread", 1, 1),
                                   ("2 readers + 1 writer thread", 2, 1)):
        cells = ["—"]
        for n in SIZES[1:]:
            name = f"readers/nodes:{n}/writer:{writer}/threads:{threads}"
            cpu, wall = results.ns(name), results.ns(name, "real_ns")
            if name in results.errors or cpu is None:
                cells.append(results.errors.get(name, "—"))
                continue
            cell = f"{cpu:.1f} ({1e3 / wall:.1f} M/s"
            updates = results.counter(name, "writer_updates_per_s")
            cell += f"; writer {updates:,.0f} updates/s)" if updates else ")"
            cells.append(cell)
        row(label, cells)

    section("Memory")
    row("tokens", [results.counter(f"memory_per_token/{n}/iterations:1/repeats:1", "tokens")
                   for n in SIZES], 0)
    row("index bytes per token (4 hot + 4 cold + prefix index)",
        [results.counter(f"memory_per_token/{n}/iterations:1/repeats:1", "index_bytes_per_token")
         for n in SIZES], 2)
    row("resident memory growth per token (whole ring)",
        [None] + [results.counter(f"memory_per_token/{n}/iterations:1/repeats:1",
                                  "rss_bytes_per_token") for n in SIZES[1:]], 2)

    section("Search layouts over the same tokens, xxh3 included, ns per key (bench_search)")
    for label, name in LAYOUTS:
        cells = per_size("search<" + name + ">/{n}")
        bpt = results.counter(f"search<{name}>/1000", "bytes_per_token")
        row(f"{label} ({bpt:.1f} B/token at 1,000)" if bpt else label, cells)
    row("chr_snapshot_lookup (the real thing)", per_size("chring_snapshot/{n}"))
    batch = [ns / 1024 if ns else None for ns in per_size("chring_batch/{n}")]
    row("chr_snapshot_lookup_batch, per key (1,024 keys per call)", batch)

    out = ["| measurement | 10 nodes | 100 nodes | 1,000 nodes |", "|---|--:|--:|--:|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out, ring, ketama_default, ketama_md5


def notes(results, ring, ketama_default, ketama_md5):
    out = []
    for name in sorted(results.errors):
        out.append(f"- `{name}`: {results.errors[name]}")
    big = "memory_per_token/10000/iterations:1/repeats:1"
    if results.median.get(big):
        out.append(f"- 10,000 nodes: {results.counter(big, 'tokens'):,.0f} tokens, "
                   f"{results.counter(big, 'index_bytes_per_token'):.2f} index bytes/token, "
                   f"{results.counter(big, 'rss_bytes_per_token'):.2f} resident bytes/token.")
    verdicts = []
    for n, ours, default, md5 in zip(SIZES, ring, ketama_default, ketama_md5):
        if isinstance(default, str) or default is None:
            verdicts.append(f"{n:,}: libmemcached cannot run it")
        elif ours is None:
            verdicts.append(f"{n:,}: no chring result")
        else:
            met = ours <= default and ours <= md5
            verdicts.append(f"{n:,}: {'met' if met else 'NOT met'} "
                            f"({ours:.1f} ns vs {default:.1f} / {md5:.1f} ns)")
    out.append("- Target chr_ring_lookup <= libmemcached ketama: " + "; ".join(verdicts) + ".")
    out += fast_path_targets(results)
    if results.cv:
        worst = max(results.cv, key=results.cv.get)
        out.append(f"- Largest coefficient of variation over the repetitions: "
                   f"{results.cv[worst] * 100:.1f}% (`{worst}`).")
    return out


def fast_path_targets(results):
    """The lookup fast path's goals, each with its measured ratio."""
    xxh3 = results.ns("xxh3_alone")
    snap = {n: results.ns(f"snapshot_lookup/{n}") for n in SIZES}
    ring = {n: results.ns(f"ring_lookup/{n}") for n in SIZES}
    lower = {n: results.ns(f"std_lower_bound/{n}") for n in SIZES}
    md5 = results.ns("ketama_lookup/weighted_md5/100")
    default = results.ns("ketama_lookup/default/100")
    batch = {n: (results.ns(f"chring_batch/{n}") or 0) / 1024 or None for n in SIZES}
    build = results.ns("build_from_scratch/1000/manual_time", "real_ns")
    add = results.ns("add_one_node/1000/manual_time", "real_ns")
    remove = results.ns("remove_one_node/1000/manual_time", "real_ns")
    bpt = results.counter("memory_per_token/1000/iterations:1/repeats:1", "index_bytes_per_token")

    def check(label, value, goal, better="<="):
        if value is None:
            return f"  - {label}: not measured"
        met = value <= goal if better == "<=" else value >= goal
        return f"  - {label}: {value:.2f} (goal {better} {goal}) {'met' if met else 'NOT met'}"

    def r(a, b):
        return None if a is None or b is None else a / b

    lines = ["- Fast-path goals (ratios from this run):"]
    lines.append(check("libmemcached ketama (one-at-a-time) / chr_snapshot_lookup, 100 nodes",
                       r(default, snap[100]), 10, ">="))
    lines.append(check("libmemcached ketama weighted (MD5) / chr_snapshot_lookup, 100 nodes",
                       r(md5, snap[100]), 10, ">="))
    for n in (100, 1000):
        lines.append(check(f"std::lower_bound / chr_snapshot_lookup, {n:,} nodes",
                           r(lower[n], snap[n]), 3, ">="))
    for n in SIZES:
        lines.append(check(f"chr_snapshot_lookup / xxh3 alone, {n:,} nodes", r(snap[n], xxh3), 4))
        lines.append(check(f"chr_ring_lookup / xxh3 alone, {n:,} nodes", r(ring[n], xxh3), 4))
        lines.append(check(f"chr_snapshot_lookup_batch per key / xxh3 alone, {n:,} nodes",
                           r(batch[n], xxh3), 4))
    lines.append(check("chr_snapshot_replicas(3) / chr_snapshot_lookup, 100 nodes",
                       r(results.ns("snapshot_replicas3/100"), snap[100]), 2))
    lines.append(check("chr_ring_replicas(3) / chr_ring_lookup, 100 nodes",
                       r(results.ns("ring_replicas3/100"), ring[100]), 2))
    lines.append(check("build a 1,000-node ring, ms", build / 1e6 if build else None, 10))
    lines.append(check("add one node / full rebuild, 1,000 nodes", r(add, build), 1))
    lines.append(check("remove one node / full rebuild, 1,000 nodes", r(remove, build), 1))
    lines.append(check("index bytes per token, 1,000 nodes", bpt, 16))
    return lines


def main(paths):
    if not paths:
        sys.exit(__doc__)
    results = Results(paths)
    lines, ring, ketama_default, ketama_md5 = table(results)
    print("\n".join(lines))
    print()
    print("\n".join(notes(results, ring, ketama_default, ketama_md5)))


if __name__ == "__main__":
    main(sys.argv[1:])
