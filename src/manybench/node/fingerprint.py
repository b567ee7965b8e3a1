"""The wire's fingerprint: every wire type's fields and their types, nested, read from the code.

A wire type (protocol.WIRE_TYPES) is a dataclass; the fingerprint follows each field's type into
the types it names: the dataclasses it holds (which must be wire types themselves, or the codec
could not carry them), the TypedDicts a dict field is (their keys and types) and the enums (their
values). The result maps each type's name to its fields, one "name: type" each, in order, so
two fingerprints compare field by field (`changes`) and a change names the type, the field and
its old and new type. node/wire_pins.py holds the fingerprint of PROTOCOL_VERSION;
tests/node/test_wire_fingerprint.py fails when the code's differs from its version's.

Only what decides the bytes and what they mean counts: names, order, types, enum values. A
comment does not; a default does not (the codec sends every field).
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import sys
import types
import typing
from typing import Any, Iterable

from .wire_types import OPEN

Fingerprint = dict[str, list[str]]    # type name -> "field: type", in order
UNTYPED = "untyped"   # the mark of a bare dict, list, tuple or Any: a hole in the fingerprint


def fingerprint(wire_types: Iterable[type]) -> Fingerprint:
    """The fingerprint of these wire types and every type their fields name (the wire types
    first, in their order, so a code's types are listed as the codec numbers them)."""
    out: Fingerprint = {}
    todo = list(wire_types)
    seen: dict[str, type] = {}
    while todo:
        t = todo.pop(0)
        name = _name(t)
        if name in seen:
            if seen[name] is not t:     # the fingerprint names types: two of one name are one
                raise TypeError(f"two types named {name} on the wire: {seen[name].__module__}"
                                f" and {t.__module__}")
            continue
        seen[name] = t
        out[name] = _entry(t, todo)
    return out


def of_protocol() -> Fingerprint:
    """The wire as node/protocol.py declares it: the wire types' fields, nested, and which
    types are packed apart (codec.py's shared)."""
    from . import protocol      # deferred: protocol's codec is not needed to read a pin
    fp = fingerprint(protocol.WIRE_TYPES)
    fp["(packed apart)"] = sorted(_name(t) for t in protocol.CODEC.shared)
    return fp


def _entry(t: type, todo: list[type]) -> list[str]:
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return [f"{m.name} = {m.value!r}" for m in t]
    hints = typing.get_type_hints(t, include_extras=True)
    if dataclasses.is_dataclass(t):
        return [f"{f.name}: {_text(hints[f.name], todo)}" for f in dataclasses.fields(t)]
    if typing.is_typeddict(t):
        optional = t.__optional_keys__
        return [f"{k}{'?' if k in optional else ''}: {_text(v, todo)}" for k, v in hints.items()]
    raise TypeError(f"{_name(t)} is not a dataclass, TypedDict or enum")


def _name(t: type) -> str:
    return t.__qualname__


def _followed(t: object) -> bool:
    return isinstance(t, type) and (dataclasses.is_dataclass(t) or typing.is_typeddict(t)
                                    or issubclass(t, enum.Enum))


def _text(hint: Any, todo: list[type]) -> str:
    """A field's type as the fingerprint writes it, the types it names queued to follow."""
    if hint is type(None) or hint is None:
        return "None"
    if hint is Any or hint is object:
        return UNTYPED
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:       # wire_types.Open: declared open data, named so
        base, *meta = typing.get_args(hint)
        return OPEN if OPEN in meta else _text(base, todo)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        # None last, the rest in their order: `int | None` whichever way it is written
        parts = [_text(a, todo) for a in args if a is not type(None)]
        return " | ".join(parts + ["None"] * (type(None) in args))
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(a) for a in typing.get_args(hint))}]"
    if origin is not None:
        args = typing.get_args(hint)
        texts = ["..." if a is Ellipsis else _text(a, todo) for a in args]
        return f"{origin.__name__}[{', '.join(texts)}]"
    if hint in (dict, list, tuple, set):
        return f"{UNTYPED} {hint.__name__}"
    if _followed(hint):
        todo.append(hint)
        return _name(hint)
    if isinstance(hint, type):
        return hint.__name__
    raise TypeError(f"cannot read the type {hint!r}")


def untyped(fp: Fingerprint) -> list[str]:
    """Fields whose type leaves a hole: bare dict, list, tuple, or Any ("Type.field: type")."""
    return [f"{t}.{line}" for t, lines in fp.items() for line in lines if UNTYPED in line]


