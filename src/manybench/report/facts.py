"""The facts that decide a task's figures as the report shows them (kernels/facts.py,
analysis/facts.py): one line under the task's table, "ran with: BLAS library ...;
BLAS core Haswell; ...". A fact with one value over the task is written once; one that
differs says where each value held: the points by what differs between them (the swept
parameters, the variant, workers), or the nodes when the same points ran two ways.
"""
from __future__ import annotations

from typing import Any

from ..analysis.facts import FactValue
from ..analysis.points import PointSummary
from .formats import param_formatter, swept
from .view import RunView

PREFIX = "ran with: "
MAX_WHERE = 4     # points or nodes named per value; the rest are counted


def _text(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _point_name(p: PointSummary, keys: list[str], variants: bool, workers: bool) -> str:
    parts = [p.variant or "(no variant)"] if variants else []
    if workers:
        parts.append(f"workers={p.workers}")
    parts += [f"{k}={param_formatter(p.kernel, k)(p.params.get(k))}" for k in keys]
    return " ".join(parts)


def _listed(names: list[str]) -> str:
    shown = names[:MAX_WHERE]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def _where(name: str, value: Any, points: list[PointSummary]) -> str:
    """Where a fact took this value: the points holding it (unless all do), and its nodes
    where a point holding it ran another way too (the same point, two BLAS libraries)."""
    mine = [(p, [f for f in p.facts if f.fact == name]) for p in points]
    holding = [(p, fs) for p, fs in mine if any(f.value == value for f in fs)]
    parts = []
    if len(holding) < len(points):
        keys = swept(points)
        variants = len({p.variant for p in points}) > 1
        workers = len({p.workers for p in points}) > 1
        parts.append(_listed([_point_name(p, keys, variants, workers) for p, _ in holding]))
    if any(len(fs) > 1 for _, fs in holding):
        nodes = list(dict.fromkeys(n for _, fs in holding for f in fs if f.value == value
                                   for n in f.nodes))
        parts.append(("node " if len(nodes) == 1 else "nodes ") + _listed(nodes))
    return " on ".join(parts)


def facts_line(points: list[PointSummary]) -> str:
    """The task's line ("" when its kernel declares no fact or no record carries one)."""
    values: dict[str, list[FactValue]] = {}
    for p in points:
        for f in p.facts:
            same = values.setdefault(f.fact, [])
            if not any(g.value == f.value for g in same):
                same.append(f)
    parts = []
    for name, vs in values.items():
        if len(vs) == 1:
            parts.append(f"{vs[0].label} {_text(vs[0].value)}")
        else:
            parts.append(f"{vs[0].label} " + ", ".join(
                f"{_text(f.value)} ({_where(name, f.value, points)})" for f in vs))
    return PREFIX + "; ".join(parts) if parts else ""


def attach_facts(view: RunView, by_task: dict[str, list[PointSummary]]) -> None:
    """Each task's facts line, first of the notes under its table."""
    for t in view.tables:
        line = facts_line(by_task.get(t.task, [])) if t.task else ""
        if line:
            t.notes.insert(0, line)
