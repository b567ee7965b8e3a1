"""Upper bounds on a plan's counts, checked when the plan is read (so --dry-run catches them
before anything is expanded, allocated or started). docs/plan.md "Limits" lists them with the
size and duration bounds of units.py and the kernels' integer bounds."""
from __future__ import annotations

import math
from typing import Any

from ..kernels import KERNELS
from .overrides import Loc

MAX_WORKERS = 100_000     # slots of one phase: 1,000 nodes x 64 slots fit
MAX_REPEAT = 100_000      # phases per point
MAX_PHASES = 1_000_000    # phases of a whole run, all tasks, points, repeats and variants
MAX_CPUS = 4096           # cpus per slot
MAX_DEPTH = 32            # tables and lists inside each other (a real plan needs about 5)
MAX_NAME_BYTES = 200      # plan, task, variant and group names: file names count bytes (255)


def _n(value: Any) -> int:
    """How many values a field sweeps (a scalar is one)."""
    return len(value) if isinstance(value, list) else 1


def task_phases(task: dict, place: dict, workers: Any) -> int:
    """Phases one raw [[task]] expands to per repeat and variant, from list lengths alone."""
    kernel = KERNELS.get(task.get("kernel")) if isinstance(task.get("kernel"), str) else None
    fixed = ("name", "kernel", "command", "shell", "dir", "timeout", "env", "metrics", "nodes",
             "parse", "workers", "order")
    n = math.prod(_n(v) for k, v in task.items()
                  if k not in fixed and (kernel is None or k in kernel.params))
    n *= _n(task.get("workers", workers))
    for axis in ("order", "pin", "cpus", "bind"):
        n *= _n(task.get(axis, place.get(axis)))      # a task may set its own order
    return n


def _count(value: Any, default: int) -> int:
    """A count the schema will check; anything that is not one counts as the default."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else default


def phase_count(raw: dict, variants: bool = True) -> tuple[int, Loc]:
    """An upper bound of the run's phases, warm-up repetitions included, counted without
    expanding, and the field most to blame (the repetitions when they multiply, else the
    task with the most phases)."""
    place = raw.get("placement") if isinstance(raw.get("placement"), dict) else {}
    workers = place.get("workers", 1)
    tasks = [t for t in raw.get("task", []) if isinstance(t, dict)] \
        if isinstance(raw.get("task"), list) else []
    variants = raw.get("variant") if isinstance(raw.get("variant"), list) else []
    repeat, warmup = max(1, _count(raw.get("repeat"), 1)), _count(raw.get("warmup"), 0)
    reps = [repeat + _count(t.get("warmup"), warmup) for t in tasks]
    per = [task_phases(t, place, workers) for t in tasks]
    total = sum(p * r for p, r in zip(per, reps)) * max(1, len(variants) if variants else 1)
    if not per:
        return total, ("repeat",)
    worst = max(range(len(per)), key=lambda i: per[i] * reps[i])
    if _count(tasks[worst].get("warmup"), -1) > repeat:
        return total, ("task", worst, "warmup")
    if warmup > repeat and reps[worst] == repeat + warmup:
        return total, ("warmup",)
    if repeat > 1:
        return total, ("repeat",)
    return total, ("task", worst)


def name_problems(raw: dict) -> list[tuple[Loc, str]]:
    """Names longer than MAX_NAME_BYTES in UTF-8: the plan's name is a directory's, a task's
    is in plot file names, and a file system counts bytes, not characters."""
    named: list[tuple[Loc, Any]] = [(("name",), raw.get("name"))]
    for table in ("task", "variant", "concurrent"):
        items = raw.get(table) if isinstance(raw.get(table), list) else []
        named += [((table, i, "name"), t.get("name")) for i, t in enumerate(items)
                  if isinstance(t, dict)]
    out = []
    for loc, name in named:
        n = len(name.encode("utf-8", "surrogatepass")) if isinstance(name, str) else 0
        if n > MAX_NAME_BYTES:
            out.append((loc, f"a name of {n} bytes in UTF-8 ({len(name)} characters); at "
                             f"most {MAX_NAME_BYTES} bytes"))
    return out


def check_phase_count(raw: dict, probs: list, variants: bool = True) -> bool:
    """False (and the problem told) when the plan expands to too many phases to build."""
    total, loc = phase_count(raw, variants)
    if total <= MAX_PHASES:
        return True
    probs.append((loc, f"the plan would expand to {total:,} phases, more than the limit "
                           f"of {MAX_PHASES:,}; sweep fewer values or repeat less"))
    return False


def too_deep(raw: Any) -> Loc | None:
    """Where tables or lists nest deeper than MAX_DEPTH (walked without recursion, so any
    depth is safe to look at), else None."""
    stack: list[tuple[Loc, Any]] = [((), raw)]
    while stack:
        loc, value = stack.pop()
        if len(loc) > MAX_DEPTH:
            return loc[:MAX_DEPTH]
        if isinstance(value, dict):
            stack.extend((loc + (k,), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((loc + (i,), v) for i, v in enumerate(value))
    return None
