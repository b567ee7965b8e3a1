"""Source lines of plan fields, found by a line-based scan of the TOML text.

tomllib keeps no positions, so messages find a field's line here: the line of its key, else
of its enclosing table or [[task]]/[[variant]] header (best effort, never a mere guess).
"""
from __future__ import annotations

import re

from .overrides import Loc

_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\\]*"|'[^']*')"""
_DOTTED = rf"({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)"
_KEY_RE = re.compile(rf"^\s*{_DOTTED}\s*=")
_AOT_RE = re.compile(rf"^\s*\[\[\s*{_DOTTED}\s*\]\]\s*(?:#.*)?$")
_TABLE_RE = re.compile(rf"^\s*\[\s*{_DOTTED}\s*\]\s*(?:#.*)?$")


def _key_parts(text: str) -> tuple[str, ...]:
    return tuple(p.strip("\"'") for p in re.findall(_KEY_PART, text))


def line_index(source: str) -> dict[Loc, int]:
    """Raw location -> line for keys and table headers (best effort, a line-based scan)."""
    index: dict[Loc, int] = {}
    counts: dict[str, int] = {}
    prefix: Loc = ()
    in_multiline = False
    for no, line in enumerate(source.splitlines(), 1):
        # Lines inside multi-line strings are not keys, whatever they look like.
        opens = (line.count('"""') + line.count("'''")) % 2 == 1
        if in_multiline:
            in_multiline = not opens
            continue
        in_multiline = opens
        if m := _AOT_RE.match(line):
            parts = _key_parts(m.group(1))
            counts[parts[0]] = counts.get(parts[0], 0) + 1
            prefix = (parts[0], counts[parts[0]] - 1, *parts[1:])
        elif m := _TABLE_RE.match(line):
            parts = _key_parts(m.group(1))
            prefix = ((parts[0], counts[parts[0]] - 1, *parts[1:]) if parts[0] in counts
                      else parts)
        elif m := _KEY_RE.match(line):
            loc = prefix + _key_parts(m.group(1))
            index.setdefault(loc, no)
            if len(loc) > 4 and loc[0] == "variant" and loc[2] == "set":
                index.setdefault(loc[:3] + (".".join(loc[3:]),), no)
            continue
        else:
            continue
        index.setdefault(prefix, no)
    return index


def find_line(index: dict[Loc, int], loc: Loc) -> int | None:
    """The key's line, else its enclosing task/variant/table header; never a mere guess."""
    loc = tuple(p for k, p in enumerate(loc) if k == 1 or not isinstance(p, int))
    for n in range(len(loc), 0, -1):
        if loc[:n] in index:
            return index[loc[:n]]
        if n == 2 and loc[0] in ("task", "variant"):
            break  # no header for it: do not fall back to an unrelated top-level line
    return None
