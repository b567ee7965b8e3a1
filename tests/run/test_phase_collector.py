"""The cyclic collector around a coordinator's phase (gc_pause.PhaseCollector): off from the
go until the records are made, those frozen until their commit; back on for a long phase;
never left off or frozen once a run has ended, however it ended."""
from __future__ import annotations

import gc

import pytest

from fake_engine import FakeEngine
from manybench import config
from manybench.gc_pause import PhaseCollector
from manybench.plan import parse_plan
from manybench.plan.expand import expand
from manybench.results.store import Store
from manybench.run.coordinator import Coordinator


def _plan(repeat: int):
    plan = parse_plan(f'repeat = {repeat}\n[placement]\nworkers = 2\n[[task]]\nname = "s"\n'
                      'kernel = "null"\n', "p.toml", ())
    return plan, expand(plan)


@pytest.fixture(autouse=True)
def _collector_as_found():
    assert gc.isenabled() and gc.get_freeze_count() == 0
    yield
    gc.unfreeze()
    gc.enable()


def test_off_from_the_go_frozen_until_the_commit():
    c = PhaseCollector()
    c.pause(lead_s=5.0)
    assert not gc.isenabled()
    c.waiting()                          # the phase is short: still off
    assert not gc.isenabled()
    kept = [[i] for i in range(1000)]    # the phase's records
    c.made()
    assert gc.isenabled() and gc.get_freeze_count() >= len(kept)
    c.unfreeze()
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_long_phase_has_the_collector_back_on():
    c = PhaseCollector()
    with config.set({"run.gc_long": 0.0}):
        c.pause(lead_s=0.0)
    assert not gc.isenabled()
    c.waiting()
    assert gc.isenabled()
    c.made()
    c.resume()                           # idempotent: it is on, and stays on
    assert gc.isenabled()
    c.unfreeze()
    assert gc.get_freeze_count() == 0


def test_a_collector_off_before_stays_off():
    """A caller that turned it off itself gets it back off."""
    gc.disable()
    c = PhaseCollector()
    c.pause(lead_s=0.0)
    c.made()
    c.unfreeze()
    assert not gc.isenabled()


def test_cycles_made_between_commits_are_collected_within_full_s():
    """Phase after short phase the young collections may never come: a full collection at
    a commit once run.gc_full has passed takes the cycles made meanwhile."""
    import weakref

    class Cycle:
        pass

    c = PhaseCollector()
    c.full_at = 0.0
    c.pause(lead_s=0.0)
    a = Cycle()
    a.me = a
    gone = weakref.ref(a)
    del a
    c.made()                   # the cycle is frozen with the rest
    assert gone() is not None
    c.unfreeze()
    assert gone() is None


@pytest.mark.parametrize("how", ["finished", "interrupted", "failed commit"])
def test_a_run_leaves_the_collector_on_and_nothing_frozen(tmp_path, monkeypatch, how):
    plan, phases = _plan(4)
    if how == "failed commit":
        real = Store.write_phase

        def write_phase(self, run_id, phase, *a, **kw):
            if phase.index == 2:
                raise OSError(28, "No space left on device")
            return real(self, run_id, phase, *a, **kw)
        monkeypatch.setattr(Store, "write_phase", write_phase)
    engine = FakeEngine(str(tmp_path), 2 if how == "interrupted" else None)
    c = Coordinator(plan, phases, str(tmp_path), engine, [], progress=False)
    c.scheduler.min_lead_ns = 50_000_000
    if how == "failed commit":
        with pytest.raises(OSError):
            c.run()
    else:
        assert c.run().status == how
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_phase_is_waited_for_with_the_collector_off_and_the_last_one_frozen(tmp_path):
    """While a phase's replies come in the collector is off; when a go is sent, the phase
    before it (made, not yet committed) is frozen; at the end nothing is."""
    polled, went = [], []

    class Watching(FakeEngine):
        def _go(self, t0_by_node):
            went.append((gc.isenabled(), gc.get_freeze_count() > 0))
            return super()._go(t0_by_node)

        def poll(self, timeout):
            polled.append(gc.isenabled())
            return super().poll(timeout)

    plan, phases = _plan(3)
    c = Coordinator(plan, phases, str(tmp_path), Watching(str(tmp_path), None), [],
                    progress=False)
    c.scheduler.min_lead_ns = 50_000_000     # each commit during the next phase's lead
    assert c.run().status == "finished"
    assert polled and not any(polled)
    assert went == [(False, False), (False, True), (False, True)]
    assert gc.isenabled() and gc.get_freeze_count() == 0
