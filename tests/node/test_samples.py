"""Progress inside a phase (issue 10, item 3): the C loop's counter, the slot's sampler thread,
stamps moved into the coordinator's clock, samples stored per phase and rank."""
from __future__ import annotations

import os
import time

import pytest

from conftest import run_cli
from waits import wait_for
from manybench import _native
from manybench.engines.base import Node, to_coordinator
from manybench.kernels import Result
from manybench.node.sampler import Sampler
from manybench.results.store import Store


def test_sampler_reads_at_its_interval_and_ends_with_the_exact_total():
    t0 = time.time_ns()
    count = iter(range(1, 10_000))
    s = Sampler(0.02, t0, read=lambda: next(count) * 100).start()
    wait_for(lambda: len(s.samples) >= 2, "two of the sampler's readings")   # not a time
    end = time.time_ns()
    got = s.stop(end, 123_456.0)
    assert len(got) >= 3                      # some ticks, whatever the load
    stamps = [t for t, _ in got]
    assert stamps == sorted(stamps) and stamps[0] > t0 and stamps[-1] == end
    assert [d for _, d in got[:-1]] == sorted(d for _, d in got[:-1]) and got[-1][1] == 123_456


def test_a_counter_reset_by_a_second_timed_call_carries_the_total_over():
    reads = iter([10, 20, 5, 8])
    t0 = time.time_ns()
    s = Sampler(0.01, t0, read=lambda: next(reads, 8)).start()
    while len(s.samples) < 4:
        time.sleep(0.005)
    got = [d for _, d in s.stop()][:4]
    assert got == [10.0, 20.0, 25.0, 28.0]


def test_the_native_counter_follows_the_loop_and_is_reset_by_each_timed_call():
    fd = os.open(os.devnull, os.O_WRONLY)
    try:
        d = _native.run_io(fd, True, 4096, 1 << 20, 0, False, False, time.time_ns(), 0)
    finally:
        os.close(fd)
    assert d["bytes"] == 1 << 20 and _native.progress() == 1 << 20
    _native.run_null(time.time_ns(), 0)
    assert _native.progress() == 0


def test_samples_move_into_the_coordinators_clock():
    node = Node("n", 1, (), offset_ns=1_000)
    res = Result(start_ns=5_000, end_ns=9_000, samples=[(6_000, 1.0), (9_000, 2.0)],
                 sample_unit="ops")
    moved = to_coordinator(res, node)
    assert moved.samples == [(5_000, 1.0), (8_000, 2.0)] and moved.start_ns == 4_000


@pytest.mark.e2e
def test_a_run_stores_each_slots_samples_and_commands_have_none(plan_file, tmp_path):
    plan = plan_file("""
        name = "samples"
        sample = "50ms"
        [placement]
        workers = 2
        [[task]]
        name = "w"
        kernel = "io.write"
        dir = "{tmp}"
        duration = "0.4s"
        size = "1GiB"
        block = "64KiB"
        fsync = "never"
        [[task]]
        name = "off"
        kernel = "io.write"
        dir = "{tmp}"
        size = "1MiB"
        sample = 0
        [[task]]
        name = "cmd"
        command = ["sleep", "0.3"]
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out)
    assert res.returncode == 0, res.stderr
    with Store(out, readonly=True) as st:
        run = st.runs()[0].run_id
        phases = {p.task: p.index for p in st.phases(run)}
        recs = {(r.phase, r.extra["rank"]): r for r in st.records(run)}
        got = st.samples(run, phases["w"])
        assert {s.rank for s in got} == {0, 1} and {s.unit for s in got} == {"bytes"}
        for rank in (0, 1):
            mine = [s for s in got if s.rank == rank]
            assert len(mine) >= 3
            assert [s.t_s for s in mine] == sorted(s.t_s for s in mine) and mine[0].t_s > 0
            assert [s.done for s in mine] == sorted(s.done for s in mine)
            r = recs[(phases["w"], rank)]
            assert mine[-1].done == r.bytes and mine[-1].node == r.node
            # the last sample is the slot's end, on the phase's timebase
            assert abs(mine[-1].t_s - (r.end_ns - r.t0_ns) / 1e9) < 1e-6
        assert st.samples(run, phases["off"]) == [] and st.samples(run, phases["cmd"]) == []


@pytest.mark.e2e
def test_compute_kernels_sample_their_loops(plan_file, tmp_path):
    plan = plan_file("""
        name = "compute"
        sample = "10ms"
        telemetry = 0
        [[task]]
        name = "st"
        kernel = "mem.stream"
        elements = 2000000
        ntimes = 20
        [[task]]
        name = "hi"
        kernel = "cpu.himeno"
        iterations = 30
        [[task]]
        name = "dg"
        kernel = "cpu.dgemm"
        n = 256
        repeat = 40
    """)
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out)
    assert res.returncode == 0, res.stderr
    with Store(out, readonly=True) as st:
        run = st.runs()[0].run_id
        for r in st.records(run):
            got = st.samples(run, r.phase)
            unit = "bytes" if r.task == "st" else "ops"
            assert got and {s.unit for s in got} == {unit}, r.task
            done = [s.done for s in got]
            assert done == sorted(done) and done[-1] == (r.bytes if unit == "bytes" else r.ops)
            assert all(d <= done[-1] for d in done) and got[0].t_s > 0
