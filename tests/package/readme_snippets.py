#!/usr/bin/env python3
"""Prints a code block of the README, so that the package test builds the
README's own text:

    readme_snippets.py README.md c      the C quick start (quickstart.c)
    readme_snippets.py README.md c-cmd  the shell line that builds and runs it
    readme_snippets.py README.md c-out  the output it shows (after '# ')
    readme_snippets.py README.md go     the Go quick start (statements)

The C program is the first ```c block of the "Quick start" section; its
command the first ```sh block after it; the Go statements the first ```go
block of that section."""
import re
import sys


def blocks(text):
    """(language, body) of each fenced block, in order."""
    return [(m.group(1), m.group(2)) for m in
            re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)]


def main():
    path, what = sys.argv[1], sys.argv[2]
    text = open(path, encoding="utf-8").read()
    start = text.find("## Quick start")
    if start < 0:
        sys.exit("no '## Quick start' section in " + path)
    end = text.find("\n## ", start + 1)
    found = blocks(text[start:end if end > 0 else len(text)])
    langs = [lang for lang, _ in found]
    try:
        c_at = langs.index("c")
        if what == "c":
            print(found[c_at][1], end="")
            return
        sh = next(body for lang, body in found[c_at + 1:] if lang == "sh")
        lines = sh.splitlines()
        if what == "c-cmd":
            print(next(l for l in lines if l.startswith("cc ")))
        elif what == "c-out":
            print(next(l[2:] for l in lines if l.startswith("# ")))
        elif what == "go":
            print(found[langs.index("go")][1], end="")
        else:
            sys.exit("unknown snippet " + what)
    except (ValueError, StopIteration):
        sys.exit("README.md: no %s snippet in the Quick start section" % what)


main()
