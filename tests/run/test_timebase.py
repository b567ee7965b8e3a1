"""The coordinator's clock (timebase.py) and the wall clock's steps (run/clock_steps.py), with
a test double standing in for the wall clock where the coordinator reads it."""
from __future__ import annotations

import time

import pytest

from manybench import timebase
from manybench.engines.base import Node, to_node
from manybench.engines.local import LocalEngine
from manybench.run import clock_steps
from manybench.run.clock_steps import STEP_MIN_NS

HOUR = 3600 * 10**9


@pytest.fixture
def wall(monkeypatch):
    """The wall clock, stepped by hand: wall[0] ns added to it."""
    step = [0]
    monkeypatch.setattr(timebase, "_wall", lambda: time.time_ns() + step[0])
    timebase.anchor()
    yield step
    timebase.anchor()


def test_the_coordinators_clock_keeps_to_the_monotonic_clock_across_a_step(wall):
    before = timebase.now_ns()
    wall[0] = -HOUR
    after = timebase.now_ns()
    assert 0 <= after - before < 10**9           # not an hour back
    assert timebase.wall_offset_ns() == pytest.approx(-HOUR, abs=1e6)
    assert timebase.stepped_ns() == 0            # not seen yet


def test_a_step_is_seen_once_with_its_size_and_a_change_within_the_bound_is_none(wall):
    assert clock_steps.step() == 0
    wall[0] = -HOUR
    assert clock_steps.step() == pytest.approx(-HOUR, abs=1e6)
    assert timebase.stepped_ns() == pytest.approx(-HOUR, abs=1e6)
    assert clock_steps.step() == 0               # seen once
    wall[0] += STEP_MIN_NS // 2
    assert clock_steps.step() == 0               # within the bound: no step
    wall[0] += 10**9
    assert clock_steps.step(bound_ns=2 * 10**9) == 0    # a node's clock bound is wider
    assert clock_steps.step() == pytest.approx(10**9 + STEP_MIN_NS // 2, abs=1e6)
    timebase.anchor()                            # a new run: nothing seen
    assert timebase.stepped_ns() == 0


def test_the_local_node_follows_a_step_seen_so_t0_and_stamps_are_its_wall_clocks(wall):
    """Slots stamp with this machine's wall clock: once a step is seen, the node's offset is
    the step, so T0 reaches them as their clock reads it and their stamps come back on the
    coordinator's clock."""
    engine = LocalEngine()
    engine.nodes = [Node("here", 1, ())]
    engine.sync_clocks()
    assert engine.nodes[0].offset_ns == 0
    wall[0] = HOUR
    clock_steps.step()
    engine.sync_clocks()
    node = engine.nodes[0]
    assert node.offset_ns == pytest.approx(HOUR, abs=1e6)
    t0 = timebase.now_ns()
    assert to_node(t0, node) == pytest.approx(timebase._wall(), abs=10**9)
