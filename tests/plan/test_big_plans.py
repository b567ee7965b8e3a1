"""Big plans start at once: phases are counted without being built and produced as the run
goes (plan/expand.py's Phases), so a 200,000-phase plan runs its first phase after building a
handful, and the phases it has run do not pile up in memory."""
from __future__ import annotations

import sqlite3
import weakref

import pytest
from fake_engine import FakeEngine

from manybench.plan import parse_plan
from manybench.plan import expand as E
from manybench.results.store import Store
from manybench.run.coordinator import Coordinator

_OneNode = FakeEngine


BIG = ('repeat = 100000\nnoise = 0\n[placement]\nworkers = 2\n'
       '[[task]]\nname = "a"\nkernel = "null"\n[[task]]\nname = "b"\nkernel = "null"\n')


@pytest.fixture
def built(monkeypatch):
    """Every phase expand.py builds, held weakly: how many were built, how many still live."""
    made = {"count": 0, "refs": []}
    real = E._phase

    def counting(*a, **k):
        ph = real(*a, **k)
        made["count"] += 1
        made["refs"].append(weakref.ref(ph))
        return ph
    monkeypatch.setattr(E, "_phase", counting)
    return made


def live(made: dict) -> int:
    return sum(r() is not None for r in made["refs"])


def test_a_200000_phase_plan_is_counted_without_building_a_phase(built):
    phases = E.expand(parse_plan(BIG, "big.toml", ()))
    assert len(phases) == 200_000 and built["count"] == 0
    first = next(iter(phases))
    assert (first.index, first.task.name, first.rep, built["count"]) == (0, "a", 0, 1)
    # one phase per distinct point for the checks: two, not 200,000
    assert [(p.index, p.task.name) for p in phases.points()] == [(0, "a"), (100_000, "b")]
    assert built["count"] == 3


def test_iterating_keeps_no_phase_alive(built):
    phases = E.expand(parse_plan(BIG, "big.toml", ()))
    last = None
    for n, ph in enumerate(phases):
        last = ph.index
        if n == 20_000:
            break
    assert last == 20_000 and built["count"] == 20_001
    assert live(built) <= 2      # the one in hand (and the generator's), not 20,001


def test_a_200000_phase_run_starts_before_building_the_rest(tmp_path, built):
    plan = parse_plan(BIG, "big.toml", ())
    phases = E.expand(plan)
    engine = _OneNode(str(tmp_path), interrupt_at=3)     # Ctrl-C while phase 3 runs
    out = Coordinator(plan, phases, str(tmp_path), engine, [], progress=False).run()
    assert out.status == "interrupted"
    # four phases stored (the fourth interrupted), a handful built: the run started at once
    db = sqlite3.connect(tmp_path / "results.db")
    assert db.execute("SELECT COUNT(*) FROM phases").fetchone()[0] == 4
    db.close()
    # built: the 4 phases run and, for the checks before the first, the 2 points a few
    # times over: tens at most, whatever the repeat
    assert built["count"] < 20 and live(built) <= 2
    with Store(str(tmp_path), readonly=True) as st:
        assert st.runs()[-1].notes.phases == 200_000      # counted, not built


def test_resume_and_indexing_stay_lazy(built):
    phases = E.expand(parse_plan(BIG, "big.toml", ()))
    rest = E.Remaining(phases, {0, 1, 2, 5})
    assert len(rest) == 199_996 and built["count"] == 0
    assert [p.index for p in rest[:3]] == [3, 4, 6]
    before = built["count"]
    last = phases[-1]
    # the phases before the last are counted, not built: one phase built for one asked
    assert (last.index, last.task.name, built["count"] - before) == (199_999, "b", 1)
    assert (phases[100_000].index, phases[100_000].task.name) == (100_000, "b")
    assert phases[99_999].task.name == "a" and phases[-200_000].index == 0
    with pytest.raises(IndexError):
        phases[200_000]
