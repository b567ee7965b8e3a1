"""The report's figures, one module per figure (matplotlib, Agg backend).

Each module has TITLE and plot(TaskData) -> a matplotlib Figure, or series.Drawn (the
figure and the series of a point figure it drew: the task's Values, as its table shows them),
or None when the task has nothing to draw (no samples, no telemetry, no latency). `figures`
makes every figure of a run; html.py inlines them as SVG with their series, `write_plots`
saves them as PNG and SVG.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from . import (elapsed, gantt, latency, per_slot, scaling, sizes, telemetry, throughput,
               timeline)
from .data import TaskData, tasks
from .series import Drawn, Series
from .style import save, svg

MODULES = [scaling, per_slot, timeline, gantt, elapsed, throughput, latency, telemetry, sizes]


@dataclass
class Plot:
    task: str
    name: str          # the module's name: scaling, gantt, ...
    title: str
    figure: Any        # matplotlib Figure
    series: list[Series] = field(default_factory=list)   # the point figures it drew

    def svg(self) -> str:
        return svg(self.figure)


def task_plots(d: TaskData) -> list[Plot]:
    out = []
    for m in MODULES:
        fig = m.plot(d)
        if fig is not None:
            drawn = fig if isinstance(fig, Drawn) else Drawn(fig, [])
            out.append(Plot(d.task, m.__name__.rsplit(".", 1)[1], m.TITLE, drawn.figure,
                            drawn.series))
    return out


def figures(store: Any, run_id: str | None = None, data: tuple = ()) -> dict[str, list[Plot]]:
    """Per task (plan order), its figures; the latest run unless `run_id`. `data`:
    (summaries, records, phases, effs, values) already read (RunView.data), else read here."""
    run = store.run(run_id) if run_id else store.runs()[-1]
    return {d.task: task_plots(d) for d in tasks(store, run, data)}


def _stem(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "task"


def write_plots(store: Any, directory: str | os.PathLike, run_id: str | None = None,
                data: tuple = ()) -> list[str]:
    """Every figure of the run as DIR/<task>-<figure>.png and .svg; the paths written."""
    os.makedirs(directory, exist_ok=True)
    written: list[str] = []
    for task, plots in figures(store, run_id, data).items():
        for p in plots:
            written += save(p.figure, os.path.join(directory, f"{_stem(task)}-{p.name}"))
    return written
