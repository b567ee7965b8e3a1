"""Where a phase's time went, on the coordinator's clock (docs/definitions.md, "time outside
the windows"): what the report adds up against the run's wall time.

  prepare  what the coordinator waited on its slowest node's prepare and connect rounds
           (Engine.waits: the engines time them for the gap check, run/gaps.py; timed once);
           0 with no node named when the prepare travelled with the go (light_prepare)
  window   last end - first start of the phase's ok records (analysis/phase_figures.py)
  cleanup  from the window's end (no ok record: T0) until the last node's results were in:
           the kernels' cleanup after the window (node/slot.py: before a slot replies), the
           results' way back; time the coordinator spent elsewhere before it began waiting
           (committing the phase before) is not counted
What is left of the run's wall time (leads, commits, setups, starting and ending) is the
coordinator's own.
"""
from __future__ import annotations

from typing import Sequence

from ..analysis.phase_figures import ok_window
from ..results.contract import PhaseTimes


def phase_times(starts: Sequence[int], ends: Sequence[int], statuses: Sequence[str],
                t0: int, polled: int, waited: dict[str, float],
                answered: dict[str, int]) -> PhaseTimes:
    """A phase's PhaseTimes. t0: its T0; polled: when the coordinator began waiting for its
    results; waited, answered: Engine.waits() (a node the engine did not time is absent)."""
    slowest = max(waited.items(), key=lambda kv: kv[1]) if waited else (None, 0.0)
    window = ok_window(starts, ends, statuses)
    cleanup = None
    if answered:
        since = max(window[1] if window else t0, polled)
        cleanup = max(0, max(answered.values()) - since) / 1e9
    return PhaseTimes(prepare_s=slowest[1], prepare_node=slowest[0],
                      window_s=None if window is None else (window[1] - window[0]) / 1e9,
                      cleanup_s=cleanup)
