"""Node telemetry (issue 10, item 4): psutil readings at an interval during phases, stored per
node marked with the running phase (none between phases: a prepare), summarised per point."""
from __future__ import annotations

import dataclasses
import time
from collections import namedtuple

import pytest

from conftest import run_cli
from manybench.analysis import summarize
from manybench.node import telemetry as T
from manybench.report.plots import data as plot_data
from manybench.report.plots import telemetry as tel_plot
from manybench.results.store import Store
from builders import S, T0, busy_row, pinfo, rec, telemetry as tel_row

Cpu = namedtuple("Cpu", "user nice system idle iowait")


def _counters(t_s: float, cpu: Cpu, read: int, write: int, busy: int, rx: int, tx: int):
    return T._Counters(int(t_s * 1e9), cpu, read, write, {"sda": busy}, rx, tx)


def test_a_row_is_the_deltas_over_the_interval():
    a = _counters(10.0, Cpu(100, 0, 50, 800, 10), 0, 0, 1000, 0, 0)
    b = _counters(12.0, Cpu(130, 10, 70, 880, 10), 4 << 20, 8 << 20, 1500, 2000, 6000)
    row = T.row_between("n1", a, b, 7)
    # 140 ticks in all: user + nice 40, system 20, idle 80, iowait 0
    assert row.cpu_user_pct == pytest.approx(100 * 40 / 140)
    assert row.cpu_system_pct == pytest.approx(100 * 20 / 140) and row.cpu_iowait_pct == 0
    assert (row.disk_read_bps, row.disk_write_bps) == (2 << 20, 4 << 20)
    assert row.disk_busy_pct == pytest.approx(25.0)      # 500 ms busy in 2 s
    assert (row.net_rx_bps, row.net_tx_bps) == (1000, 3000)
    assert (row.node, row.phase_id, row.interval_s) == ("n1", 7, 2.0)


class _Clock:
    """The telemetry module's clock, moved by the test: whether a reading is due depends on
    the times the test says, not on how long a busy machine kept it off the cpu (with the
    real clock, 10 ms between two lines was "due" when the process was descheduled)."""
    def __init__(self) -> None:
        self.ns = time.time_ns()

    def time_ns(self) -> int:
        return self.ns

    def after(self, s: float) -> int:
        self.ns += round(s * 1e9)
        return self.ns


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(T, "time", c)
    return c


def test_readings_come_at_the_interval_and_never_next_to_t0(clock):
    off = T.Telemetry("n", 0)
    off.tick(1)
    assert off.drain() == []
    tel = T.Telemetry("n", 0.01)
    clock.after(0.009)
    tel.tick(1)
    assert tel.drain() == []                 # not due yet
    clock.after(0.011)
    tel.tick(3, t0_ns=clock.ns)              # due, but the slots are starting
    tel.tick(3, t0_ns=clock.ns + 10**9)      # or waiting for T0
    assert tel.drain() == []
    tel.tick(3, t0_ns=clock.ns - T.GUARD_NS)
    [row] = tel.drain()
    assert row.phase_id == 3 and row.interval_s == pytest.approx(0.02)
    assert 0 <= row.cpu_user_pct <= 100 and row.mem_used_bytes > 0


def test_a_long_prepare_or_phase_ends_with_a_reading_of_its_own(clock):
    """Issue 29: a prepare's I/O was the first row of the phase after it. One read during it
    ends with a reading, due or not, marked as asked; one too short to be read ends with
    none of its own, and a reading due then is between phases (it holds time before it)."""
    tel = T.Telemetry("n", 0.01)
    began = clock.after(0.02)
    tel.tick(None)                     # read during it (due)
    clock.after(T.BOUNDARY_NS / 1e9 * 2)
    tel.boundary(7, began)             # its end: a row of its own, though not due
    short = clock.after(0.02)
    tel.boundary(8, short)             # nothing read since it began: the due reading
    assert [r.phase_id for r in tel.drain()] == [None, 7, None]
    quiet = T.Telemetry("n", 60.0)
    quiet.boundary(1, clock.ns)        # not due, nothing read since: no row
    assert quiet.drain() == []


