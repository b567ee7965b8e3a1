"""A slot with cpus of its own spins before T0 only while they are otherwise idle
(node/spin_choice.py); under other work it sleeps to T0, and its records say which."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from manybench.kernels import SlotContext
from manybench.kernels.figures import CPU_BUSY, SPUN
from manybench.node import spin_choice
from manybench.node.protocol import SlotPlace, WirePhase, WireTask
from manybench.node.slot import SlotLoop
from manybench.node.spin_choice import BUSY, FIRST_NS, WINDOW_NS, Reading, SpinChoice, cpu_ticks

STAT = """cpu  100 0 50 800 10 0 5 0 0 0
cpu0 60 0 30 400 5 0 3 2 0 0
cpu1 40 0 20 400 5 0 2 0 0 0
intr 1 2 3
"""


def test_cpu_ticks_counts_busy_and_total_of_the_cpus_asked():
    assert cpu_ticks(STAT, (0,)) == (60 + 30 + 3 + 2, 60 + 30 + 3 + 2 + 400 + 5)
    assert cpu_ticks(STAT, (0, 1)) == (95 + 62, 95 + 405 + 62 + 405)
    assert cpu_ticks(STAT, (2,)) is None          # a cpu /proc/stat does not list


class Fake:
    """A node whose other work takes `share` of the slot's cpus; the slot's own cpu time
    grows by `own` of the wall time."""

    def __init__(self, share: float, own: float = 0.0) -> None:
        self.share, self.own = share, own
        self.t = 0
        self.busy = self.total = 0.0
        self.ours = 0.0
        self.reads = 0

    def advance(self, ns: int) -> None:
        self.t += ns
        self.total += ns / 10_000_000               # ticks of 10 ms
        self.busy += ns / 10_000_000 * min(1.0, self.share + self.own)
        self.ours += ns / 1e9 * self.own

    def read(self, cpus: tuple[int, ...]) -> Reading:
        self.reads += 1        # /proc/stat counts whole ticks
        return Reading(self.t, int(self.busy), int(self.total), self.ours)

    def choice(self) -> SpinChoice:
        return SpinChoice(self.read, lambda: self.t)


def phases(fake: Fake, c: SpinChoice, n: int, step_ns: int = 50_000_000) -> list[bool]:
    out = []
    for _ in range(n):
        out.append(c.spins((0,)))
        fake.advance(step_ns)
    return out


def test_an_idle_cpu_keeps_the_spin_and_a_slot_own_work_does_not_make_it_busy():
    fake = Fake(0.02, own=0.6)        # the slot itself keeps its cpu 60% busy
    c = fake.choice()
    assert all(phases(fake, c, 40))
    assert c.others is not None and c.others < 0.1


def test_a_busy_cpu_makes_the_slot_sleep_after_its_first_window_and_reading_is_per_window():
    fake = Fake(0.9)
    c = fake.choice()
    got = phases(fake, c, 40)         # 2 s of 50 ms phases
    assert got[0] and not got[-1]
    first = got.index(False)
    assert first * 50_000_000 <= FIRST_NS + 50_000_000    # decided at the first window's end
    assert fake.reads <= 40 * 50_000_000 // WINDOW_NS + 1  # /proc/stat once a window, not a phase
    assert c.others == pytest.approx(0.9, abs=0.05)


def test_the_choice_follows_the_load_with_hysteresis():
    fake = Fake(0.9)
    c = fake.choice()
    assert not phases(fake, c, 40)[-1]
    fake.share = (BUSY + spin_choice.IDLE) / 2     # between the thresholds: it stays asleep
    assert not any(phases(fake, c, 40)[12:])
    fake.share = 0.0                               # the other work is gone: it spins again
    assert phases(fake, c, 40)[-1]
    fake.share = (BUSY + spin_choice.IDLE) / 2     # and stays spinning between them
    assert all(phases(fake, c, 40)[12:])


def test_no_evidence_keeps_the_spin_and_is_not_read_every_phase():
    calls = []
    t = [0]
    c = SpinChoice(lambda cpus: calls.append(cpus), lambda: t[0])
    for _ in range(100):
        assert c.spins((3,))
        t[0] += 10_000_000
    assert len(calls) <= 100 * 10_000_000 // FIRST_NS + 1   # 10 ms phases: 1 in 10 read


def _phase() -> WirePhase:
    return WirePhase(index=0, kernel="null", task=WireTask(name="sync"), params={}, workers=1,
                     rep=0, variant="")


def _ctx(tmp_path, cpu: int, phase: int) -> SlotContext:
    return SlotContext(run="r", node="n", slot=0, rank=0, workers=1, cpu=cpu,
                       scratch=str(tmp_path), shared=str(tmp_path), phase=phase)


def _go(loop: SlotLoop, tmp_path, cpu: int, phase: int):
    place = SlotPlace(0, cpu, (cpu,), True)
    assert loop.prepare(_phase(), _ctx(tmp_path, cpu, phase), place) is None
    return loop._done(loop.go(time.time_ns() + 2_000_000)).result


@pytest.fixture
def own_affinity():
    """The slot loop runs in the test's process and pins it: give its cpus back after."""
    before = os.sched_getaffinity(0)
    yield
    os.sched_setaffinity(0, before)


