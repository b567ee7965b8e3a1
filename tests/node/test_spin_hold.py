"""A spin before T0 buys a phase's skew nothing while another of its slots on the node sleeps
(the phase starts when its last slot wakes): a slot on idle cpus of its own then sleeps too,
and its record says why (node/spin_hold.py); the spin comes back with the sleeper's."""
from __future__ import annotations

import os
import time

import pytest

from manybench.engines.base import wire_phase
from manybench.kernels import Result
from manybench.kernels.figures import CPU_BUSY, SPIN_HELD, SPUN
from manybench.model import Phase, TaskSpec
from manybench.node import protocol as P
from manybench.node import slot as slot_mod
from manybench.node.agent import Agent
from manybench.node.spin_choice import Reading, SpinChoice

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cpus")


class Evidence:
    """/proc/stat as a slot reads it: other work takes all of `busy_cpu` while `flag`
    exists, nothing of any other cpu. Each forked slot reads its own copy."""

    def __init__(self, busy_cpu: int, flag: str) -> None:
        self.busy_cpu, self.flag = busy_cpu, flag
        self.busy = 0
        self.last = time.monotonic_ns()

    def read(self, cpus: tuple[int, ...]) -> Reading:
        t = time.monotonic_ns()
        if self.busy_cpu in cpus and os.path.exists(self.flag):
            self.busy += t - self.last
        self.last = t
        return Reading(t, self.busy // 10_000_000, t // 10_000_000, 0.0)


def _phase(index: int) -> P.WirePhase:
    return wire_phase(Phase(index, TaskSpec("t", "null", {}), "null", "", 0, 2, "spread",
                            "core", {}, "p"))


def _one(agent: Agent, index: int, cpus: list[int]) -> dict[int, Result]:
    """A light null phase, each slot pinned to a cpu of its own with the right to spin."""
    work = [P.Assignment(P.SlotPlace(i, c, (c,), True), i) for i, c in enumerate(cpus)]
    agent.go(time.time_ns() + 5_000_000, P.Prepare(_phase(index), work))
    end = time.monotonic() + 30
    while not agent.poll(0.2):
        assert time.monotonic() < end, "the slots did not answer"
    got = agent.results()
    assert sorted(got) == [0, 1] and all(r.status == "ok" for r in got.values()), got
    return got


def _until(agent, cpus, phases, done) -> list[dict[int, Result]]:
    """Phases until done(last phase's results): an event, bounded only so a broken rule ends."""
    limit = time.monotonic() + 60
    while time.monotonic() < limit:
        phases.append(_one(agent, len(phases), cpus))
        if done(phases[-1]):
            return phases
    raise AssertionError(f"not reached in {len(phases)} phases: {phases[-1]}")


def test_a_slot_does_not_spin_while_another_of_its_phase_sleeps(tmp_path, monkeypatch):
    cpus = sorted(os.sched_getaffinity(0))[:2]
    flag = tmp_path / "busy"
    flag.touch()
    evidence = Evidence(cpus[0], str(flag))
    monkeypatch.setattr(slot_mod, "SpinChoice", lambda: SpinChoice(evidence.read))
    agent = Agent("n", "run-x", 2, str(tmp_path))
    agent.start()
    try:
        phases: list[dict[int, Result]] = []
        # slot 0's cpu is busy: once its first window ends it sleeps ...
        _until(agent, cpus, phases, lambda got: got[0].metrics[SPUN.name] == 0)
        first = len(phases)
        _until(agent, cpus, phases, lambda got: len(phases) >= first + 10)
        sleeping = phases[first - 1:]
        assert all(got[0].metrics[CPU_BUSY.name] >= 0.9 for got in sleeping)
        # ... and from the next phase on slot 1, on its idle cpu, sleeps too and says why
        held = [got[1] for got in sleeping[1:]]
        assert [r.metrics[SPUN.name] for r in held] == [0] * len(held)
        assert all(r.metrics[SPIN_HELD.name] >= 0.9 and CPU_BUSY.name not in r.metrics
                   for r in held)
        told = [w for got in phases for r in got.values() for w in r.extra.get("warnings", [])]
        assert [k for k, _ in told] == ["busy-cpu", "busy-cpu"]     # each slot once
        assert "slot 0" in told[1][1] and f"cpus {cpus[1]}" in told[1][1]
        # the other work goes: slot 0 spins again after its window, and slot 1 with it
        flag.unlink()
        _until(agent, cpus, phases, lambda got: got[0].metrics[SPUN.name] == 1)
        _until(agent, cpus, phases, lambda got: all(r.metrics[SPUN.name] == 1
                                                    for r in got.values()))
        assert SPIN_HELD.name not in phases[-1][1].metrics
    finally:
        agent.close()


def test_a_held_slot_late_for_its_sleep_is_late_for_that_not_a_stall():
    from builders import T, rec
    from manybench.analysis import late
    t0 = T
    slots = [rec(0, s, t0, t0 + st, t0 + st + 1_000, workers=2) for s, st in
             enumerate([1_000, 500_000])]
    slots[0].metrics[CPU_BUSY.name] = 0.9          # on time, asleep for its busy cpu
    slots[1].metrics[SPIN_HELD.name] = 0.9         # held by it, woke 0.5 ms late
    got = late.count([slots])
    assert dict(got.by_cause) == {"held": 1}
    assert "slept to T0 with it" in late.verdict(got, 0.01)