def changes(old: Fingerprint, new: Fingerprint) -> list[str]:
    """What changed from old to new, one line each: a type added or removed, a field added,
    removed, moved or retyped (naming its old and new type)."""
    out = [f"{t}: removed" for t in old if t not in new]
    if [t for t in old if t in new] != [t for t in new if t in old]:
        out.append(f"types reordered (a wire type's code is its place): {', '.join(new)}")
    for t, lines in new.items():
        if t not in old:
            out.append(f"{t}: added ({'; '.join(lines)})")
            continue
        was = dict(_split(line) for line in old[t])
        now = dict(_split(line) for line in lines)
        for f, typ in now.items():
            if f not in was:
                out.append(f"{t}.{f}: added ({typ})")
            elif was[f] != typ:
                out.append(f"{t}.{f}: {was[f]} -> {typ}")
        out.extend(f"{t}.{f}: removed (was {typ})" for f, typ in was.items() if f not in now)
        if [f for f in was if f in now] != [f for f in now if f in was]:
            out.append(f"{t}: fields reordered ({', '.join(now)})")
    return out


def digest(fp: Fingerprint) -> str:
    """A short digest of a fingerprint: what wire_pins.EARLIER keeps of each older version."""
    text = "\n".join(f"{t}: {'; '.join(lines)}" for t, lines in fp.items())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def pin_text(version: int, fp: Fingerprint, earlier: dict[int, str]) -> str:
    """node/wire_pins.py's text pinning fp to version: one line a type, its fields joined."""
    out = [PINS_HEAD, f"VERSION = {version}", "PINNED: dict[str, str] = {"]
    out.extend(_wrapped(f"    {t!r}: ", lines) for t, lines in fp.items())
    out += ["}", "# each earlier version's fingerprint, as its digest (fingerprint.digest)",
            "EARLIER: dict[int, str] = {"]
    out.extend(f"    {v}: {d!r}," for v, d in sorted(earlier.items()))
    out.append("}")
    return "\n".join(out) + "\n"


def unpinned(pinned: dict[str, str]) -> Fingerprint:
    """wire_pins.PINNED as a fingerprint."""
    return {t: line.split("; ") if line else [] for t, line in pinned.items()}


def check(fp: Fingerprint, version: int, pinned_version: int,
          pinned: dict[str, str]) -> list[str]:
    """Why the code's fingerprint may not go out as this version, wire_pins holding
    pinned_version's (PINNED): empty when it is that version's."""
    since = changes(unpinned(pinned), fp)
    if version == pinned_version:
        return [f"the wire changed with PROTOCOL_VERSION still {version}: {c}" for c in since]
    if version < pinned_version:
        return [f"PROTOCOL_VERSION {version} is older than the pinned one ({pinned_version})"]
    return [f"PROTOCOL_VERSION {version} has no pinned fingerprint: pin it with `python -m "
            f"manybench.node.fingerprint > src/manybench/node/wire_pins.py`; since version "
            f"{pinned_version}: " + ("; ".join(since) or "no change")]


def _wrapped(head: str, lines: list[str], width: int = 99) -> str:
    """head then the fields as one string literal, cut between fields to stay in width."""
    chunks, now = [], ""
    for i, line in enumerate(lines):
        part = line + ("; " if i < len(lines) - 1 else "")
        if now and len(head) + len(repr(now + part)) > width:
            chunks.append(now)
            now = ""
        now += part
    chunks.append(now)
    pad = "\n" + " " * len(head)
    return head + pad.join(repr(c) for c in chunks) + ","


PINS_HEAD = '''"""The wire's fingerprint at PROTOCOL_VERSION (node/fingerprint.py): each wire type's
fields and types, nested, one line a type. tests/node/test_wire_fingerprint.py fails when the
code's fingerprint is not VERSION's: a change to the wire bumps PROTOCOL_VERSION and pins it
here (`python -m manybench.node.fingerprint > src/manybench/node/wire_pins.py` writes this
file, the version it replaces kept in EARLIER as a digest; it refuses a change without a
bump; `--again` replaces the pin of a version not yet released)."""
from __future__ import annotations

'''


def _split(line: str) -> tuple[str, str]:
    name, _, typ = line.partition(": ")
    if " = " in name and not typ:        # an enum's member: name = value
        name, _, typ = line.partition(" = ")
    return name, typ


def _pin(again: bool = False) -> int:
    """Print wire_pins.py pinning the code's fingerprint to PROTOCOL_VERSION. again: replace
    the pin of a version not yet released (branches that each changed the wire, merged into
    one version)."""
    from . import protocol, wire_pins
    fp, version = of_protocol(), protocol.PROTOCOL_VERSION
    earlier = dict(wire_pins.EARLIER)
    if version == wire_pins.VERSION and fp != unpinned(wire_pins.PINNED) and not again:
        sys.stderr.write(f"the wire changed: bump PROTOCOL_VERSION (still {version}) first "
                         f"(--again: version {version} is not released yet)\n")
        return 2
    if version < wire_pins.VERSION:
        sys.stderr.write(f"PROTOCOL_VERSION {version} is older than the pinned one\n")
        return 2
    if version > wire_pins.VERSION:
        earlier[wire_pins.VERSION] = digest(unpinned(wire_pins.PINNED))
    sys.stdout.write(pin_text(version, fp, earlier))
    return 0


if __name__ == "__main__":     # wire_pins.py's text with PROTOCOL_VERSION's fingerprint pinned
    sys.exit(_pin(again=sys.argv[1:] == ["--again"]))
