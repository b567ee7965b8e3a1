"""What a report shows, as plain strings: the view model every other report module fills
(tables.py, headline.py, comparison.py, build.py) and terminal.py and html.py lay out.

A leaf: it imports no other module of report/, so none of them import each other through it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..analysis.points import PointSummary

MAX_ERRORS = 5  # error lines shown per table; the rest are counted
LEGEND = ("lateness = start - T0 per slot; skew = max(start) - min(start) per phase; "
          "sync overhead = last end - first start of a null phase; phase cycle = last end - "
          "when the coordinator sent the go; aggregate bandwidth = sum(bytes) / (last end - "
          "first start); per slot = aggregate / workers; per job = aggregate / jobs; stonewall (estimated) = the window in "
          "which every slot ran (bytes in it estimated proportionally). Percentiles and "
          "medians are nearest-rank over records (lateness, per-slot time) or phases (skew, "
          "sync overhead, cycle, bandwidth).")
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
    data: tuple = ()   # (summaries, records, phases, effs): what html's figures draw from
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
