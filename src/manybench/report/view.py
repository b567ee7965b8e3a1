"""What a report shows, as plain strings: the view model every other report module fills
(tables.py, headline.py, comparison.py, build.py) and terminal.py and html.py lay out.

A leaf: it imports no other module of report/, so none of them import each other through it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..analysis.points import PointSummary
from ..kernels import figures as F

MAX_ERRORS = 5  # error lines shown per table; the rest are counted
def _defined(f: F.Figure) -> str:
    """A figure's definition in a line: its formula's first clause (kernels/figures.py)."""
    name = f"{F.SCOPE_LABEL[F.PHASE]} {f.title}" if f.sums else f.title
    return f"{name} = {f.formula.split(';')[0]}"


# the legend below a report: the computed figures' formulas and the shares, as declared
LEGEND = ("; ".join([_defined(f) for f in (F.LATENESS, F.SKEW, F.SYNC_OVERHEAD, F.CYCLE,
                                           F.BANDWIDTH)]
                    + [f"{F.SCOPE_LABEL[s]} = {what.split(':')[0]}" for s, what in F.SHARES])
          + "; a parallel task's job's own figure is never divided over its ranks; stonewall "
          "(estimated) = the window in which every slot ran (bytes in it estimated "
          "proportionally). Percentiles and medians are nearest-rank over records (lateness, "
          "per-slot time) or phases (skew, sync overhead, cycle, bandwidth).")
GROUP_NOTE = ("a [[concurrent]] group: its tasks ran in the same phases on their own slots "
              "from one T0; these are the whole phase's figures (every slot's bytes and ops "
              "over the phase's window); each task's own are in its table")


@dataclass
class Table:
    title: str
    columns: list[str]      # a "\n" marks where a terminal header may break
    rows: list[list[str]]
    keys: int = 0           # leading columns that identify a row (repeated when split)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    # compact tables (report/headline.py): columns to drop, least important first, when the
    # terminal is narrow (else a wide table is split); each column's figure name
    drop: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    short_rows: list[list[str]] = field(default_factory=list)   # medians only, for narrow
    hints: list[str] = field(default_factory=list)     # analysis/hints.py, with evidence
    task: str = ""          # the task a table is about ("" for comparisons, references)
    wrap: bool = False      # never split: a narrow terminal wraps its cells' words instead
    # a task's tables: each row's point key, and per column the (figure, scope) whose
    # median its cells show (None: not a figure): what tells views apart when they agree
    points: list[str] = field(default_factory=list)
    figures: list[tuple[str, str] | None] = field(default_factory=list)


@dataclass
class RunView:
    title: str
    header: list[tuple[str, str]]
    notes: list[str]
    tables: list[Table]
    warnings: list[str] = field(default_factory=list)
    legend: str = LEGEND
    hints: list[str] = field(default_factory=list)     # findings not tied to one task
    run_id: str = ""
    full: dict[str, Table] = field(default_factory=dict)   # per task, every figure (html)
    data: tuple = ()   # (summaries, records, phases, effs, values): what html's figures draw
    summary: Any = None    # the run's numbers by machine (report/summary.py), when built


def error_lines(points: list[PointSummary]) -> list[str]:
    """The first failed records of a table's points, one line each, and how many more."""
    failed = [r for s in points for r in s.failed]
    lines = []
    for r in failed[:MAX_ERRORS]:
        msg = (r.error or "").strip().splitlines()
        lines.append(f"phase {r.phase} {r.node}/slot {r.slot}: {r.status}"
                     + (f": {msg[0][:200]}" if msg else ""))
    if len(failed) > MAX_ERRORS:
        lines.append(f"... and {len(failed) - MAX_ERRORS} more failed records")
    return lines
