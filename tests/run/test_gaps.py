"""Gaps are data: a node that kept the coordinator waiting between phases (stopped, its agent
stalled) is a stored warning naming it and the seconds lost; an unattacked run, loaded or
not, gets none (issue 28, item 11)."""
from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import subprocess
import sys
import time
from typing import Iterator

import psutil
import pytest

from cluster_lab import DaskLab
from conftest import SUITE_NOISE, stop
from waits import phases_stored, wait_phases

pytestmark = pytest.mark.e2e

STOP_S = 3.0
GAP = re.compile(r"waited ([\d.]+) s longer than usual on node (\S+?)[ ,:]")


def _db(out_dir: str) -> sqlite3.Connection:
    return sqlite3.connect(os.path.join(out_dir, "results.db"))


@contextlib.contextmanager
def _started(plan: str, out_dir: str, *extra: str) -> Iterator[subprocess.Popen]:
    """The run, in the background; stopped (by its pid) should the test fail before it ends:
    a run left going holds the lab's nodes."""
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out_dir,
                             "-q", "--set", f"noise={SUITE_NOISE}", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            stop([proc])


def _warnings(out_dir: str, kind: str) -> list[tuple[str, str, int]]:
    with _db(out_dir) as db:
        return db.execute("select node, message, phase from warnings where kind=? order by seq",
                          (kind,)).fetchall()


def _stopped(procs: list[psutil.Process], seconds: float) -> None:
    """SIGSTOP these processes (ours: the run's slots, a node's agent) for `seconds`."""
    for p in procs:
        p.suspend()
    try:
        time.sleep(seconds)     # the stall itself: what is measured, not a wait for an event
    finally:
        for p in procs:
            p.resume()


def _null_plan(plan_file, repeat: int, workers: int) -> str:
    return plan_file(f"""
        name = "gaps"
        repeat = {repeat}
        [placement]
        workers = {workers}
        [[task]]
        name = "tick"
        kernel = "null"
    """)


def test_a_stopped_node_is_a_gap_warning_naming_it_and_the_seconds(plan_file, tmp_path):
    """The local node's one slot SIGSTOPped for 3 s between phases: no slot is late against
    a peer (the stall check has none to compare with), yet the coordinator waited 3 s on the
    node. The run says so, naming the node and about the seconds, and ends 0."""
    out = str(tmp_path / "res")
    with _started(_null_plan(plan_file, 400, 1), out) as proc:
        wait_phases(out, 5, proc)
        slots = psutil.Process(proc.pid).children()
        assert len(slots) == 1, slots
        _stopped(slots, STOP_S)
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    gaps = _warnings(out, "gap")
    assert len(gaps) == 1, (gaps, err)
    node, message, phase = gaps[0]
    with _db(out) as db:
        (host,) = db.execute("select name from nodes").fetchone()
    assert node == host and phase is not None
    lost, named = GAP.search(message).groups()
    assert named == host
    assert STOP_S * 0.5 < float(lost) < STOP_S * 2, message
    assert "GAP" in err and message in err.replace("\n", " ")


def _busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def _unattacked_on_a_busy_machine(plan: str, out: str, *extra: str) -> None:
    """Two busy loops of our own on this machine's cpus: scheduling noise, not a stall."""
    loops = _busy(2)
    try:
        with _started(plan, out, *extra) as proc:
            _, err = proc.communicate(timeout=300)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    assert proc.returncode == 0, err
    assert _warnings(out, "gap") == [], err


@pytest.mark.alone     # its two busy loops would load the tests beside it
def test_an_unattacked_run_on_a_busy_machine_has_no_gap(plan_file, tmp_path):
    out = str(tmp_path / "res")
    _unattacked_on_a_busy_machine(_null_plan(plan_file, 300, 2), out)
    assert phases_stored(out) == 300


@pytest.fixture(scope="module")
def two_nodes():
    """n1, n2: Dask namespace nodes with one slot each."""
    with DaskLab(2, slots=1) as lab:
        yield lab


def _agent(lab: DaskLab, node: str) -> psutil.Process:
    """The node's agent: the `manybench.node.server` its worker started (not its slots,
    forked from it under the same command line)."""
    found = [p for p in psutil.Process(lab.workers[node].pid).children(recursive=True)
             if "manybench.node.server" in " ".join(p.cmdline())]
    agents = [p for p in found if p.ppid() not in {q.pid for q in found}]
    assert len(agents) == 1, found
    return agents[0]


def test_a_stopped_agent_of_one_dask_node_is_the_node_named(two_nodes, plan_file, tmp_path):
    """n2's agent SIGSTOPped for 3 s mid-run (a stalled serve loop is the same to the
    coordinator): the gap names n2 and about the seconds, never n1; the run ends 0."""
    out = str(tmp_path / "res")
    with _started(_null_plan(plan_file, 400, 2), out, "--scheduler",
                  two_nodes.scheduler) as proc:
        wait_phases(out, 5, proc)
        _stopped([_agent(two_nodes, "n2")], STOP_S)
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    gaps = _warnings(out, "gap")
    assert len(gaps) == 1, (gaps, err)
    node, message, _ = gaps[0]
    lost, named = GAP.search(message).groups()
    assert node == named == "n2", message
    assert STOP_S * 0.5 < float(lost) < STOP_S * 2, message


@pytest.mark.alone     # its two busy loops would load the tests beside it
def test_an_unattacked_dask_run_on_a_busy_machine_has_no_gap(two_nodes, plan_file, tmp_path):
    out = str(tmp_path / "res")
    _unattacked_on_a_busy_machine(_null_plan(plan_file, 300, 2), out,
                                  "--scheduler", two_nodes.scheduler)
    assert phases_stored(out) == 300


@pytest.mark.parametrize("kernel, flagged", [("meta.mkdir", False), ("null", True)])
def test_a_prepare_that_does_more_work_than_the_points_first_is_no_gap(kernel, flagged):
    """A kernel whose prepare lays out or clears files does different work from one repetition
    to the next: meta.mkdir's first prepare removed nothing, its next 20,000 directories (45 s
    here), and that was told as a stalled agent. Its prepare is judged against the phase's
    other nodes only; a light prepare (the same nothing every phase) against the point's
    earlier phases too."""
    from dataclasses import replace
    from builders import phase
    from manybench.run.gaps import Gaps
    gaps = Gaps()
    said = []
    for i in range(4):
        p = replace(phase(i), kernel=kernel, point="p1")
        slow = 5.0 if i == 3 else 0.01        # one node: no peers in the phase
        said += gaps.judge(p, 1_000, 1_000, {"n1": [1]}, {"n1": slow}, {"n1": 1_000})
    assert bool(said) is flagged, said
