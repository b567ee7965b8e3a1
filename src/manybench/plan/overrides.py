"""Dotted field paths, as --set and a variant's `set` take them, and raw plan locations.

A raw location is a tuple of keys and list indexes into the TOML dict, e.g. ("task", 0,
"block"); a field path is its dotted --set spelling, e.g. `task.write.block`. This module
turns one into the other, assigns values at a location, and reads --set values.
"""
from __future__ import annotations

import re
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

Loc = tuple  # a raw location: ("task", 0, "block"), ("placement", "workers"), ...


def entry_names(raw: dict, section: str) -> dict[int, str]:
    """Index -> name for entries addressable by name (a string, first of its name)."""
    out: dict[int, str] = {}
    seen: set[str] = set()
    items = raw.get(section)
    for i, item in enumerate(items if isinstance(items, list) else []):
        name = item.get("name") if isinstance(item, dict) else None
        # a name with a newline or tab cannot be a one-line field path: it goes by position
        if isinstance(name, str) and name and name.isprintable() and name not in seen:
            out[i] = name
            seen.add(name)
    return out


def field_name(raw: dict, loc: Loc) -> str:
    """The --set style dotted path of a raw location (list element indexes are left out)."""
    parts: list[str] = []
    for k, part in enumerate(loc):
        if k == 1 and isinstance(part, int) and loc[0] in ("task", "variant"):
            name = entry_names(raw, loc[0]).get(part)
            if name is None:
                parts[-1] += f"[{part}]"
            else:
                parts.append(name)
        elif not isinstance(part, int):
            parts.append(str(part))
    return ".".join(parts)


def resolve_key(raw: dict, key: str) -> Loc:
    """Raw location of a --set key (`task.write.block`, `task[1].env.X`); ValueError if none."""
    parts = key.split(".")
    if not key or any(not p.strip() for p in parts):
        raise ValueError("not a field path (e.g. repeat, placement.workers, task.write.block)")
    head = parts[0]
    m = re.fullmatch(r"(task|variant)\[(\d+)\]", head)
    if m or head in ("task", "variant"):
        section = m.group(1) if m else head
        items = raw.get(section) if isinstance(raw.get(section), list) else []
        if m:
            idx, rest = int(m.group(2)), parts[1:]
            if idx >= len(items):
                raise ValueError(f"there is no {section}[{idx}] (the plan has {len(items)})")
        else:
            names = entry_names(raw, section)
            # Longest match first, so a task named "io.write" is still addressable.
            for j in range(len(parts), 1, -1):
                hit = [i for i, n in names.items() if n == ".".join(parts[1:j])]
                if hit:
                    idx, rest = hit[0], parts[j:]
                    break
            else:
                wanted = parts[1] if len(parts) > 1 else ""
                raise ValueError(f"no {section} named {wanted!r} "
                                 f"(the plan has: {', '.join(names.values()) or 'none'})")
        if not rest:
            raise ValueError(f"names a whole {section}; give one of its fields, "
                             f"e.g. {key}.workers")
        if section == "variant" and rest[0] == "set" and len(rest) > 1:
            rest = ["set", ".".join(rest[1:])]  # a variant's set keys are paths themselves
        return (section, idx, *rest)
    return tuple(parts)


def assign(raw: dict, loc: Loc, value: Any) -> None:
    """Set raw[loc] = value, creating tables on the way; ValueError if a non-table is in it."""
    node: Any = raw
    for k, part in enumerate(loc[:-1]):
        if isinstance(part, int):  # resolve_key checked the index
            node = node[part]
            if not isinstance(node, dict):
                raise ValueError(f"entry {part} is not a table")
            continue
        if part not in node:
            node[part] = {}
        node = node[part]
        if not isinstance(node, list if isinstance(loc[k + 1], int) else dict):
            raise ValueError(f"{part!r} is not a table")
    node[loc[-1]] = value


def parse_value(text: str) -> Any:
    """A --set VALUE: a TOML value when it is one (3, true, [2,4], "x"), else the plain string.

    `[64KiB, 1MiB]` is not TOML (unquoted items) but obviously a list, so such a list is split
    and each item read the same way, instead of becoming one odd string.
    """
    try:
        doc = tomllib.loads(f"v = {text}")
        if list(doc) == ["v"]:
            return doc["v"]
    except tomllib.TOMLDecodeError:
        pass
    s = text.strip()
    if s.startswith("[") and s.endswith("]"):
        items = [x.strip() for x in s[1:-1].split(",")]
        return [parse_value(x) for x in items if x]
    return text


def flatten(table: dict, prefix: str = "") -> dict[str, Any]:
    """Nested tables -> dotted keys: `task.write.block = 1` unquoted in TOML nests tables."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
