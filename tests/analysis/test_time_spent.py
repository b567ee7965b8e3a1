"""Where time went (issue 29, item 11): each phase's prepare, window and cleanup stored, the
run's "time outside the windows" line with the slowest prepare, progress lines where stderr
is no terminal, and telemetry rows of a prepare apart from its phase's.

A study took 239 s for ~25 s of timed windows (a prepare removing 20,000 directories took
7-91 s a phase) and nothing said where the rest went: prepares were not stored, a batch log
showed no progress, and the telemetry figure put a prepare's I/O in its phase's first row.

The run below is the real coordinator, local engine and slots, with the command kernel's
prepare slowed in the slot for one phase and its cleanup for every phase (a test double:
the slots are forked from this process, so they run the patched kernel). Times are asserted
as lower bounds of what the double slept, or as the stored figures' own sums, never as
absolute durations.
"""
from __future__ import annotations

import dataclasses
import json
import signal
import time

import pytest

from builders import S, T, pinfo, rec
from manybench import config
from manybench.analysis.time_spent import TimeSpent
from manybench.engines.base import EngineConfig
from manybench.engines.local import LocalEngine
from manybench.kernels import KERNELS
from manybench.plan import parse_plan
from manybench.plan.expand import expand
from manybench.report import build, summary
from manybench.report.time_line import LABEL
from manybench.results.contract import PhaseTimes, RunInfo, RunNotes
from manybench.results.store import Store
from manybench.run import interrupts
from manybench.run import progress as P
from manybench.run.coordinator import Coordinator
from manybench.run.times import phase_times

SLOW = 1            # the phase whose prepare is slowed
SLEEP_S = 0.3       # how long (at least) its prepare takes
CLEAN_S = 0.2       # how long (at least) every phase's cleanup takes

PLAN = """
name = "slow"
noise = 0
repeat = 3
telemetry = "0.05s"
[[task]]
name = "t"
command = ["sleep", "0.3"]
"""


def _slowed(monkeypatch, marks) -> None:
    """The command kernel, its prepare slowed in phase SLOW (the instant it stopped sleeping
    written to `marks`), its cleanup slowed in every phase."""
    k = KERNELS["command"]

    def prepare(ctx, params):
        if ctx.phase == SLOW:
            time.sleep(SLEEP_S)
            with open(marks, "a") as f:
                f.write(f"{time.time_ns()}\n")
        return k.prepare(ctx, params)

    def cleanup(state):
        k.cleanup(state)
        time.sleep(CLEAN_S)
    monkeypatch.setitem(KERNELS, "command", dataclasses.replace(k, prepare=prepare,
                                                                cleanup=cleanup))


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    """One run of PLAN, progress lines every 0.05 s: (results dir, its stderr, the instant
    phase SLOW's prepare stopped sleeping)."""
    tmp = tmp_path_factory.mktemp("slow")
    marks = tmp / "marks"
    out = str(tmp / "res")
    mp = pytest.MonkeyPatch()
    saved = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    lines: list[str] = []
    try:
        _slowed(mp, marks)
        mp.setattr(P.sys, "stderr", _Log(lines))     # a log file: no terminal
        plan = parse_plan(PLAN, "slow.toml", ())
        with config.set({"run.progress_every": 0.05}):
            outcome = Coordinator(plan, expand(plan), out, LocalEngine(EngineConfig.of(plan)),
                                  ["test"]).run()
    finally:
        mp.undo()
        for s, handler in saved.items():
            signal.signal(s, handler)
    assert outcome.status == "finished"
    return out, "".join(lines), int(marks.read_text().split()[0])


class _Log:
    """A stderr that is a file, not a terminal."""
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def write(self, text: str) -> int:
        self.lines.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("not a real file")


def _stored(out: str):
    with Store(out, readonly=True) as st:
        run = st.runs()[0]
        return run, st.phases(run.run_id), st.records(run.run_id), st.telemetry(run.run_id)


@pytest.mark.e2e
def test_each_phase_stores_its_prepare_window_and_cleanup(slow_run):
    run, phases, records, _ = _stored(slow_run[0])
    assert len(phases) == 3
    for p in phases:
        rs = [r for r in records if r.phase == p.index]
        window = (max(r.end_ns for r in rs) - min(r.start_ns for r in rs)) / 1e9
        assert p.times.window_s == pytest.approx(window, abs=1e-9)
        assert p.times.prepare_node == rs[0].node
        assert p.times.cleanup_s >= CLEAN_S       # the slot's cleanup, after its window
    assert phases[SLOW].times.prepare_s >= SLEEP_S


@pytest.mark.e2e
def test_the_report_says_where_the_time_went_and_names_the_slowest_prepare(slow_run):
    out = slow_run[0]
    run, phases, _, _ = _stored(out)
    t = TimeSpent.of(run, phases)
    # the parts are apart in time: together they never exceed the wall time
    assert t.windows_s + t.prepare_s + t.cleanup_s + t.end_s <= t.wall_s
    assert t.own_s == pytest.approx(t.wall_s - t.windows_s - t.prepare_s - t.cleanup_s
                                    - t.end_s)
    assert t.prepare_s >= SLEEP_S and t.cleanup_s >= 3 * CLEAN_S
    assert t.start_s > 0 and t.end_s > 0      # the nodes started and ended, outside phases
    slowest = max(phases, key=lambda p: p.times.prepare_s)
    assert (t.slowest.phase, t.slowest.node) == (slowest.index, slowest.times.prepare_node)
    [view] = build.build(out)
    header = dict(view.header)
    line = header[LABEL]
    assert f"slowest prepare: phase {slowest.index} (task t) on node {slowest.times.prepare_node}" \
        in line and "outside the timed windows: prepare " in line and "cleanup " in line \
        and "the run's end " in line and "the coordinator's own" in line
    [js] = summary.summary(out)["runs"]
    assert js["header"][LABEL] == line
    assert js["time"]["prepare_s"] == pytest.approx(t.prepare_s)
    assert js["time"]["slowest"]["phase"] == slowest.index
    json.dumps(js)


