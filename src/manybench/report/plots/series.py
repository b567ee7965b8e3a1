"""What a figure draws, as data: a task's Values (analysis/values.py, the numbers its tables
and `report --json` show) of one figure and scope, in the unit its table's column writes
them (colunits.figure_units), one curve per variant and swept parameters against workers.
A plot module draws these and returns them with its drawing (Drawn); html.py keeps them
beside the drawing (`data-values`), so the page says what its figures show and a reader (a
test) can set them against the table."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...analysis.values import Value
from ..colunits import figure_units
from ..formats import param_formatter
from ..headline import scope_values
from .data import TaskData


@dataclass
class Series:
    figure: str                 # the declared figure's name (kernels/figures.py)
    scope: str                  # its scope label, as the table heads it ("aggregate")
    unit: str                   # the unit drawn: the table's column's
    label: str                  # the curve: variant and swept parameters ("" for one)
    factor: float = 1.0         # a Value's number (its base unit) / factor = the number drawn
    points: list[str] = field(default_factory=list)       # point keys, by workers
    workers: list[int] = field(default_factory=list)
    median: list[float] = field(default_factory=list)
    low: list[float] = field(default_factory=list)        # min, or the median for a value
    high: list[float] = field(default_factory=list)       # max
    p99: list[float | None] = field(default_factory=list)
    quantiles: dict[str, list[float | None]] = field(default_factory=dict)


@dataclass
class Drawn:
    """A plot module's figure and the series it drew."""
    figure: Any                 # matplotlib Figure
    series: list[Series]


def axis_label(v: Value, scope: str, unit: str) -> str:
    """How a plot names a figure: its label, scope and unit, as the table heads it."""
    return f"{v.label.replace(chr(10), ' ')} {scope}" + (f" ({unit})" if unit else "")


def _swept(d: TaskData) -> list[str]:
    keys = list(dict.fromkeys(k for p in d.points for k in p.params))
    return [k for k in keys
            if len({json.dumps(p.params.get(k), sort_keys=True, default=str)
                    for p in d.points}) > 1]


def curve_of(d: TaskData) -> dict[str, str]:
    """Point key -> its curve's label: its variant and the values of the swept parameters
    other than workers, written as the table writes them."""
    keys = _swept(d)
    fmts = {k: param_formatter(d.kernel, k) for k in keys}
    return {p.point: " ".join([p.variant] * bool(p.variant) + [
        f"{k}={fmts[k](p.params[k])}" for k in keys if k in p.params]) for p in d.points}


def series(d: TaskData, name: str, scope: str | None = None) -> list[Series]:
    """The curves of one figure of the task (its first scope unless `scope`), in its
    column's unit; [] when no point has it."""
    by_scope = scope_values(d.points, d.values, name)
    if not by_scope:
        return []
    scope = scope or next(iter(by_scope))
    if scope not in by_scope:
        return []
    unit, div = figure_units(by_scope)[scope]
    labels = curve_of(d)
    out: dict[str, Series] = {}
    pts = sorted(d.points, key=lambda p: p.workers)
    for p in pts:
        v = next((v for v in d.values.get(p.point, {}).get(name, []) if v.scope == scope), None)
        if v is None:
            continue
        s = out.setdefault(labels[p.point], Series(name, scope, unit, labels[p.point], div))
        s.points.append(p.point)
        s.workers.append(p.workers)
        s.median.append(v.median / div)
        s.low.append(v.min / div)
        s.high.append(v.max / div)
        s.p99.append(None if v.p99 is None else v.p99 / div)
        for q, x in (v.quantiles or {}).items():
            s.quantiles.setdefault(q, [None] * (len(s.points) - 1)).append(x / div)
        for q, xs in s.quantiles.items():
            if len(xs) < len(s.points):
                xs.append(None)
    return list(out.values())


def first_value(d: TaskData, s: Series) -> Value:
    return next(v for v in d.values[s.points[0]][s.figure] if v.scope == s.scope)
