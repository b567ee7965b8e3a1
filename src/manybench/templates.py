"""`{name}` templates for command arguments.

Deliberately smaller than str.format: only bare identifiers may be named, with no format
specs, conversions, attribute or index access, so a plan cannot reach into Python objects
and every name a template uses can be checked against the task's parameters before a run.
`{{` and `}}` stand for literal braces, as in str.format.
"""
from __future__ import annotations

from typing import Any, Mapping


def _parse(template: str) -> list[tuple[bool, str]]:
    """Split into (is_field, text) pieces; ValueError with the position on malformed input."""
    if not isinstance(template, str):
        raise ValueError(f"template must be a string, got {template!r}")
    pieces: list[tuple[bool, str]] = []
    literal: list[str] = []
    i, n = 0, len(template)
    while i < n:
        c = template[i]
        if c == "{":
            if template.startswith("{{", i):
                literal.append("{")
                i += 2
                continue
            end = template.find("}", i + 1)
            if end < 0:
                raise ValueError(f"unbalanced '{{' at position {i} in {template!r} "
                                 f"(write '{{{{' for a literal brace)")
            name = template[i + 1:end]
            if not name.isidentifier():
                raise ValueError(f"'{{{name}}}' in {template!r} is not a plain parameter name: "
                                 f"use {{name}} with letters, digits and _ only "
                                 f"(write '{{{{' for a literal brace)")
            if literal:
                pieces.append((False, "".join(literal)))
                literal = []
            pieces.append((True, name))
            i = end + 1
        elif c == "}":
            if template.startswith("}}", i):
                literal.append("}")
                i += 2
                continue
            raise ValueError(f"unbalanced '}}' at position {i} in {template!r} "
                             f"(write '}}}}' for a literal brace)")
        else:
            literal.append(c)
            i += 1
    if literal:
        pieces.append((False, "".join(literal)))
    return pieces


def fields(template: str) -> list[str]:
    """Names used in `{name}` placeholders, each once, in order of first use."""
    seen: dict[str, None] = {}
    for is_field, text in _parse(template):
        if is_field:
            seen.setdefault(text, None)
    return list(seen)


def render(template: str, values: Mapping[str, Any]) -> str:
    """Substitute str(value) for each `{name}`; ValueError names a missing parameter."""
    out: list[str] = []
    for is_field, text in _parse(template):
        if not is_field:
            out.append(text)
        elif text in values:
            out.append(str(values[text]))
        else:
            raise ValueError(f"template {template!r} names unknown parameter {text!r}")
    return "".join(out)
