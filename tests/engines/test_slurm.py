"""A real Slurm on this machine: workers as batch jobs (dask-jobqueue), and a run from
inside an allocation whose nodes and slots come from the allocation."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from builders import batch_cluster
from conftest import export_json, run_cli
from slurm_fixture import slurm  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

NULL_PLAN = """
repeat = 3
[placement]
workers = [1, 2]
[[task]]
name = "sync"
kernel = "null"
"""


def test_cluster_slurm_submits_worker_jobs(slurm, plan_file, tmp_path):
    plan = plan_file(NULL_PLAN + batch_cluster(slurm.partition, tmp_path))
    out = str(tmp_path / "res")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    res = run_cli("run", plan, "-o", out, "-q", "--cluster", "slurm", timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = export_json(out)
    assert len(rows) == 3 * (1 + 2)
    assert {r["status"] for r in rows} == {"ok"}
    assert len({r["node"] for r in rows}) == 1


def test_run_inside_an_allocation_uses_srun(slurm, plan_file, tmp_path):
    plan = plan_file(NULL_PLAN)
    out = tmp_path / "res"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\ncd {tmp_path}\nexec {sys.executable} -m manybench run {plan} "
                      f"-o {out} -q --cluster slurm\n")
    res = subprocess.run(["sbatch", "--wait", "-p", slurm.partition, "-N1", "-n1", "-c2",
                          f"--output={tmp_path}/job.out", str(script)],
                         capture_output=True, text=True, timeout=600)
    log = (tmp_path / "job.out").read_text() if (tmp_path / "job.out").exists() else ""
    assert res.returncode == 0, res.stderr + log[-3000:]
    rows = export_json(str(out))
    assert len(rows) == 3 * (1 + 2)
    assert {r["status"] for r in rows} == {"ok"}
    assert {r["node"] for r in rows} == {slurm.node}
