"""A step of the wall clock during a run (date -s, a VM's clock jump) is warned with its size
and the phase it fell in, and the run's times stay right: they are kept on the coordinator's
clock, the wall clock at the run's start advanced by the monotonic clock (issue 28, item 12).
"""
from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from cluster_lab import DaskLab, faketime_lib
from conftest import export_json, run_cli

# Each phase's command pops the next line of STEPS into libfaketime's file: the wall clock of
# the run's processes steps inside phases 2 (+1 h) and 4 (-2 h), its monotonic clock does not.
STEPS = ["+0", "+0", "+3600", "+3600", "-3600", "-3600"]
NAP_S = 0.2        # each phase's command rests this long (select: libfaketime breaks sleep)
STEPPER = textwrap.dedent(f"""
    import os, select, sys
    steps, clock = sys.argv[1], sys.argv[2]
    lines = open(steps).read().split()
    with open(clock + ".new", "w") as f:
        f.write(lines[0] + "\\n")
    os.replace(clock + ".new", clock)
    with open(steps, "w") as f:
        f.write("\\n".join(lines[1:]))
    select.select([], [], [], {NAP_S})
""")


@pytest.mark.e2e
def test_a_wall_clock_step_mid_run_is_warned_and_times_stay_right(plan_file, tmp_path):
    lib = faketime_lib()
    if lib is None:
        pytest.skip("libfaketime not installed (Debian package faketime)")
    clock, steps, stepper = tmp_path / "clock", tmp_path / "steps", tmp_path / "stepper.py"
    clock.write_text("+0\n")
    steps.write_text("\n".join(STEPS))
    stepper.write_text(STEPPER)
    plan = plan_file(f"""
        name = "stepped"
        repeat = {len(STEPS)}
        noise = 0
        [placement]
        workers = 1
        [[task]]
        name = "step"
        command = ["{sys.executable}", "{stepper}", "{steps}", "{clock}"]
    """)
    out = str(tmp_path / "res")
    env = {**os.environ, "LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": str(clock),
           "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    began = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q"],
                         env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - began
    assert res.returncode == 0, res.stderr
    assert steps.read_text() == ""            # every phase ran its command
    db = sqlite3.connect(os.path.join(out, "results.db"))
    found = db.execute("select message, phase from warnings where kind='clock-step' "
                       "order by seq").fetchall()
    sizes = [float(re.search(r"stepped by ([+-][\d.]+) s", m).group(1)) for m, _ in found]
    assert [p for _, p in found] == [2, 4], found
    assert sizes == [pytest.approx(3600, abs=1e-3), pytest.approx(-7200, abs=1e-3)], found
    assert all("during phase" in m for m, _ in found)
    assert "CLOCK STEP" in res.stderr
    # the run's duration and its T0s are on the monotonic clock: positive, in order, and no
    # longer than the run took, nor shorter than its commands' rests
    started, ended = db.execute("select started_ns, ended_ns from runs").fetchone()
    assert NAP_S * len(STEPS) < (ended - started) / 1e9 < took
    t0s = [t for (t,) in db.execute("select t0_ns from phases order by idx")]
    assert t0s == sorted(t0s) and (t0s[-1] - t0s[0]) / 1e9 < took
    db.close()
    # every slot started at its T0 and ran its rest, in the coordinator's clock (the node's
    # offset followed the step): no record an hour early or late
    for r in export_json(out):
        assert 0 <= r["start_ns"] - r["t0_ns"] < 1e9, r
        assert NAP_S <= (r["end_ns"] - r["start_ns"]) / 1e9 < took
    report = run_cli("report", out, "--json")
    assert report.returncode == 0, report.stderr
    run = json.loads(report.stdout)["runs"][-1]
    assert 0 < (run["ended_ns"] - run["started_ns"]) / 1e9 < took
    assert re.fullmatch(r"[\d.]+m?s", run["header"]["duration"]), run["header"]


@pytest.fixture(scope="module")
def two_nodes():
    with DaskLab(2, slots=1) as lab:
        yield lab


@pytest.mark.e2e
def test_a_coordinators_clock_step_is_followed_by_its_nodes_offsets(two_nodes, plan_file,
                                                                   tmp_path):
    """Only the coordinator's wall clock steps (a login node's), its Dask nodes' do not: once
    the step is seen their offsets are measured again, so T0 reaches them as their clocks
    read it (else they would wait an hour, or start an hour late), and their stamps come
    back on the coordinator's clock."""
    lib = faketime_lib()
    if lib is None:
        pytest.skip("libfaketime not installed (Debian package faketime)")
    clock, steps, stepper = tmp_path / "clock", tmp_path / "steps", tmp_path / "stepper.py"
    clock.write_text("+0\n")
    steps.write_text("\n".join(STEPS))
    stepper.write_text(STEPPER)
    plan = plan_file(f"""
        name = "stepped"
        repeat = {len(STEPS)}
        noise = 0
        [placement]
        workers = 1
        [[task]]
        name = "step"
        command = ["{sys.executable}", "{stepper}", "{steps}", "{clock}"]
        timeout = 60
    """)
    out = str(tmp_path / "res")
    env = {**os.environ, "LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": str(clock),
           "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    began = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q",
                          "--scheduler", two_nodes.scheduler],
                         env=env, capture_output=True, text=True, timeout=300)
    took = time.monotonic() - began
    assert res.returncode == 0, res.stderr
    db = sqlite3.connect(os.path.join(out, "results.db"))
    found = db.execute("select message, phase from warnings where kind='clock-step' "
                       "order by seq").fetchall()
    assert [p for _, p in found] == [2, 4], found
    started, ended = db.execute("select started_ns, ended_ns from runs").fetchone()
    assert NAP_S * len(STEPS) < (ended - started) / 1e9 < took
    db.close()
    for r in export_json(out):
        assert 0 <= r["start_ns"] - r["t0_ns"] < 1e9, r
        assert NAP_S <= (r["end_ns"] - r["start_ns"]) / 1e9 < took
