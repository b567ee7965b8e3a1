"""A real Grid Engine on this machine (scripts/sge-local.sh): jobs run, and `--cluster sge`
starts manybench's workers as Grid Engine jobs (dask-jobqueue's SGECluster), with a per-slot
GPU-like resource map (Grid Engine's RSMAP: each concurrent slot its own id)."""
from __future__ import annotations

import subprocess

import pytest

from builders import batch_cluster
from conftest import export_json, run_cli
from sge_fixture import sge  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def _cluster(sge, tmp_path, extra: str = "") -> str:  # noqa: F811
    # -V: the job gets the submitter's environment (PYTHONPATH of a source checkout)
    return batch_cluster(sge.queue, tmp_path, slots=4,
                         lines=f'job_extra_directives = ["-V"{extra}]')


def test_qsub_job_runs_on_the_node(sge, tmp_path):  # noqa: F811
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho job=$JOB_ID host=$(hostname -s)\n")
    out = subprocess.run(["qsub", "-sync", "y", "-q", sge.queue, "-o", str(tmp_path / "out"),
                          "-e", str(tmp_path / "err"), "-cwd", str(script)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr + out.stdout
    job = out.stdout.split("Your job ")[1].split()[0]
    assert (tmp_path / "out").read_text().split() == [f"job={job}", f"host={sge.node}"]


def test_cluster_sge_runs_a_plan_in_grid_engine_jobs(sge, plan_file, tmp_path):  # noqa: F811
    plan = plan_file("""
repeat = 2
[placement]
workers = [1, 2]
[[task]]
name = "sync"
kernel = "null"
""" + _cluster(sge, tmp_path))
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q", "--cluster", "sge", timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = export_json(out)
    assert len(rows) == 2 * (1 + 2)
    assert {r["status"] for r in rows} == {"ok"}
    assert len({r["node"] for r in rows}) == 1


def test_cluster_sge_gives_each_slot_its_own_gpu_id(sge, plan_file, tmp_path):  # noqa: F811
    """[placement.resources] gpu over 4 concurrent slots of one Grid Engine job (which holds
    the host's 4 'gpu' consumables): ids 0..3, one per slot, in CUDA_VISIBLE_DEVICES; the
    slots ran inside that job (JOB_ID)."""
    plan = plan_file("""
repeat = 2
[placement]
workers = [4]
pin = "none"
[placement.resources]
gpu = [0, 1, 2, 3]
[[task]]
name = "gpus"
command = ["sh", "-c", "echo gpu=$CUDA_VISIBLE_DEVICES job=$JOB_ID"]
metrics.gpu = 'gpu=(?P<value>\\d+)'
metrics.job = 'job=(?P<value>\\d+)'
""" + _cluster(sge, tmp_path, ', "-l gpu=4"'))
    out = str(tmp_path / "res")
    res = run_cli("run", plan, "-o", out, "-q", "--cluster", "sge", timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = export_json(out)
    assert len(rows) == 2 * 4 and {r["status"] for r in rows} == {"ok"}
    for phase in {r["phase"] for r in rows}:
        ids = sorted(r["metrics"]["gpu"] for r in rows if r["phase"] == phase)
        assert ids == [0, 1, 2, 3], ids          # distinct: each slot its own device
    jobs = {r["metrics"]["job"] for r in rows}
    assert len(jobs) == 1 and jobs != {0}, jobs   # all inside one Grid Engine job
