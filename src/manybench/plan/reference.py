"""[reference]: the figures a cluster's CI expects, keyed "task.figure", with ReFrame-style
relative bounds: `"write.mb_s" = { value = 1800, lower = -0.05, upper = 0.20 }` passes a
measured figure within [1800 x 0.95, 1800 x 1.20]; a list of such tables with
`at = { workers = 4, ... }` gives per-point references. Evaluated in analysis/reference.py.
"""
from __future__ import annotations

from typing import Any

from .schema import known_names


def check_reference(raw: Any, tasks: list[str], probs: list) -> dict[str, list[dict]]:
    """The references by key, each as a list of {value, lower, upper, at}; the task part of
    every key must name a task (the schema checked each table's shape)."""
    out: dict[str, list[dict]] = {}
    if not isinstance(raw, dict):
        return out
    for key, value in raw.items():
        task, dot, figure = str(key).rpartition(".")
        loc = ("reference", key)
        if not dot or not task or not figure:
            probs.append((loc, 'a reference is keyed "task.figure", e.g. "write.mb_s"'))
            continue
        if task not in tasks:
            probs.append((loc, f"unknown task {task!r} {known_names(tasks, task)}"))
            continue
        items = value if isinstance(value, list) else [value]
        out[str(key)] = [dict(v) for v in items if isinstance(v, dict)]
    return out
