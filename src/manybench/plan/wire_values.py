"""Every value of a plan is one manybench can carry to its nodes and use there, checked when
the plan is read (so `--dry-run` refuses what the run would crash on): integers within
msgpack's (node/codec.py: -2**63 to 2**64 - 1; one beyond made the run's first send raise
OverflowError and the run end `aborted`), no TOML date or time (no wire type: a TypeError at
the first send), no NUL character in a string (no argument, environment variable or file
name holds one: every phase failed at exec) and no lone surrogate (bytes of a --set VALUE
that are no UTF-8: a traceback when the run was stored). Nesting is bounded by limits.py.
"""
from __future__ import annotations

import datetime
from typing import Any

from ..node.codec import INT_MAX, INT_MIN
from .overrides import Loc

_DATES = (datetime.date, datetime.time)     # datetime.datetime is a date
_INTS = "-2**63 to 2**64 - 1"


def _digits(n: int) -> str:
    text = str(n)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text.lstrip('-'))} digits)"


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return ("holds a NUL character (\\u0000), which no argument, environment variable or "
                "file name can hold")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "backslashreplace").decode("ascii", "replace")
        return f"is not valid UTF-8 (bytes of another encoding?): {shown}"
    return None


def _problem(value: Any) -> str | None:
    """Why a node cannot be sent this value, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if INT_MIN <= value <= INT_MAX:
            return None
        return (f"the integer {_digits(value)} is outside what manybench carries to its nodes "
                f"({_INTS}); quote it to pass it as text")
    if isinstance(value, _DATES):
        return (f"a date or time ({value.isoformat()}) cannot be carried to a node; quote it "
                "to pass it as text")
    if isinstance(value, str):
        why = _text_problem(value)
        return None if why is None else f"the text {why}"
    return None


def wire_problems(raw: Any) -> list[tuple[Loc, str]]:
    """(location, message) of every value or key of the raw plan a node cannot be sent,
    walked without recursion (limits.too_deep has bounded the depth)."""
    out: list[tuple[Loc, str]] = []
    stack: list[tuple[Loc, Any]] = [((), raw)]
    while stack:
        loc, value = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                why = _text_problem(k) if isinstance(k, str) else None   # TOML: always
                if why is not None:
                    out.append((loc + (k,), f"the key {why}"))
                stack.append((loc + (k,), v))
        elif isinstance(value, list):
            stack.extend((loc + (i,), v) for i, v in enumerate(value))
        else:
            why = _problem(value)
            if why is not None:
                out.append((loc, why))
    return out         # parse_plan orders problems by line
