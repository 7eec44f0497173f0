#!/usr/bin/env python3
"""check_docs.py finds what it promises to find: a small tree with one good
and one bad instance of every kind of reference, each bad one reported with
its file and line, and nothing reported for the good ones.

Usage: test_check_docs.py CHECK_DOCS_PY
"""
import os
import subprocess
import sys
import tempfile

TREE = {
    "README.md": "\n".join([
        "# Title",
        "## Install the tool",
        "[good](docs/a.md) [anchor](docs/a.md#the-rules) [self](#install-the-tool)",  # 3
        "[missing](docs/nope.md)",                                                     # 4
        "[bad anchor](docs/a.md#no-such-heading)",                                     # 5
        "[escapes](../outside.md)",                                                    # 6
        "`build/src/libchring.so` and `tests/bench/bench_lookup` are built",          # 7
        "```",
        "cat docs/gone.md   # a command's path, in a code block, is still checked",  # 9
        "```",
    ]) + "\n",
    "docs/a.md": "# A\n## The rules\ntext\n",
    "include/c/chring.h": "\n".join([
        "/* see docs/a.md and src/core/ring.cpp */",            # 1: both exist
        "/* details in docs/gone.md */",                        # 2: stale
        "/* the old src/ring.cpp */",                           # 3: stale
        "/* the contracts in ../../../notes/contracts.txt */",  # 4: leaves the tree
        "/* tests/fuzz/corpus/NAME, src/libchring.so.1 */",     # 5: placeholder, built
        "/* libmemcached's src/libmemcached/hosts.cc */",       # 6: cited upstream source
        "/* as issue 12 asks */",                               # 7: the tracker
        "/* copied from " + "/wo" + "rk/notes */",               # 8: the machine
    ]) + "\n",
    "src/core/ring.cpp": "// ring\n",
    "src/cli/x.cpp": "\n".join([
        "// relative to the folder: core/ring.cpp, ../core/ring.cpp",  # 1: exists
        "// the input format: ../gen_data.c",                         # 2: not from src/cli
    ]) + "\n",
    "tests/bench/.keep": "",
}

EXPECTED = {
    ("README.md", 4, "no such file"),
    ("README.md", 5, "no heading"),
    ("README.md", 6, "leaves the repository"),
    ("README.md", 9, "docs/gone.md"),
    ("include/c/chring.h", 2, "docs/gone.md"),
    ("include/c/chring.h", 3, "src/ring.cpp"),
    ("include/c/chring.h", 4, "leaves the repository"),
    ("src/cli/x.cpp", 2, "../gen_data.c"),
    ("include/c/chring.h", 7, "issue of the tracker"),
    ("include/c/chring.h", 8, "development machine"),
}


def main():
    check = sys.argv[1]
    with tempfile.TemporaryDirectory() as top:
        root = os.path.join(top, "repo")  # not a git checkout: check_docs walks it
        for path, text in TREE.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as f:
                f.write(text)
        proc = subprocess.run([sys.executable, check, root], stdout=subprocess.PIPE, text=True)
    lines = proc.stdout.splitlines()
    problems = lines[:-1]
    failed = []
    for name, n, words in sorted(EXPECTED):
        prefix = "%s:%d:" % (name, n)
        if not any(p.startswith(prefix) and words in p for p in problems):
            failed.append("not reported: %s ... %s" % (prefix, words))
    for p in problems:
        if not any(p.startswith("%s:%d:" % (name, n)) for name, n, _ in EXPECTED):
            failed.append("reported, but fine: " + p)
    if proc.returncode != 1:
        failed.append("exit status %d, want 1" % proc.returncode)
    for f in failed:
        print(f)
    print("check_docs self-test: %d expected problems, %d reported, %s"
          % (len(EXPECTED), len(problems), "ok" if not failed else "%d failures" % len(failed)))
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
