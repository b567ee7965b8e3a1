"""A task slow because its cpu was shared, not because it used it up: records carry how busy
their allowed cpus were (/proc/stat, kernels/binding.py), and the report and its hint say
"CPU-BOUND AT A SHARED PIN" with what others took, where a task alone at its pin keeps
"CPU-BOUND AT ITS PIN"."""
from __future__ import annotations

import os
import shutil
import subprocess

import psutil
import pytest

from conftest import export_json, run_cli
from report_text import table_text
from waits import wait_for
from manybench.kernels.binding import OTHERS_SHARE, cpu_bound, cpu_shared, others_took

TASKSET = shutil.which("taskset")

# one busy shell loop, long enough to hold many /proc/stat ticks beside another busy process
ONE_LOOP = """
    [[task]]
    name = "one"
    command = ["sh", "-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"]
    """


def _running(p: psutil.Process, cpu: int) -> bool:
    """The busy loop is on its cpu alone and has run there."""
    return p.cpu_affinity() == [cpu] and sum(p.cpu_times()[:2]) > 0


@pytest.mark.alone     # the cpu's use is the figure: only the test's own busy loop shares it
@pytest.mark.e2e
@pytest.mark.skipif(TASKSET is None, reason="taskset is not installed")
def test_a_task_whose_cpu_another_process_keeps_busy_is_flagged_at_a_shared_pin(plan_file,
                                                                                 tmp_path):
    cpu = max(os.sched_getaffinity(0))
    loop = subprocess.Popen([TASKSET, "-c", str(cpu), "sh", "-c", "while :; do :; done"])
    try:
        wait_for(lambda: _running(psutil.Process(loop.pid), cpu),
                 f"the busy loop running on cpu {cpu}", proc=loop)
        out = str(tmp_path / "res")
        # the run itself held to that cpu: its slot's pin is that cpu
        res = run_cli("run", plan_file(ONE_LOOP), "-o", out, "-q",
                      preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        assert res.returncode == 0, res.stderr
        (row,) = export_json(out)
        m = row["metrics"]
        assert m["cpus_allowed"] == str(cpu)
        assert m["cpus_busy_share"] >= 0.9, m          # the loop and the task: always busy
        assert others_took(m) >= OTHERS_SHARE, m       # the loop took a good share of it
        assert cpu_shared(m) and not cpu_bound(m)
        rep = run_cli("report", out, "--all").stdout
        told = run_cli("report", out).stdout.replace("\n", " ")
    finally:
        loop.kill()
        loop.wait()
    cell = table_text(rep)
    assert f"CPU-BOUND AT A SHARED PIN: others took {others_took(m):.2f} of its cpus" in cell, rep
    assert "AT ITS PIN" not in cell, rep
    assert "other load on its node" in rep.replace("\n", " "), rep
    # the warning names what ran there: the loop among what was runnable on that cpu
    assert "running there as the window ended:" in told and f"(pid {loop.pid})" in told, told
