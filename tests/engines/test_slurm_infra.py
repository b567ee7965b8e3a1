"""The local Slurm the tests rely on really runs jobs: sbatch (with a job step) and salloc + srun."""
from __future__ import annotations

import subprocess

import pytest

from slurm_fixture import slurm  # noqa: F401  (pytest fixture)

# The first test may pay for installing and starting Slurm (apt-get) in the fixture's setup.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_sbatch_wait_job_writes_a_file(slurm, tmp_path):  # noqa: F811
    result = tmp_path / "result.txt"
    script = f"echo job=$SLURM_JOB_ID > {result}\nsrun -n1 hostname -s >> {result}\n"
    out = subprocess.run(
        ["sbatch", "--wait", "--parsable", "-p", slurm.partition, "-N1", "-n1", "-t", "5",
         f"--chdir={tmp_path}", f"--output={tmp_path}/job.out", "--wrap", script],
        capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr + (tmp_path / "job.out").read_text(errors="replace")
    job_id = out.stdout.strip().split(";")[0]
    assert result.read_text().split() == [f"job={job_id}", slurm.node]


def test_salloc_srun_runs_on_the_node(slurm):  # noqa: F811
    out = subprocess.run(["salloc", "-N1", "-n1", "-p", slurm.partition, "-t", "5",
                          "srun", "hostname", "-s"],
                         capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == slurm.node
    assert "Granted job allocation" in out.stderr
