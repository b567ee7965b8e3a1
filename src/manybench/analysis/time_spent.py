"""Where a run's time went (docs/definitions.md, "time outside the windows"): its wall time
against the sum of its phases' timed windows, prepares and cleanups (run/times.py, stored per
phase from results schema 8) and its end (nodes closed, scratch removed: notes.end_s), the
rest being the coordinator's own (leads, commits, setup and teardown commands, the end
checks); and the slowest prepare, with its phase and node.

A resumed run is told from its resume on (the time between the two coordinators is no one's).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..results.contract import RunInfo, StoredPhase


@dataclass(frozen=True)
class SlowestPrepare:
    phase: int          # its index, as the report numbers phases
    task: str
    node: str
    seconds: float


@dataclass(frozen=True)
class TimeSpent:
    wall_s: float               # runs.ended_ns - started_ns (from the resume, if resumed)
    windows_s: float            # sum of the phases' timed windows
    prepare_s: float            # sum of the phases' prepares (slowest node each)
    cleanup_s: float            # sum of the phases' waits after their windows
    end_s: float | None         # ending the nodes (None: not known, the run's own is it)
    own_s: float                # the rest: the coordinator's own
    phases: int                 # phases counted (those with stored times)
    start_s: float | None = None    # starting the nodes, before the wall time began
    resumed: bool = False
    slowest: SlowestPrepare | None = None

    @property
    def outside_s(self) -> float:
        """The wall time outside the timed windows."""
        return self.wall_s - self.windows_s

    @classmethod
    def of(cls, run: RunInfo, phases: list[StoredPhase]) -> TimeSpent | None:
        """None for a run not ended, or whose phases have no stored times (written before
        results schema 8)."""
        since = run.notes.resumed_ns or run.started_ns
        timed = [p for p in phases if p.t0_ns is not None and p.t0_ns >= since
                 and (p.times.window_s is not None or p.times.prepare_s is not None)]
        if run.ended_ns is None or not timed:
            return None
        total = lambda name: sum(getattr(p.times, name) or 0.0 for p in timed)  # noqa: E731
        wall = (run.ended_ns - since) / 1e9
        windows, prepare, cleanup = total("window_s"), total("prepare_s"), total("cleanup_s")
        prepared = [p for p in timed if p.times.prepare_node is not None]
        slow = max(prepared, key=lambda p: p.times.prepare_s or 0.0, default=None)
        end = run.notes.end_s
        return cls(wall, windows, prepare, cleanup, end,
                   max(0.0, wall - windows - prepare - cleanup - (end or 0.0)), len(timed),
                   run.notes.start_s, bool(run.notes.resumed_ns),
                   None if slow is None else SlowestPrepare(
                       slow.index, slow.task, slow.times.prepare_node,
                       slow.times.prepare_s or 0.0))
