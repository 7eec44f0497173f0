#!/usr/bin/env python3
"""Every #include in src/ runs down the layers, never up (src/README.md).

The library's folders are layers, lowest first:

    base -> plugin -> placement -> core -> ringfile -> api

A file may include headers of its own layer and of lower ones. The tool
(cli/) is a client of the public API: it includes no header of a layer.

Each `#include "..."` of a source or header under src/ is resolved as the
compiler resolves it: beside the including file first, then in the include
directories `core_inc` of src/meson.build names, then include/c/ (the
public headers). An include that resolves to no file, or (a bare name) to
files in two folders, fails too: the check must know where every include
goes. `#include <...>` names system and public headers and is not read.

Usage: check_layers.py SOURCE_ROOT
Prints each offending include as file:line and exits 1, or prints one OK
line.
"""
import os
import re
import sys

# Lowest first; an index is a layer's height.
LAYERS = ("base", "plugin", "placement", "core", "ringfile", "api")
CLIENTS = ("cli",)  # the public API only: no layer's header
PUBLIC = "include/c"
SUFFIXES = (".c", ".cpp", ".h", ".hpp")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def include_dirs(src):
    """The folders of src/ that src/meson.build's core_inc names."""
    with open(os.path.join(src, "meson.build"), encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"\bcore_inc\s*=\s*include_directories\(([^)]*)\)", text)
    if not match:
        raise SystemExit("src/meson.build: no `core_inc = include_directories(...)`")
    names = re.findall(r"'([^']*)'", match.group(1))
    return [os.path.normpath(os.path.join(src, name)) for name in names]


def owner(path, root):
    """'public', a layer or client folder of src/, or None."""
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    if rel.startswith(PUBLIC + "/"):
        return "public"
    parts = rel.split("/")
    if len(parts) >= 3 and parts[0] == "src":
        return parts[1]
    return None


def resolve(name, including, dirs, root):
    """The files `#include "name"` in `including` can mean, first one wins.

    Returns (the file the compiler takes or None, every other candidate
    found in an include directory, for ambiguity)."""
    beside = os.path.normpath(os.path.join(os.path.dirname(including), name))
    if os.path.isfile(beside):
        return beside, []
    found = []
    for d in dirs + [os.path.join(root, PUBLIC)]:
        candidate = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(candidate) and candidate not in found:
            found.append(candidate)
    if not found:
        return None, []
    return found[0], found[1:]


def sources(src):
    for folder, subdirs, files in os.walk(src):
        subdirs.sort()
        for name in sorted(files):
            if name.endswith(SUFFIXES):
                yield os.path.join(folder, name)


def check(root):
    """Problems as 'file:line: text' strings, and the count of includes read."""
    src = os.path.join(root, "src")
    dirs = include_dirs(src)
    problems = []
    count = 0
    for path in sources(src):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        here = owner(path, root)
        if here not in LAYERS and here not in CLIENTS:
            problems.append(f"{rel}: folder src/{here}/ is in no layer (tests/core/check_layers.py LAYERS)")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            count += 1
            name = match.group(1)
            where = f"{rel}:{number}"
            target, others = resolve(name, path, dirs, root)
            if target is None:
                problems.append(f'{where}: #include "{name}" resolves to no file')
                continue
            if others:
                spelled = ", ".join(os.path.relpath(p, root) for p in [target] + others)
                problems.append(f'{where}: #include "{name}" is ambiguous: {spelled}')
                continue
            there = owner(target, root)
            target_rel = os.path.relpath(target, root).replace(os.sep, "/")
            if there == "public" or there == here:
                continue
            if here in CLIENTS:
                problems.append(f'{where}: #include "{name}" ({target_rel}): src/{here}/ uses the public API only')
            elif there not in LAYERS:
                problems.append(f'{where}: #include "{name}" ({target_rel}): src/{there}/ is no layer')
            elif LAYERS.index(there) > LAYERS.index(here):
                problems.append(f'{where}: #include "{name}" ({target_rel}): {here}/ includes {there}/, '
                                f'a higher layer ({" -> ".join(LAYERS)})')
    return problems, count


def main(argv):
    if len(argv) != 2:
        raise SystemExit(__doc__)
    root = os.path.abspath(argv[1])
    problems, count = check(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) against the layers {' -> '.join(LAYERS)}")
        return 1
    print(f"OK: {count} includes in src/ run down the layers {' -> '.join(LAYERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
