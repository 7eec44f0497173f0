#!/usr/bin/env python3
"""The repository stands alone.

1. Every relative link in every Markdown file of the repository -- inline
   `[text](target)`, images, and reference definitions `[label]: target` --
   resolves to a file or directory inside the repository. For links to a
   Markdown file with a `#fragment`, the fragment must be one of that file's
   heading anchors (GitHub's rule: lower case, punctuation dropped, spaces
   to hyphens). URLs with a scheme (https:, mailto:) are not checked.
2. No tracked file refers to anything outside the repository: the patterns
   below are the ways such references were written, and any relative path
   (`../x`, in a comment, a code span or a link) that climbs out of the
   repository from the file's folder; one that stays inside must exist.
3. Every repository path a file names -- a word starting with one of the
   top-level folders, `src/core/ring.cpp`, `tests/compat`, in a comment, a
   header, a code span -- exists, read from the repository root or from the
   file's folder or one above it (a crate or module's own paths). A name
   that only a build makes (a program without an extension, a `.so`, a
   `.pc`) needs only its folder to exist; `NAME`-style placeholders and
   names followed by a shell or glob expansion are not paths. Cited source
   paths of the projects the compatibility placements reproduce
   (libmemcached, twemproxy, nginx) are not this repository's.

Usage: check_docs.py [REPO_ROOT]   (default: the repository holding this file)
Files: those git tracks or would track (`git ls-files --cached --others
--exclude-standard`) when REPO_ROOT is a git checkout, else a walk that skips
build trees. Exit status 0 if every check holds, 1 otherwise, with one
line per problem: file:line: what.
"""
import os
import re
import subprocess
import sys

# References to material that lives outside the repository. Each pattern is
# written so that it does not match its own source text (no exemption for
# this file is needed, and a plain grep for the words finds nothing here).
OUTSIDE = [
    (re.compile(r"\.\./shar[e]d\b"), "a '../' path to the shared folder"),
    (re.compile(r"\bshar[e]d/"), "a path into the shared folder"),
    (re.compile(r"\bDESIG[N]\b"), "the design-contracts file"),
    (re.compile(r"\bSTYL[E]\.md\b"), "the house-style file"),
    (re.compile(r"\bcompat-algorithm[s]\.md\b"), "the compatibility reference"),
    (re.compile(r"(?<![\w/.-])measurement[s]\.md\b"), "the measurements reference"),
    (re.compile(r"/wor[k]/"), "a path of the development machine"),
    (re.compile(r"(?<![\w./-])/hom[e]/\w"), "a home directory"),
    (re.compile(r"\b[Ii]ssu[e]s?\s+#?\d+\b"), "an issue of the tracker, which a clone does not have"),
]
SKIP_DIRS = {".git", "target", "node_modules", "__pycache__"}

# 2: a relative path that climbs; 3: a path into one of the repository's folders.
CLIMB = re.compile(r"(?<![\w.-])((?:\.\./)+(?:[\w.-]+/)*[\w.-]*)")
TOP_LEVEL = ("src", "tests", "docs", "include", "bindings", "plugins", "scripts", "pkgconfig")
REPO_PATH = re.compile(r"(?<![\w./@$-])((?:%s)/[\w./+-]*[\w+])" % "|".join(TOP_LEVEL))
BUILT = re.compile(r"(^|/)[^/.]+$|\.(so|pc|test|a)$|\.so\.\d+$")  # what only a build makes
PLACEHOLDER = re.compile(r"(^|[/_.-])[A-Z][A-Z_]+([/_.-]|$)")
EXPANSION = re.compile(r"[$*{<\[]")
# Files of other projects that the compatibility docs and code cite by path.
CITED = ("src/libmemcached/", "src/hashkit/", "src/http/", "include/libmemcached-1.0/")
NOT_PROSE = (".gitignore",)  # patterns, not references
# The self-test of this file: its fixture is bad references on purpose.
SELF_TEST = "tests/docs/test_check_docs.py"

