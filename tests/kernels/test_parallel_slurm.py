"""launcher = "srun" inside a real Slurm allocation (tests/slurm_fixture.py): a job of two
ranks as one step of the allocation, each rank held until T0 and placed on its slot's cpu."""
from __future__ import annotations

import pytest

import subprocess
import sys

from conftest import export_json
from slurm_fixture import slurm  # noqa: F401  (the fixture)

pytestmark = pytest.mark.e2e   # real MPI jobs through the CLI


def test_srun_starts_the_ranks_inside_the_allocation(slurm, plan_file, tmp_path):  # noqa: F811
    plan = plan_file("""
        name = "srun"
        [placement]
        workers = 2
        [[task]]
        name = "date"
        command = ["date", "+%s%N"]
        ranks = 2
        launcher = "srun"
        timeout = "120s"
        """)
    out = tmp_path / "res"
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\ncd {tmp_path}\nexec {sys.executable} -m manybench run {plan} "
                      f"-o {out} -q\n")
    res = subprocess.run(["sbatch", "--wait", "-p", slurm.partition, "-N1", "-n2",
                          f"--output={tmp_path}/job.out", str(script)],
                         capture_output=True, text=True, timeout=600)
    log = (tmp_path / "job.out").read_text() if (tmp_path / "job.out").exists() else ""
    assert res.returncode == 0, res.stderr + log[-3000:]
    rows = export_json(str(out))
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows), rows
    first = next(r for r in rows if r["metrics"]["job_rank"] == 0)
    assert first["metrics"]["mpi_family"] == "slurm"
    stamps = [int(x) for x in first["stdout"].split()]
    assert len(stamps) == 2 and all(t >= first["t0_ns"] for t in stamps)
    assert all(r["metrics"]["cpus_allowed"] == str(r["cpu"]) for r in rows)