@pytest.mark.e2e
def test_progress_lines_on_a_stderr_that_is_no_terminal(slow_run):
    """A batch job's log showed nothing for minutes: a line every run.progress_every, saying what
    the run does and for how long, and a last one at the end."""
    err = slow_run[1]
    lines = [x for x in err.splitlines() if x.startswith("progress: ")]
    assert len(lines) >= 3, err
    assert any(f"preparing phase {SLOW} (t " in x for x in lines), err
    assert lines[-1].startswith("progress: 3/3 phases") and "ending the run" in lines[-1], err
    assert "\x1b" not in err      # no terminal escapes in a log


@pytest.mark.e2e
def test_telemetry_of_a_prepare_is_not_its_phases(slow_run):
    """The rows during a prepare are between phases (phase_id None), and the phase's own
    rows start after it: the first used to span the prepare and carry its I/O (its window
    of 0.3 s holds a reading at the interval of 0.05 s)."""
    out, _, slept = slow_run
    _, phases, _, rows = _stored(out)
    start = lambda r: r.t_ns - round(r.interval_s * 1e9)    # noqa: E731
    mine = [r for r in rows if r.phase_id == SLOW]
    assert mine and min(start(r) for r in mine) >= slept
    during = [r for r in rows if r.phase_id is None and start(r) < slept
              and r.t_ns > slept - SLEEP_S * 1e9]
    assert during, rows


def test_phase_times_from_the_engines_waits():
    """prepare: the slowest node's rounds; window: ok records only; cleanup: from the
    window's end, or from when the coordinator began waiting if later, to the last answer."""
    starts, ends = [T + 10, T + 20, T + 5], [T + S, T + 2 * S, T + 9 * S]
    status = ["ok", "ok", "error"]
    t = phase_times(starts, ends, status, T, T + S, {"a": 0.5, "b": 2.0},
                    {"a": T + 3 * S, "b": T + 4 * S})
    assert t == PhaseTimes(prepare_s=2.0, prepare_node="b", window_s=(2 * S - 10) / 1e9,
                           cleanup_s=2.0)
    late = phase_times(starts, ends, status, T, T + 3 * S, {}, {"a": T + 4 * S})
    assert (late.prepare_s, late.prepare_node, late.cleanup_s) == (0.0, None, 1.0)
    none_ok = phase_times(starts, ends, ["error"] * 3, T, T, {"a": 1.0}, {"a": T + S})
    assert none_ok.window_s is None and none_ok.cleanup_s == 1.0     # from T0
    assert phase_times(starts, ends, status, T, T, {}, {}).cleanup_s is None


def test_time_spent_adds_up_a_resumed_run_from_its_resume():
    notes = RunNotes(start_s=1.5, end_s=5.0, resumed_ns=T + 100 * S)
    run = RunInfo("r", "p", "", {}, [], T, T + 200 * S, "finished", {}, notes)
    phases = [pinfo(i, "x", t0=T + (10 + 100 * (i > 0)) * S) for i in range(3)]
    for p, prep in zip(phases, (50.0, 7.0, 3.0)):
        p.times = PhaseTimes(prep, "n2", 10.0, 1.0)
    t = TimeSpent.of(run, phases)
    assert (t.wall_s, t.phases, t.prepare_s, t.windows_s, t.cleanup_s) == (100.0, 2, 10.0,
                                                                            20.0, 2.0)
    assert (t.end_s, t.own_s) == (5.0, 63.0) and t.resumed
    assert (t.slowest.phase, t.slowest.seconds) == (1, 7.0)   # phase 0 was before the resume
    ended_unseen = TimeSpent.of(dataclasses.replace(run, notes=RunNotes()), phases)
    assert ended_unseen.end_s is None and ended_unseen.own_s == 200.0 - 30.0 - 60.0 - 3.0
    assert TimeSpent.of(RunInfo("r", "p", "", {}, [], T, T + S, "finished", {}, RunNotes()),
                        [pinfo(0, "x", t0=T)]) is None     # stored before schema 8


def test_progress_lines_come_every_n_seconds_and_say_what_the_run_does(capsys):
    now = [100.0]
    bar = P.RunProgress(4, clock=lambda: now[0])    # stderr is captured: no terminal
    every = config.timing("run.progress_every")
    with bar:
        bar.point("w workers=2", 0)
        bar.doing("preparing")
        now[0] += every / 2
        bar.tick()
        assert capsys.readouterr().err == ""     # not yet
        now[0] += every
        bar.tick()
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith("progress: 0/4 phases, 0:00:15 elapsed")
        assert line.endswith("preparing phase 0 (w workers=2) for 0:00:15")
        bar.doing("running")
        records = [rec(0, s, T, T, T + S, kernel="meta.mkdir", ops=500) for s in range(2)]
        bar.advance(records)
        now[0] += every
        bar.point("w workers=2", 1)
        bar.doing("preparing")
        [line] = capsys.readouterr().err.splitlines()
        assert "1/4 phases" in line and "ETA 0:01:15" in line and "1,000 ops/s" in line
    [last] = capsys.readouterr().err.splitlines()     # interrupted: no end to come
    assert last.startswith("progress: 1/4 phases") and "preparing" not in last
    assert "ending" not in last