# [text](target "title") and ![alt](target); target may be <...>.
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
# [label]: target   at the start of a line
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def repository_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
        files = [f for f in out.decode("utf-8", "surrogateescape").split("\0") if f]
        return [f for f in files if os.path.isfile(os.path.join(root, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")]
            for n in names:
                files.append(os.path.relpath(os.path.join(d, n), root))
        return files


def strip_code(lines):
    """Yields (line number, text) outside fenced blocks, inline code removed:
    a path in a code sample is not a link."""
    in_fence = None
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if m:
            if in_fence is None:
                in_fence = m.group(1)
            elif m.group(1) == in_fence:
                in_fence = None
            continue
        if in_fence is None:
            yield n, re.sub(r"`+[^`]*`+", "", line)


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        result = set()
        with open(path, encoding="utf-8", errors="replace") as f:
            for _, line in strip_code(f.read().splitlines()):
                m = HEADING.match(line)
                if not m:
                    continue
                text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # links: their text
                slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
                k = seen.get(slug, 0)
                seen[slug] = k + 1
                result.add(slug if k == 0 else "%s-%d" % (slug, k))
        cache[path] = result
    return cache[path]


def check_links(root, md, problems):
    checked = 0
    path = os.path.join(root, md)
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    real_root = os.path.realpath(root)
    for n, line in strip_code(lines):
        targets = [m.group(1) for m in INLINE.finditer(line)]
        m = REFDEF.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            target = target.strip("<>")
            if SCHEME.match(target) or target.startswith("//"):
                continue
            checked += 1
            file_part, _, fragment = target.partition("#")
            if not file_part:
                dest = path  # a link within the same file
            elif file_part.startswith("/"):
                problems.append("%s:%d: absolute link '%s' (write it relative)" % (md, n, target))
                continue
            else:
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            real = os.path.realpath(dest)
            if real != real_root and not real.startswith(real_root + os.sep):
                problems.append("%s:%d: link '%s' leaves the repository" % (md, n, target))
            elif not os.path.exists(dest):
                problems.append("%s:%d: link '%s': no such file or directory" % (md, n, target))
            elif fragment and dest.endswith(".md") and os.path.isfile(dest):
                if fragment.lower() not in anchors(dest):
                    problems.append("%s:%d: link '%s': no heading '#%s' in %s"
                                    % (md, n, target, fragment, os.path.relpath(dest, root)))
    return checked


def path_exists(root, name, path):
    """Whether `path`, named in file `name`, resolves: from the root, the
    file's folder or a folder above it."""
    here = os.path.dirname(name)
    while True:
        if os.path.exists(os.path.join(root, here, path)):
            return True
        if not here:
            return False
        here = os.path.dirname(here)


def check_paths(root, name, n, line, problems):
    real_root = os.path.realpath(root)
    for m in CLIMB.finditer(line):
        path = m.group(1)
        dest = os.path.realpath(os.path.join(root, os.path.dirname(name), path))
        if dest != real_root and not dest.startswith(real_root + os.sep):
            problems.append("%s:%d: '%s' leaves the repository" % (name, n, path))
        elif not (os.path.exists(dest) or EXPANSION.match(line[m.end():m.end() + 1])
                  or PLACEHOLDER.search(path) or BUILT.search(path.rstrip("/"))
                  or any(part.startswith("build") for part in path.split("/"))):
            problems.append("%s:%d: '%s': no such file or directory (from %s)"
                            % (name, n, path, os.path.dirname(name) or "the root"))
    for m in REPO_PATH.finditer(line):
        path = m.group(1).rstrip(".")
        after = line[m.end():m.end() + 1]
        if (EXPANSION.match(after) or PLACEHOLDER.search(path) or (path + "/").startswith(CITED)
                or path_exists(root, name, path)):
            continue
        if BUILT.search(path) and path_exists(root, name, os.path.dirname(path)):
            continue
        problems.append("%s:%d: '%s': no such file or directory in the repository"
                        % (name, n, path))


def check_outside_references(root, name, problems):
    try:
        with open(os.path.join(root, name), "rb") as f:
            data = f.read()
    except OSError as e:
        problems.append("%s: cannot read: %s" % (name, e))
        return
    if b"\0" in data[:8192]:
        return  # binary: nothing a reader follows
    text = data.decode("utf-8", "replace")
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, what in OUTSIDE:
            if pattern.search(line):
                problems.append("%s:%d: refers outside the repository (%s)" % (name, n, what))
        if os.path.basename(name) not in NOT_PROSE:
            # A Markdown link's target is checked as a link (1), once.
            check_paths(root, name, n, INLINE.sub("", line) if name.endswith(".md") else line,
                        problems)


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    files = repository_files(root)
    problems = []
    markdown = [f for f in files if f.lower().endswith(".md")]
    links = sum(check_links(root, md, problems) for md in markdown)
    for name in files:
        if name != SELF_TEST:
            check_outside_references(root, name, problems)
    for p in problems:
        print(p)
    print("docs: %d relative links in %d Markdown files, %d files checked, %d problems"
          % (links, len(markdown), len(files), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
