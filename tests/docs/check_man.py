#!/usr/bin/env python3
"""chring(1) documents every command and option the built tool has.

Asks the tool itself: `chring --help` lists its commands, `chring COMMAND
--help` each command's long options and subcommands (and so on down).
Fails if docs/man/chring.1 has no `.SS COMMAND` block for a command, or if a
command's long option (other than --help) appears neither in its block nor
under COMMON OPTIONS, or a subcommand is not named in its command's block.

Usage: check_man.py CHRING MAN_PAGE
Exit status 0 if the page covers the tool, 1 otherwise (one line a gap).
"""
import re
import subprocess
import sys

SECTION_HEAD = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
ITEM = re.compile(r"^\s{1,8}(\S+)")
LONG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


def help_of(chring, words):
    run = subprocess.run([chring] + words + ["--help"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=60)
    text = run.stdout.decode("utf-8", "replace")
    if run.returncode != 0:
        raise SystemExit("%s %s --help: exit %d\n%s" % (chring, " ".join(words), run.returncode, text))
    return text


def parse(text):
    """(subcommand names, long option names) of one --help page (CLI11)."""
    subcommands, options, section = [], set(), None
    for line in text.splitlines():
        if SECTION_HEAD.match(line):
            section = line.strip().rstrip(":").upper()
            continue
        if not line.strip():
            continue
        if section == "SUBCOMMANDS":
            m = ITEM.match(line)
            if m and line.startswith(" "):
                subcommands.append(m.group(1))
        elif section == "OPTIONS" and line.lstrip().startswith("-"):
            # the option's own names are before its type and description
            head = re.split(r"\s{2,}", line.strip())[0]
            options.update(LONG.findall(head))
    options.discard("help")
    return subcommands, options


def man_blocks(page):
    """{.SS name: text} and the COMMON OPTIONS text, roff escapes undone."""
    text = re.sub(r"\\f(\(..|\[[^]]*\]|.)", "", page.replace("\\-", "-"))
    blocks, common, current, in_common = {}, [], None, False
    for line in text.splitlines():
        if line.startswith(".SH "):
            current = None
            in_common = line[4:].strip().strip('"') == "COMMON OPTIONS"
            continue
        if line.startswith(".SS "):
            current = line[4:].strip().strip('"')
            blocks[current] = []
            in_common = False
            continue
        if current is not None:
            blocks[current].append(line)
        elif in_common:
            common.append(line)
    return {k: "\n".join(v) for k, v in blocks.items()}, "\n".join(common)


def documented(option, texts):
    pattern = re.compile(r"(?<![\w-])--%s(?![\w-])" % re.escape(option))
    return any(pattern.search(t) for t in texts)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    chring, man_path = sys.argv[1:]
    with open(man_path, encoding="utf-8") as f:
        blocks, common = man_blocks(f.read())
    commands, _ = parse(help_of(chring, []))
    if not commands:
        raise SystemExit("%s --help lists no commands: has its layout changed?" % chring)
    problems = []

    def walk(command, words):
        block = blocks[command]
        subcommands, options = parse(help_of(chring, words))
        for option in sorted(options):
            if not documented(option, [block, common]):
                problems.append("%s: '%s' has option --%s, which the page does not document"
                                % (man_path, " ".join(words), option))
        for sub in subcommands:
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(sub), block):
                problems.append("%s: '%s' has subcommand %s, which its block does not name"
                                % (man_path, " ".join(words), sub))
            else:
                walk(command, words + [sub])

    for command in commands:
        if command not in blocks:
            problems.append("%s: no '.SS %s' block for the command %s" % (man_path, command, command))
            continue
        walk(command, [command])
    for p in problems:
        print(p)
    print("%d commands, %d gaps" % (len(commands), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
