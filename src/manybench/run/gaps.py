"""Gaps are data: a node that kept the coordinator waiting (its agent stopped, its serve loop
stalled by a connection, its network slow) is a stored warning naming it and the seconds lost.

What the coordinator waits on a node for in a phase, beyond what the schedule itself needs,
is two things (engines time them: Engine.waits):
  prepare  its prepare and connect rounds: the seconds from the request to its answer
           (the kernel's own prepare is in them: files laid out, a launcher started)
  go       from when the node's results could have come (T0 plus its longest slot's own
           elapsed time, or when the coordinator began waiting, if later) until they came:
           a go that reached the node late, slots that started late, results sent late
A slot's own work is never in them (its elapsed time is measured on its monotonic clock).

Each is held against what is usual for it: the node's go against its own recent phases and
the other nodes' in this phase; its prepare (the kernel's work) against the other nodes' in
this phase, and, where the kernel's prepare touches nothing (its trait light_prepare: the
same work every phase), against the earlier phases of the same point too (neither: not
judged). A prepare that lays out or clears files does different work from one repetition to
the next (meta.mkdir's first removes nothing, its next 20,000 directories: 45 s here), so
only its peers in the phase, doing the same work, tell a stall from the work. Where there are both
references the larger is taken: a node is flagged only when slow against each, so neither a
node always slower than its peers nor a moment when every node waits (the coordinator's own
doing) is a node's gap. A node is flagged when it kept the coordinator waiting MARGIN_S
longer than usual, and FACTOR x usual longer (a prepare of minutes varies by seconds).

MARGIN_S is measured (benchmarks/bench_gaps.py; docs/definitions.md, "gap"): on a 2-cpu VM
under other work (load average 7 to 13), null and `true` command phases on the local engine
and on two Dask namespace nodes, idle and with two busy loops on its cpus, never waited over
0.25 s longer than usual (the most: commands forked on the loaded local engine); a node
stopped for 1 s waited 1.00 s longer. 0.5 s is their geometric middle: room of 2 either way.
"""
from __future__ import annotations

from collections import deque
from typing import Iterable, Sequence

from ..results.contract import WarningKind
from ..analysis.stats import median, median_without
from ..kernels import kernel
from ..model import Phase
from .outcome import PhaseWarning

MARGIN_S = 0.5        # this much longer than usual is a gap ...
FACTOR = 1.0          # ... and this many times the usual longer
HISTORY = 50          # phases a usual is the median of
# a go wait under this is taken as it bounds from above, without the slots' elapsed times (a
# max over every slot: a millisecond a phase at 1,000 nodes x 64 slots, for null phases of a
# few): the usual it joins is that much high at most
EXACT_S = 0.01


def go_waits(t0: int, polled: int, elapsed: dict[str, Sequence[int]],
             waited: dict[str, float], answered: dict[str, int],
             exact_s: float = EXACT_S) -> dict[str, float]:
    """Each answering node's go wait (s). t0: the phase's T0, polled: when the coordinator
    began waiting for results (its clock); elapsed: per node, its slots' elapsed ns; waited,
    answered: Engine.waits(). A wait under exact_s that cannot make a gap with its prepare
    is taken as bounded, without its slots' elapsed times."""
    floor = max(t0, polled)
    go = {}
    for node, at in answered.items():
        wait = max(0, at - floor) / 1e9    # at least its go wait: all most phases need
        if wait > exact_s or wait + waited.get(node, 0.0) > MARGIN_S:
            wait = max(0, at - max(t0 + max(elapsed.get(node) or (0,)), polled)) / 1e9
        go[node] = wait
    return go


class Gaps:
    """The nodes' waits so far, and the phases where one kept the coordinator waiting."""

    def __init__(self) -> None:
        self.go: dict[str, deque[float]] = {}          # node -> its recent go waits
        self.prepare: dict[str, deque[float]] = {}     # point -> its phases' median prepare

    def judge(self, phase: Phase, t0: int, polled: int, elapsed: dict[str, Sequence[int]],
              waited: dict[str, float], answered: dict[str, int]) -> list[PhaseWarning]:
        """This phase's gap warning (one, naming every node that kept the coordinator
        waiting), or none; its waits join the history either way (arguments: go_waits)."""
        go = go_waits(t0, polled, elapsed, waited, answered)
        suspects = [n for n, w in go.items() if w + waited.get(n, 0.0) > MARGIN_S]
        lost = {n: (over, usual) for n, (over, usual) in
                self.overs(phase, suspects, go, waited).items()
                if over > max(MARGIN_S, FACTOR * usual)} if suspects else {}
        for node, wait in go.items():
            self.go.setdefault(node, deque(maxlen=HISTORY)).append(wait)
        if waited:
            self.prepare.setdefault(phase.point, deque(maxlen=HISTORY)).append(
                median(waited.values()))
        return [gap_warning(phase, lost)] if lost else []

    def overs(self, phase: Phase, nodes: list[str], go: dict[str, float],
              waited: dict[str, float]) -> dict[str, tuple[float, float]]:
        """node -> (seconds it kept the coordinator waiting longer than usual, usual) of
        these nodes of the phase, against the history so far."""
        gos, preps = sorted(go.values()), sorted(waited.values())
        point = self.prepare.get(phase.point) if kernel(phase.kernel).light_prepare else None
        out = {}
        for node in nodes:
            usual_go = _largest(_median(self.go.get(node)), _peers(gos, go[node]))
            prep = waited.get(node, 0.0)
            usual_prep = _largest(_median(point), _peers(preps, prep) if prep else None)
            over = go[node] - (usual_go or 0.0)
            if usual_prep is not None:       # a prepare with nothing to hold it against: no
                over += prep - usual_prep
            out[node] = (over, (usual_go or 0.0) + (usual_prep or 0.0))
        return out


def _peers(values: list[float], own: float) -> float | None:
    """The other nodes' median (None: no other node)."""
    return median_without(values, own) if len(values) > 1 else None


def _median(xs: Iterable[float] | None) -> float | None:
    return median(xs) if xs else None


def _largest(*refs: float | None) -> float | None:
    got = [r for r in refs if r is not None]
    return max(got) if got else None


def gap_warning(phase: Phase, lost: dict[str, tuple[float, float]]) -> PhaseWarning:
    """One warning for the phase: each node and the seconds it cost."""
    where = f"phase {phase.index} (task {phase.task.name})"
    why = ("answers came late: a stopped or stalled agent, a slow or stalled connection? The "
           "phase's figures are its slots' own and are kept")
    if len(lost) == 1:
        (node, (over, usual)), = lost.items()
        return PhaseWarning(WarningKind.GAP, f"{where}: the coordinator waited {over:.2f} s longer than usual on "
                    f"node {node} (usual {usual:.3f} s): its {why}", node=node,
                    task=phase.task.name, phase=phase.index)
    named = ", ".join(f"{n} ({over:.2f} s)" for n, (over, _) in
                      sorted(lost.items(), key=lambda kv: -kv[1][0]))
    return PhaseWarning(WarningKind.GAP, f"{where}: the coordinator waited longer than usual on nodes {named}: "
                f"their {why}", task=phase.task.name, phase=phase.index)
