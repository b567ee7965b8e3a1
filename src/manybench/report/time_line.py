"""The report's "time outside the windows" line (analysis/time_spent.py): a header row of
its own, the same text in the terminal, the HTML page and `report --json`."""
from __future__ import annotations

from ..analysis.time_spent import TimeSpent
from ..results.contract import RunInfo, StoredPhase
from .formats import secs

LABEL = "time"      # short: the header's labels are one column


def time_text(t: TimeSpent) -> str:
    """One line: what of the wall time was outside the timed windows, and on what."""
    text = (f"{secs(t.outside_s)} of the run's {secs(t.wall_s)}"
            + (" since its resume" if t.resumed else "")
            + f" outside the timed windows: prepare {secs(t.prepare_s)}, cleanup "
            f"{secs(t.cleanup_s)}, " + (f"the run's end {secs(t.end_s)} (nodes closed, "
                                        "scratch removed), " if t.end_s is not None else "")
            + f"the coordinator's own {secs(t.own_s)}; timed windows {secs(t.windows_s)}")
    if t.slowest is not None:
        s = t.slowest
        text += (f"; slowest prepare: phase {s.phase} (task {s.task}) on node {s.node}, "
                 f"{secs(s.seconds)}")
    if t.start_s is not None:
        text += f"; starting the nodes before it: {secs(t.start_s)}"
    return text


def time_rows(run: RunInfo, phases: list[StoredPhase]) -> list[tuple[str, str]]:
    """The header row, or none (a run not ended, or stored before phases kept their times)."""
    t = TimeSpent.of(run, phases)
    return [] if t is None else [(LABEL, time_text(t))]
