#!/usr/bin/env python3
"""Measured figures live in one place: tests/bench/RESULTS.md.

1. README.md and include/c/chring.h quote no time (a number with ns, µs, us
   or ms, e.g. "about 1 ms" for adding a node): a copy there would drift
   from the measured one. They point to tests/bench/RESULTS.md instead, and
   each must name it.
2. tests/bench/RESULTS.md has a section `## bench_NAME` for every benchmark
   program tests/bench/meson.build builds, or names the program in its list
   of programs whose results are kept elsewhere; each section that is not
   "Same run as" another shows the command that produced it (a fenced
   block).

Usage: check_figures.py [REPO_ROOT]   (default: the repository holding this
file). Exit status 0 if every check holds, 1 otherwise, one line a problem.
"""
import os
import re
import sys

QUOTING = ("README.md", os.path.join("include", "c", "chring.h"))
RESULTS = os.path.join("tests", "bench", "RESULTS.md")
BENCH_MESON = os.path.join("tests", "bench", "meson.build")

# 1 ms, 0.25 ms, 7.6–8.6 ns, 1,000 µs, 67 us
TIME = re.compile(r"(?<![\w.])\d[\d,.]*(?:\s*[–-]\s*\d[\d,.]*)?\s*(?:ns|µs|us|ms)\b")
PROGRAM = re.compile(r"^\s*'(\w+)'\s*:\s*\[\[\s*'bench_\w+\.cpp'", re.M)


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def check(root):
    problems = []
    for path in QUOTING:
        text = read(root, path)
        for number, line in enumerate(text.splitlines(), 1):
            for m in TIME.finditer(line):
                problems.append("%s:%d: quotes a time (%r): point to %s instead"
                                % (path, number, m.group(0), RESULTS))
        if "tests/bench/RESULTS.md" not in text:
            problems.append("%s: does not point to %s" % (path, RESULTS))

    results = read(root, RESULTS)
    sections = {}
    for part in re.split(r"^## ", results, flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        sections[title.strip()] = body
    elsewhere = sections.get("Elsewhere", "")
    programs = PROGRAM.findall(read(root, BENCH_MESON))
    if not programs:
        problems.append("%s: no benchmark programs found (has its table changed?)" % BENCH_MESON)
    for name in programs:
        program = "bench_" + name
        body = sections.get(program)
        if body is None:
            if ("`%s`" % program) not in elsewhere:
                problems.append("%s: no section '## %s' and not listed under 'Elsewhere'"
                                % (RESULTS, program))
            continue
        if "```" not in body and not body.lstrip().startswith("Same run as"):
            problems.append("%s: section '%s' shows no command" % (RESULTS, program))
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    problems = check(root)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