def test_telemetry_is_summarised_per_point_without_warmup_phases():
    recs = [rec(i, 0, i * 10 * S, i * 10 * S, i * 10 * S + S) for i in range(3)]
    phases = [pinfo(i, "p", t0=i * 10 * S) for i in range(3)]
    phases[0].warmup = True
    rows = [busy_row("n", 0, 99.0), busy_row("n", 1, 10.0), busy_row("n", 2, 30.0),
            busy_row("n", 2, 20.0), busy_row("m", 2, 40.0), busy_row("n", None, 90.0)]
    [s] = summarize(recs, phases, rows)
    assert (s.telemetry.rows, s.telemetry.nodes) == (4, 2)
    assert s.telemetry.cpu_user_pct == 20.0           # nearest-rank median of 10, 20, 30, 40
    assert summarize(recs, phases)[0].telemetry is None


@pytest.mark.e2e
def test_a_run_stores_its_nodes_telemetry_marked_with_phases(plan_file, tmp_path):
    plan = plan_file("""
        name = "tel"
        telemetry = "0.1s"
        [[task]]
        name = "w"
        kernel = "io.write"
        dir = "{tmp}"
        duration = "1s"
        size = "1GiB"
        fsync = "never"
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out)
    assert res.returncode == 0, res.stderr
    with Store(out, readonly=True) as st:
        run = st.runs()[0].run_id
        [phase] = st.phases(run)
        [r] = st.records(run)
        rows = st.telemetry(run)
        during = [t for t in rows if t.phase_id == phase.index]
        assert len(during) >= 2 and {t.node for t in rows} == {r.node}
        assert all(phase.t0_ns < t.t_ns <= r.end_ns + int(1e9) for t in during)
        assert max(t.disk_write_bps for t in during) > 0 or max(
            t.cpu_system_pct for t in during) > 0
    off = plan_file(open(plan).read().replace('telemetry = "0.1s"', "telemetry = 0"), "off.toml")
    out2 = str(tmp_path / "res2")
    assert run_cli("run", off, "-o", out2).returncode == 0
    with Store(out2, readonly=True) as st:
        assert st.telemetry(st.runs()[0].run_id) == []


def test_disk_and_network_counters_are_psutils_own_figures():
    """The readings parse /proc themselves (psutil cost several times more per reading):
    the same whole-disk bytes, busy times and non-loopback network bytes psutil gives."""
    import psutil
    from manybench.node.telemetry import _disks, _net
    total = psutil.disk_io_counters(perdisk=False)
    per = psutil.disk_io_counters(perdisk=True) or {}
    nics = psutil.net_io_counters(pernic=True) or {}
    read, written, busy = _disks()
    rx, tx = _net()
    if total is not None:
        assert abs(read - total.read_bytes) < 1 << 24 and abs(written - total.write_bytes) < 1 << 28
    assert set(busy) == set(per)
    sent = sum(c.bytes_sent for n, c in nics.items() if n != "lo")
    got = sum(c.bytes_recv for n, c in nics.items() if n != "lo")
    assert 0 <= rx - got < 1 << 24 and 0 <= tx - sent < 1 << 24


def test_the_telemetry_figure_shades_the_timed_windows():
    """A prepare's rows (between phases) are drawn before the phase's shaded window, not
    inside it; each phase's window is first start to last end of its ok records."""
    t1 = T0 + 10 * S
    records = [rec(0, 0, T0, T0, T0 + 2 * S), rec(0, 1, T0, T0 + S, T0 + 3 * S),
               rec(1, 0, t1, t1, t1 + S), rec(1, 1, t1, t1, t1 + 9 * S, status="error")]
    phases = [pinfo(0, "p", t0=T0), pinfo(1, "p", t0=t1)]
    rows = [dataclasses.replace(tel_row("r", t, ph), node="n")
            for t, ph in ((T0 - 4 * S, None), (T0 - S, None), (T0 + S, 0), (T0 + 3 * S, 0),
                          (t1 - S, None), (t1 + S, 1))]
    [d] = plot_data.split(summarize(records, phases), records, phases, telemetry=rows)
    assert len(d.telemetry) == len(rows)        # the prepares' rows are the task's too
    fig = tel_plot.plot(d)
    for ax in fig.axes:       # seconds since the first row's start, T0 - 5 s
        spans = sorted(tuple(p.get_path().get_extents(p.get_patch_transform()).intervalx)
                       for p in ax.patches)
        assert spans == [(5.0, 8.0), (15.0, 16.0)], spans    # phase 1's failed slot: out
    # each row drawn over its interval: from the first prepare's start (0) to the last end
    xs = [x for line in fig.axes[0].lines for x in line.get_xdata() if x == x]
    assert (min(xs), max(xs)) == (0.0, 16.0)
