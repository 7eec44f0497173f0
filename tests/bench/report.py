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
    row("index bytes per token (8 value + 4 owner + prefix index)",
        [results.counter(f"memory_per_token/{n}/iterations:1/repeats:1", "index_bytes_per_token")
         for n in SIZES], 2)
    row("resident memory growth per token (whole ring)",
        [None] + [results.counter(f"memory_per_token/{n}/iterations:1/repeats:1",
                                  "rss_bytes_per_token") for n in SIZES[1:]], 2)

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
    if results.cv:
        worst = max(results.cv, key=results.cv.get)
        out.append(f"- Largest coefficient of variation over the repetitions: "
                   f"{results.cv[worst] * 100:.1f}% (`{worst}`).")
    return out


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
