#!/usr/bin/env python3
"""check_layers.py on a small tree: every bad include is found, no good one.

The tree's paths are given below src/ (the docs check reads any path that
starts with src/ as one of this repository's).

Usage: test_check_layers.py CHECK_LAYERS_PY
"""
import importlib.util
import os
import sys
import tempfile

# Paths below src/ of the small tree (written there with the folder prefixed).
SRC = {
    "meson.build": "core_inc = include_directories('.', 'api', 'core', 'placement')\n",
    "base/errors.hpp": '#include "chring.h"\n',
    "plugin/registry.hpp": '#include "base/errors.hpp"\n',
    "placement/placement.hpp": '#include "plugin/registry.hpp"\n',
    "placement/native.cpp": '#include "placement.hpp"\n#include "ring.hpp"\n',  # bad: line 2
    "core/ring.hpp": '#include "placement.hpp"\n#include "base/errors.hpp"\n',
    "core/ring.cpp": '#include "ring.hpp"\n  #  include "capi.hpp"\n',  # bad: line 2
    "ringfile/ringfile.hpp": '#include "ring.hpp"\n',
    "api/capi.hpp": '#include "ringfile/ringfile.hpp"\n#include "plugin/registry.hpp"\n',
    "base/validate.hpp": '#include "errors.hpp"\n#include "plugin/registry.hpp"\n',  # bad: line 2
    "plugin/loader.cpp": '#include "nowhere.hpp"\n',  # bad: resolves to no file
    "cli/main.cpp": '#include <chring.h>\n#include "options.hpp"\n#include "ring.hpp"\n',  # bad: line 3
    "cli/options.hpp": "",
    "extra/thing.cpp": "",  # bad: a folder in no layer
    "core/twice.hpp": "",
    "placement/twice.hpp": "",
    "api/capi.cpp": '#include "capi.hpp"\n#include "twice.hpp"\n',  # bad: ambiguous
}

EXPECTED = [
    "api/capi.cpp:2:",
    "base/validate.hpp:2:",
    "cli/main.cpp:3:",
    "core/ring.cpp:2:",
    "extra/thing.cpp:",
    "placement/native.cpp:2:",
    "plugin/loader.cpp:1:",
]


def main(argv):
    spec = importlib.util.spec_from_file_location("check_layers", argv[1])
    check_layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_layers)
    with tempfile.TemporaryDirectory() as root:
        tree = dict({"include/c/chring.h": ""}, **{os.path.join("src", rel): text for rel, text in SRC.items()})
        for rel, text in tree.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        problems, _ = check_layers.check(root)
    failed = False
    expected = ["src/" + prefix for prefix in EXPECTED]
    for prefix in expected:
        if not any(p.startswith(prefix) for p in problems):
            print(f"not found: {prefix}")
            failed = True
    for problem in problems:
        if not any(problem.startswith(prefix) for prefix in expected):
            print(f"found, but fine: {problem}")
            failed = True
    if failed:
        print("check_layers.py found:\n  " + "\n  ".join(problems))
        return 1
    print(f"OK: check_layers.py finds all {len(EXPECTED)} bad includes and no good one")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
