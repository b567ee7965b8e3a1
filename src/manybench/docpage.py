"""A generated section of a docs page (docs/definitions.md's figures, docs/configuration.md's
timings): written from the code between two markers, checked in so the page reads as it is,
and checked against the code by the tests (`--check`)."""
from __future__ import annotations

import sys
from typing import Callable


def with_section(text: str, begin: str, end: str, body: str) -> str:
    """The page with its section between `begin` and `end` replaced by `body` (appended when
    it has none)."""
    section = f"{begin}\n{body}{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        return head + section + rest.split(end, 1)[1]
    return text.rstrip("\n") + "\n\n" + section + "\n"


def main(argv: list[str], rewrite: Callable[[str], str], usage: str, stale: str) -> int:
    """`--write PAGE` or `--check PAGE`: exit 1 when stale, saying `stale` (what is wrong and
    the command that writes it, which `--write PAGE` ends)."""
    if len(argv) != 2 or argv[0] not in ("--write", "--check"):
        print(usage, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        text = f.read()
    new = rewrite(text)
    if argv[0] == "--check":
        if new != text:
            print(f"{argv[1]}: {stale} --write {argv[1]}", file=sys.stderr)
            return 1
        return 0
    with open(argv[1], "w", encoding="utf-8") as f:
        f.write(new)
    return 0
