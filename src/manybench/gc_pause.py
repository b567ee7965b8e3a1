"""The cyclic garbage collector paused while a phase's records are made and stored.

A phase at 1,000 nodes x 64 slots makes ~200,000 containers (each record's metrics and extra,
its row) that form no cycles and live until the phase is committed. With the collector on,
their allocation alone starts ~300 young collections a phase, each walking what survived the
last ones: 10-18% of the coordinator's record path. Paused, they are walked once, at the
next collection after it resumes. Reference counting frees everything as usual meanwhile.
"""
from __future__ import annotations

import functools
import gc
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def gc_paused(fn: F) -> F:
    """fn with the collector off while it runs (left as it was found: nesting is free)."""
    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return paused  # type: ignore[return-value]
