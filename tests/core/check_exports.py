#!/usr/bin/env python3
"""The dynamic symbols libchring exports are exactly its API.

Checks, for the built library:
  - the functions defined in its dynamic symbol table (nm -D --defined-only)
    equal the CHR_API functions declared in chring.h, no more, no fewer;
  - every one is a function (type T), bound to the version node that
    chring.map declares, and matched by one of its `global:` patterns,
    with `local: *;` hiding everything else;
  - the soname is libchring.so.<CHR_ABI_VERSION>.

Usage: check_exports.py LIBRARY CHRING_H CHRING_MAP [NM] [READELF]
Prints what differs and exits 1, or prints one OK line.
"""
import fnmatch
import re
import subprocess
import sys


def api_functions(header_text):
    """Names of the functions declared with CHR_API in the header."""
    text = re.sub(r"/\*.*?\*/", " ", header_text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return set(re.findall(r"\bCHR_API\b[^;{()]*?\b(chr_\w+)\s*\(", text))


def abi_version(header_text):
    match = re.search(r"^#define\s+CHR_ABI_VERSION\s+(\d+)", header_text, flags=re.M)
    if not match:
        raise SystemExit("chring.h defines no CHR_ABI_VERSION")
    return match.group(1)


def version_script(map_text):
    """(version node, global patterns, local patterns) of a one-node script."""
    text = re.sub(r"/\*.*?\*/", " ", map_text, flags=re.S)
    match = re.search(r"(\w+)\s*\{(.*?)\}\s*;", text, flags=re.S)
    if not match:
        raise SystemExit("chring.map has no version node")
    node, body = match.group(1), match.group(2)
    patterns = {"global": [], "local": []}
    section = "global"
    for token in re.findall(r"global\s*:|local\s*:|[^\s;]+", body):
        if token.startswith("global"):
            section = "global"
        elif token.startswith("local"):
            section = "local"
        else:
            patterns[section].append(token)
    return node, patterns["global"], patterns["local"]


def exported_symbols(nm, library):
    """{name: (type, version)} of the defined dynamic symbols."""
    out = subprocess.run([nm, "-D", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    symbols = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        kind, full = fields[-2], fields[-1]
        name, _, version = full.partition("@")
        symbols[name] = (kind, version.lstrip("@"))
    return symbols


def soname(readelf, library):
    out = subprocess.run([readelf, "-d", library], check=True, capture_output=True,
                         text=True).stdout
    match = re.search(r"\(SONAME\).*\[(.*)\]", out)
    return match.group(1) if match else None


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    library, header, map_file = argv[1:4]
    nm = argv[4] if len(argv) > 4 else "nm"
    readelf = argv[5] if len(argv) > 5 else "readelf"
    with open(header, encoding="utf-8") as f:
        header_text = f.read()
    with open(map_file, encoding="utf-8") as f:
        map_text = f.read()

    declared = api_functions(header_text)
    node, global_patterns, local_patterns = version_script(map_text)
    symbols = exported_symbols(nm, library)
    symbols.pop(node, None)  # the version node's own absolute symbol
    problems = []

    if not declared:
        problems.append("found no CHR_API declaration in " + header)
    for name in sorted(set(symbols) - declared):
        problems.append("exported but not declared with CHR_API: " + name)
    for name in sorted(declared - set(symbols)):
        problems.append("declared with CHR_API but not exported: " + name)
    for name, (kind, version) in sorted(symbols.items()):
        if kind != "T":
            problems.append("%s is exported as nm type %s, not a function (T)" % (name, kind))
        if version != node:
            problems.append("%s has version '%s', not %s" % (name, version, node))
        if not any(fnmatch.fnmatchcase(name, p) for p in global_patterns):
            problems.append("%s matches no global pattern of %s %s" % (name, map_file,
                                                                      global_patterns))
    if local_patterns != ["*"]:
        problems.append("chring.map should hide the rest with 'local: *;', has %s" % local_patterns)
    expected_soname = "libchring.so." + abi_version(header_text)
    actual_soname = soname(readelf, library)
    if actual_soname != expected_soname:
        problems.append("soname is %s, expected %s" % (actual_soname, expected_soname))

    for problem in problems:
        print(problem)
    if problems:
        return 1
    print("OK: %d exported functions = %d CHR_API declarations, version %s, soname %s"
          % (len(symbols), len(declared), node, actual_soname))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
