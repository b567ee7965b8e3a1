"""[reference]: the figures a cluster's CI expects, keyed "task.figure", with ReFrame-style
relative bounds: `"write.mb_s" = { value = 1800, lower = -0.05, upper = 0.20 }` passes a
measured figure within [1800 x 0.95, 1800 x 1.20]; a list of such tables with
`at = { workers = 4, ... }` gives per-point references. Evaluated in analysis/reference.py,
whose module docstring defines the figures named here.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..kernels import KERNELS
from ..model import TaskSpec
from .schema import known_names

# figures every task has (analysis/reference.AGGREGATES and ALIASES); other names are metrics
AGGREGATE_FIGURES = ("mb_s", "bandwidth_mb_s", "ops_s", "ops_per_s", "elapsed_s",
                     "sync_overhead_us", "skew_us")
SYNC_FIGURE = "sync_overhead_us"
AT_AXES = ("workers", "variant", "order", "pin", "cpus", "bind")   # besides a task's params


def check_reference(raw: Any, tasks: Sequence[str] | Sequence[TaskSpec], probs: list,
                    variants: Sequence[str] | None = None) -> dict[str, list[dict]]:
    """The references by key, each as a list of {value, lower, upper, at}; the task part of
    every key must name a task (the schema checked each table's shape). Given TaskSpecs, the
    figure and the `at` keys are checked too; given variant names, `at.variant`."""
    out: dict[str, list[dict]] = {}
    if not isinstance(raw, dict):
        return out
    specs = {t.name: t for t in tasks if isinstance(t, TaskSpec)}
    names = [t.name if isinstance(t, TaskSpec) else t for t in tasks]
    for key, value in raw.items():
        task, dot, figure = str(key).rpartition(".")
        loc = ("reference", key)
        if not dot or not task or not figure:
            probs.append((loc, 'a reference is keyed "task.figure", e.g. "write.mb_s"'))
            continue
        if task not in names:
            probs.append((loc, f"unknown task {task!r} {known_names(names, task)}"))
            continue
        items = value if isinstance(value, list) else [value]
        if task in specs:
            _check_figure(loc, specs[task], figure, probs)
            for i, it in enumerate(items):
                if isinstance(it, dict) and isinstance(it.get("at"), dict):
                    at_loc = loc + ((i,) if isinstance(value, list) else ()) + ("at",)
                    _check_at(at_loc, specs[task], it["at"], variants, probs)
        out[str(key)] = [dict(v) for v in items if isinstance(v, dict)]
    return out


def _check_figure(loc: tuple, spec: TaskSpec, figure: str, probs: list) -> None:
    kernel = KERNELS.get(spec.kernel)
    if figure == SYNC_FIGURE and kernel is not None and not kernel.sync_only:
        probs.append((loc, f"{SYNC_FIGURE} is the figure of kernels that do no work (null); "
                           f"task {spec.name!r} runs {spec.kernel} (try elapsed_s or mb_s)"))
    # a command's metrics are the ones it names (a parser's and a kernel's are not known
    # before they run)
    if kernel is not None and kernel.from_command and not spec.parse \
            and figure not in AGGREGATE_FIGURES and figure not in spec.metrics:
        known = list(AGGREGATE_FIGURES) + list(spec.metrics)
        probs.append((loc, f"unknown figure {figure!r} for command task {spec.name!r} "
                           f"{known_names(known, figure)}"))


def _check_at(loc: tuple, spec: TaskSpec, at: dict, variants: Sequence[str] | None,
              probs: list) -> None:
    kernel = KERNELS.get(spec.kernel)
    known = list(AT_AXES) + list(spec.params) + (list(kernel.params) if kernel else [])
    known = list(dict.fromkeys(known))
    for name, want in at.items():
        if name not in known:
            probs.append((loc + (name,), f"unknown point field {name!r} {known_names(known, name)}"))
        elif name == "variant" and variants is not None and want not in variants:
            probs.append((loc + (name,), f"no variant named {want!r} "
                                         f"{known_names(variants, str(want))}"))