def test_the_record_says_the_slot_spun_on_an_idle_cpu(tmp_path, own_affinity):
    cpu = max(os.sched_getaffinity(0))
    fake = Fake(0.0)
    loop = SlotLoop(None)
    loop.choice = fake.choice()
    for i in range(20):
        res = _go(loop, tmp_path, cpu, i)
        fake.advance(100_000_000)
        assert res.status == "ok"
        assert res.metrics[SPUN.name] == 1 and CPU_BUSY.name not in res.metrics
        assert not res.extra.get("warnings")


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="needs /proc/stat")
def test_under_a_competing_spinner_on_its_cpu_the_slot_sleeps_and_says_why(tmp_path,
                                                                          own_affinity):
    cpu = max(os.sched_getaffinity(0))
    code = f"import os\nos.sched_setaffinity(0, [{cpu}])\nprint(flush=True)\nwhile True: pass"
    spinner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        spinner.stdout.readline()       # it runs, pinned
        loop = SlotLoop(None)
        told, records = [], []
        # phases until the slot has chosen (an event, bounded only so a broken choice
        # ends): its first window ends WINDOW_NS after the first phase
        limit = time.monotonic() + 60
        while time.monotonic() < limit:
            res = _go(loop, tmp_path, cpu, len(records))
            records.append(res)
            told += res.extra.get("warnings", [])
            if res.metrics.get(SPUN.name) == 0:
                break
        last = records[-1]
        assert last.status == "ok" and last.metrics[SPUN.name] == 0
        assert last.metrics[CPU_BUSY.name] >= BUSY
        assert [k for k, _ in told] == ["busy-cpu"]
        assert f"cpus {cpu}" in told[0][1] and "instead of spinning" in told[0][1]
        assert all(r.metrics[SPUN.name] == 1 for r in records[:-1])   # spun until it knew
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.e2e
def test_a_run_under_a_spinner_stores_which_way_its_slot_waited_and_warns(plan_file, tmp_path):
    from conftest import run_cli
    from manybench.results.store import Store
    from manybench.run.placement import place
    [slot] = place(1, "spread", "core")        # where the run's one slot goes: it may spin
    assert slot.spin
    cpu = slot.cpu
    code = f"import os\nos.sched_setaffinity(0, [{cpu}])\nprint(flush=True)\nwhile True: pass"
    spinner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    out = str(tmp_path / "res")
    try:
        spinner.stdout.readline()
        # each phase lasts at least 0.1 s, so the run outlasts the slot's first windows
        res = run_cli("run", plan_file("""
            repeat = 12
            [placement]
            workers = 1
            [[task]]
            name = "nap"
            command = ["sleep", "0.1"]
        """), "-o", out)
    finally:
        spinner.kill()
        spinner.wait()
    assert res.returncode == 0, res.stderr
    with Store(out, readonly=True) as st:
        run = st.runs()[-1].run_id
        records = sorted(st.records(run), key=lambda r: r.phase)
        warned = [w for w in st.warnings(run) if w.kind == "busy-cpu"]
    assert records[0].metrics[SPUN.name] == 1          # no evidence yet: it spun
    assert records[-1].metrics[SPUN.name] == 0         # its busy cpu seen: it slept
    assert records[-1].metrics[CPU_BUSY.name] >= BUSY
    assert len(warned) == 1 and f"cpus {cpu}" in warned[0].message
    assert "instead of spinning" in res.stderr
