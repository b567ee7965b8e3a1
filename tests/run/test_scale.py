"""What makes a phase cheaper must not change what is measured or stored (issue #11, scale):
a light phase's prepare travelling with its go, a phase committed while the next waits for
its T0, a Dask worker's agent process started ahead of the run."""
from __future__ import annotations

import asyncio
import os
import sqlite3
import time

import pytest

from manybench.security import auth
from fake_engine import FakeEngine

from manybench.engines.base import wire_phase
from manybench.kernels import Result
from manybench.model import Phase, TaskSpec
from manybench.node import protocol as P
from manybench.node.agent import Agent
from manybench.plan import parse_plan
from manybench.plan.expand import expand
from manybench.results.store import Store
from manybench.run.coordinator import Coordinator


def _null(index: int = 0, workers: int = 2) -> P.WirePhase:
    return wire_phase(Phase(index, TaskSpec("t", "null", {}), "null", "", 0, workers, "spread",
                            "none", {}, "p"))


def _work(affinities: list[tuple[int, ...]]) -> list[P.Assignment]:
    return [P.Assignment(P.SlotPlace(i, -1, aff, False), i) for i, aff in enumerate(affinities)]


def _finish(agent: Agent) -> dict[int, Result]:
    end = time.monotonic() + 30
    while not agent.poll(0.2):
        assert time.monotonic() < end, "the slots did not answer"
    return agent.results()


def test_light_prepare_travels_with_go_and_leaves_nothing_behind(tmp_path):
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    agent = Agent("n", "run-x", 2, str(tmp_path))
    agent.start()
    try:
        t0 = time.time_ns() + 20_000_000
        agent.go(t0, P.Prepare(_null(), _work([cpus, cpus])))    # no prepare round first
        got = _finish(agent)
        assert sorted(got) == [0, 1] and all(r.status == "ok" for r in got.values())
        assert all(0 < r.armed_ns <= r.start_ns and r.start_ns >= t0 for r in got.values())
        # a slot whose prepare fails answers once (its error), not twice: the next phase,
        # prepared the usual way, gets its own results and not a stale reply
        agent.go(time.time_ns() + 20_000_000,
                 P.Prepare(_null(1), _work([cpus, (10_000,)])))   # no such cpu
        got = _finish(agent)
        assert got[0].status == "ok"
        assert got[1].status == "error" and "10000" in got[1].error
        agent.prepare(P.Prepare(_null(2), _work([cpus, cpus])))
        t0 = time.time_ns() + 20_000_000
        agent.go(t0)
        got = _finish(agent)
        assert all(r.status == "ok" and r.start_ns >= t0 for r in got.values())
    finally:
        agent.close()


class _OneNode(FakeEngine):
    """This machine as one node; every poll checks what the store holds by then."""

    def __init__(self, outdir: str, interrupt_at: int | None = None) -> None:
        super().__init__(outdir, interrupt_at)
        self.seen: list[tuple[int, int]] = []     # (phase polled, phases stored then)

    def poll(self, timeout):
        db = sqlite3.connect(os.path.join(self.outdir, "results.db"))
        stored = db.execute("SELECT COUNT(*) FROM phases").fetchone()[0]
        db.close()
        self.seen.append((self.index, stored))
        return super().poll(timeout)


def _plan(repeat: int):
    plan = parse_plan(f'repeat = {repeat}\n[placement]\nworkers = 2\n[[task]]\nname = "s"\n'
                      'kernel = "null"\n', "p.toml", ())
    return plan, expand(plan)


@pytest.mark.parametrize("lead_ms", [1, 50])   # short: committed before; long: during the lead
def test_each_phase_is_committed_before_the_next_is_collected(tmp_path, lead_ms):
    plan, phases = _plan(5)
    engine = _OneNode(str(tmp_path))
    c = Coordinator(plan, phases, str(tmp_path), engine, [], progress=False)
    c.scheduler.min_lead_ns = lead_ms * 1_000_000
    out = c.run()
    assert out.status == "finished"
    # while phase i runs, every phase before it is already in results.db
    assert engine.seen == [(i, i) for i in range(5)]
    db = sqlite3.connect(tmp_path / "results.db")
    assert db.execute("SELECT COUNT(*) FROM phases").fetchone()[0] == 5
    assert db.execute("SELECT COUNT(*) FROM records").fetchone()[0] == 10


