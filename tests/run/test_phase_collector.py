"""The cyclic collector around a coordinator's phase (gc_pause.PhaseCollector): off from the
go until the records are made, those frozen until their commit; back on for a long phase;
never left off or frozen once a run has ended, however it ended (an error or Ctrl-C in the
middle of a phase, a signal between two steps); an embedder's own choices (the collector off,
objects frozen) kept; with run.gc_pause false, never touched."""
from __future__ import annotations

import gc

import pytest

from fake_engine import FakeEngine
from manybench import config
from manybench import gc_pause
from manybench.gc_pause import PhaseCollector, gc_paused
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
    c.freeze()
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
    c.freeze()
    c.resume()                           # idempotent: it is on, and stays on
    assert gc.isenabled()
    c.unfreeze()
    assert gc.get_freeze_count() == 0


def test_a_collector_off_before_stays_off_and_nothing_is_frozen_into_it():
    """A caller that turned it off itself gets it back off (and no collection to spare the
    records from: none is frozen)."""
    gc.disable()
    c = PhaseCollector()
    c.pause(lead_s=0.0)
    c.freeze()
    assert gc.get_freeze_count() == 0
    c.unfreeze()
    assert not gc.isenabled()


def test_an_exception_inside_a_paused_function_leaves_the_collector_on():
    @gc_paused
    def fails():
        assert not gc.isenabled()
        raise ValueError("in the middle")
    with pytest.raises(ValueError):
        fails()
    assert gc.isenabled()


class _Gc:
    """The gc module, one of whose calls (`step`) is followed by a signal (KeyboardInterrupt
    once it has done its work, as Ctrl-C between two bytecodes), or which records every call
    that changes the collector (`calls`)."""
    CHANGES = ("disable", "enable", "freeze", "unfreeze", "collect")

    def __init__(self, step: str = "", at_call: int = 1) -> None:
        self.step, self.at_call, self.seen, self.calls = step, at_call, 0, []

    def __getattr__(self, name):
        real = getattr(gc, name)
        if name not in self.CHANGES:
            return real

        def call(*a):
            self.calls.append(name)
            got = real(*a)
            if name == self.step:
                self.seen += 1
                if self.seen == self.at_call:
                    raise KeyboardInterrupt
            return got
        return call


@pytest.mark.parametrize("step", ["paused function", "pause", "freeze"])
def test_a_signal_right_after_a_step_leaves_nothing_off_or_frozen(monkeypatch, step):
    """Ctrl-C lands between any two bytecodes: right after gc.disable() or gc.freeze(), before
    the step is recorded, the way out (finally, resume, unfreeze) did not know to undo it."""
    monkeypatch.setattr(gc_pause, "gc", _Gc("freeze" if step == "freeze" else "disable"))
    c = PhaseCollector()
    with pytest.raises(KeyboardInterrupt):
        if step == "paused function":
            gc_paused(lambda: None)()
        else:
            try:
                c.pause(lead_s=5.0)
                c.freeze()
            finally:
                c.resume()
    c.unfreeze()
    assert gc.isenabled() and gc.get_freeze_count() == 0


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
    c.freeze()                 # the cycle is frozen with the rest
    assert gone() is not None
    c.unfreeze()
    assert gone() is None


class _FailsMidPhase(FakeEngine):
    """Phase 2's replies never come: its poll or its results fail while it runs."""

    def __init__(self, outdir: str, where: str) -> None:
        super().__init__(outdir)
        self.where = where

    def poll(self, timeout):
        if self.index == 2 and self.where == "poll":
            raise ConnectionResetError("the scheduler went away")
        return super().poll(timeout)

    def _results(self):
        if self.index == 2 and self.where == "results":
            raise RuntimeError("a reply that cannot be decoded")
        return super()._results()


RAISED = {"failed commit": OSError, "poll fails mid-phase": ConnectionResetError,
          "results fail mid-phase": RuntimeError}


@pytest.mark.parametrize("how", ["finished", "interrupted", "failed commit",
                                 "poll fails mid-phase", "results fail mid-phase",
                                 "Ctrl-C as the records freeze",
                                 "Ctrl-C as the collector is turned off"])
def test_a_run_leaves_the_collector_on_and_nothing_frozen(tmp_path, monkeypatch, how):
    plan, phases = _plan(4)
    if how == "failed commit":
        real = Store.write_phase

        def write_phase(self, run_id, phase, *a, **kw):
            if phase.index == 2:
                raise OSError(28, "No space left on device")
            return real(self, run_id, phase, *a, **kw)
        monkeypatch.setattr(Store, "write_phase", write_phase)
    if how.startswith("Ctrl-C"):     # at its third such call (a later phase), right after it
        step = "freeze" if "freeze" in how else "disable"
        fake = _Gc(step, at_call=3)
        monkeypatch.setattr(gc_pause, "gc", fake)
    if how.endswith("mid-phase"):
        engine: FakeEngine = _FailsMidPhase(str(tmp_path), how.split()[0])
    else:
        engine = FakeEngine(str(tmp_path), 2 if how == "interrupted" else None)
    c = Coordinator(plan, phases, str(tmp_path), engine, [], progress=False)
    c.scheduler.min_lead_ns = 50_000_000
    if how in RAISED:
        with pytest.raises(RAISED[how]):
            c.run()
    else:
        status = c.run().status
        assert status == ("finished" if how == "finished" else "interrupted")
    if how.startswith("Ctrl-C"):
        assert fake.seen >= 3    # the signal came where it was meant to
    assert gc.isenabled() and gc.get_freeze_count() == 0


def _run(tmp_path, repeat: int = 3) -> str:
    plan, phases = _plan(repeat)
    c = Coordinator(plan, phases, str(tmp_path), FakeEngine(str(tmp_path)), [], progress=False)
    c.scheduler.min_lead_ns = 50_000_000
    return c.run().status


def test_an_embedders_frozen_objects_stay_frozen_and_its_collector_off_stays_off(tmp_path):
    """gc.unfreeze thaws every frozen object, the embedder's too (a server that froze its
    start-up objects before forking): manybench then freezes none of its own."""
    kept = [[i] for i in range(1000)]
    gc.freeze()
    theirs = gc.get_freeze_count()
    assert theirs >= len(kept)
    assert _run(tmp_path / "frozen") == "finished"
    # theirs still frozen (some of the others died meanwhile, refcounted: the count drops)
    assert gc.isenabled() and len(kept) <= gc.get_freeze_count() <= theirs
    gc.unfreeze()
    gc.disable()
    assert _run(tmp_path / "off") == "finished"
    assert not gc.isenabled() and gc.get_freeze_count() == 0


def test_with_the_pause_off_the_collector_is_never_touched(tmp_path, monkeypatch):
    """run.gc_pause false: no call that changes the collector, in the phase loop, the
    records' making or their commit (gc_paused)."""
    fake = _Gc()
    monkeypatch.setattr(gc_pause, "gc", fake)
    with config.set({"run.gc_pause": False, "run.gc_full": 0.001}):
        assert _run(tmp_path) == "finished"
    assert fake.calls == []
    assert _run(tmp_path / "on") == "finished"      # the same run, the pause on: it acts
    assert {"disable", "enable", "freeze", "unfreeze"} <= set(fake.calls)


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
