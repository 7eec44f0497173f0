#!/usr/bin/env python3
"""The dynamic symbols libchring exports are exactly its API.

Checks, for the built library:
  - the functions defined in its dynamic symbol table (nm -D --defined-only)
    equal the CHR_API functions declared in chring.h, no more, no fewer;
  - every one is a function (type T), named in exactly one version node
    of chring.map, by name (no wildcard: a node of a released version is a
    frozen list), and bound to that node;
  - the nodes form one chain (each after the first inherits from the one
    before it) and the first hides everything else with `local: *;`
    (docs/compatibility.md, "Symbol versions");
  - the soname is libchring.so.<CHR_ABI_VERSION>;
  - every versioned struct of chring.h (first field `uint32_t version`)
    has its X_INIT macro and its chr_x_init() twin.

Usage: check_exports.py LIBRARY CHRING_H CHRING_MAP [NM] [READELF]
Prints what differs and exits 1, or prints one OK line.
"""
import re
import subprocess
import sys


def api_functions(header_text):
    """Names of the functions declared with CHR_API in the header."""
    text = re.sub(r"/\*.*?\*/", " ", header_text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return set(re.findall(r"\bCHR_API\b[^;{()]*?\b(chr_\w+)\s*\(", text))


def versioned_struct_problems(header_text):
    """Every struct whose first field is `uint32_t version` has its X_INIT
    macro and its chr_x_init(chr_x *, uint32_t) function twin."""
    problems = []
    functions = api_functions(header_text)
    structs = re.findall(r"typedef\s+struct\s+(chr_\w+)\s*\{\s*uint32_t\s+version\s*;",
                         header_text)
    for struct in structs:
        macro = struct.upper() + "_INIT"
        if not re.search(r"^#define\s+%s\b" % macro, header_text, flags=re.M):
            problems.append("versioned struct %s has no %s macro" % (struct, macro))
        if struct + "_init" not in functions:
            problems.append("versioned struct %s has no CHR_API %s_init()" % (struct, struct))
    if not structs:
        problems.append("found no versioned struct (first field uint32_t version)")
    return problems, len(structs)


def abi_version(header_text):
    match = re.search(r"^#define\s+CHR_ABI_VERSION\s+(\d+)", header_text, flags=re.M)
    if not match:
        raise SystemExit("chring.h defines no CHR_ABI_VERSION")
    return match.group(1)


def version_script(map_text):
    """[(node, global names, local patterns, parent)] in file order."""
    text = re.sub(r"/\*.*?\*/", " ", map_text, flags=re.S)
    nodes = []
    for match in re.finditer(r"([\w.]+)\s*\{(.*?)\}\s*([\w.]*)\s*;", text, flags=re.S):
        node, body, parent = match.group(1), match.group(2), match.group(3) or None
        patterns = {"global": [], "local": []}
        section = "global"
        for token in re.findall(r"global\s*:|local\s*:|[^\s;]+", body):
            if token.startswith("global"):
                section = "global"
            elif token.startswith("local"):
                section = "local"
            else:
                patterns[section].append(token)
        nodes.append((node, patterns["global"], patterns["local"], parent))
    if not nodes:
        raise SystemExit("chring.map has no version node")
    return nodes


def map_problems(nodes):
    """What is wrong with the nodes themselves, and {symbol: node}."""
    problems, node_of = [], {}
    for i, (node, names, local, parent) in enumerate(nodes):
        expected_parent = nodes[i - 1][0] if i else None
        if parent != expected_parent:
            problems.append("version node %s inherits from %s, expected %s"
                            % (node, parent, expected_parent))
        if local != (["*"] if i == 0 else []):
            problems.append("version node %s has local patterns %s: only the first node "
                            "hides the rest, with 'local: *;'" % (node, local))
        for name in names:
            if any(c in name for c in "*?["):
                problems.append("version node %s lists the wildcard %s: list names" % (node, name))
            elif name in node_of:
                problems.append("%s is listed in both %s and %s" % (name, node_of[name], node))
            else:
                node_of[name] = node
    return problems, node_of


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
    nodes = version_script(map_text)
    symbols = exported_symbols(nm, library)
    for node in nodes:
        symbols.pop(node[0], None)  # each version node's own absolute symbol
    problems, node_of = map_problems(nodes)
    struct_problems, versioned = versioned_struct_problems(header_text)
    problems += struct_problems

    if not declared:
        problems.append("found no CHR_API declaration in " + header)
    for name in sorted(set(symbols) - declared):
        problems.append("exported but not declared with CHR_API: " + name)
    for name in sorted(declared - set(symbols)):
        hint = "" if name in node_of else " (add it to the newest node of %s)" % map_file
        problems.append("declared with CHR_API but not exported: " + name + hint)
    for name in sorted(set(node_of) - declared):
        problems.append("%s lists %s, which chring.h does not declare" % (map_file, name))
    for name, (kind, version) in sorted(symbols.items()):
        if kind != "T":
            problems.append("%s is exported as nm type %s, not a function (T)" % (name, kind))
        if name not in node_of:
            problems.append("%s is named in no version node of %s" % (name, map_file))
        elif version != node_of[name]:
            problems.append("%s has version '%s', not %s" % (name, version, node_of[name]))
    expected_soname = "libchring.so." + abi_version(header_text)
    actual_soname = soname(readelf, library)
    if actual_soname != expected_soname:
        problems.append("soname is %s, expected %s" % (actual_soname, expected_soname))

    for problem in problems:
        print(problem)
    if problems:
        return 1
    print("OK: %d exported functions = %d CHR_API declarations, version nodes %s, soname %s, "
          "%d versioned structs with X_INIT and chr_x_init()"
          % (len(symbols), len(declared), " ".join(n[0] for n in nodes), actual_soname,
             versioned))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