def test_an_interrupt_keeps_the_finished_phase_not_yet_committed(tmp_path):
    plan, phases = _plan(5)
    engine = _OneNode(str(tmp_path), interrupt_at=3)
    c = Coordinator(plan, phases, str(tmp_path), engine, [], progress=False)
    c.scheduler.min_lead_ns = 50_000_000     # phase 2 is committed during phase 3's lead
    out = c.run()
    assert out.status == "interrupted"
    db = sqlite3.connect(tmp_path / "results.db")
    got = dict(db.execute("SELECT idx, status FROM phases").fetchall())
    assert got == {0: "ok", 1: "ok", 2: "ok", 3: "interrupted"}


def test_an_interrupt_during_a_commit_keeps_the_phase_being_committed(tmp_path, monkeypatch):
    """Ctrl-C inside phase 2's transaction (rolled back) while phase 3 waits for its T0: the
    interrupt's own commit stores phase 2, then what phase 3 measured."""
    plan, phases = _plan(5)
    real, hit = Store.write_phase, []

    def write_phase(self, run_id, phase, *a, **kw):
        if phase.index == 2 and not hit:
            hit.append(phase.index)
            raise KeyboardInterrupt      # as _write's ROLLBACK leaves it: nothing written
        return real(self, run_id, phase, *a, **kw)

    monkeypatch.setattr(Store, "write_phase", write_phase)
    c = Coordinator(plan, phases, str(tmp_path), _OneNode(str(tmp_path)), [], progress=False)
    c.scheduler.min_lead_ns = 50_000_000     # phase 2 is committed during phase 3's lead
    out = c.run()
    assert out.status == "interrupted" and hit == [2]
    db = sqlite3.connect(tmp_path / "results.db")
    got = dict(db.execute("SELECT idx, status FROM phases").fetchall())
    assert got == {0: "ok", 1: "ok", 2: "ok", 3: "interrupted"}
    assert db.execute("SELECT COUNT(*) FROM records WHERE phase = 2").fetchone()[0] == 2


@pytest.mark.e2e
def test_dask_worker_keeps_a_fresh_agent_ready_for_the_next_run(tmp_path):
    pytest.importorskip("distributed")
    from manybench.node.dask_plugin import AgentPlugin

    class Worker:
        handlers: dict = {}
        ip = "127.0.0.1"
        name = "n1"

    plugin = AgentPlugin(slots=1, node="n1")
    plugin.setup(Worker())
    try:
        spare = plugin.spare[0]
        assert spare.poll() is None                     # started with the worker, idle

        key = auth.derive("run-y's secret", "call")

        async def call(req: object) -> object:     # signed with the run's key, as a run's are
            kind, data = type(req).__name__, P.encode(req)
            return P.decode(await plugin.call(kind, data, auth.tag(key, kind.encode(), data)),
                            "n1")

        async def run() -> list:
            got = [await call(P.Start("run-y", "n1", 1, str(tmp_path),
                                      secret="run-y's secret"))]
            got.append(plugin.proc.pid)
            assert plugin.spare is None                  # none started during the run
            got.append(await call(P.Close()))
            return got
        started, pid, closed = asyncio.run(run())
        assert isinstance(started, P.Started) and closed is None
        assert pid == spare.pid                          # the run took the agent started ahead
        assert spare.poll() is not None                  # and it ended with the run
        # the next run's agent was started once the run had ended, not while it measured
        assert plugin.spare[0].pid != spare.pid and plugin.spare[0].poll() is None
    finally:
        plugin.teardown(Worker())
    assert plugin.spare is None
