"""A node whose cpu lacks instructions the build needs (issue 33 item 3) is refused at the
run's start on every way of reaching nodes, with one message naming the node, the build's
-march and what its cpu lacks, and exit 2 (DESIGN.md: nothing was run); never a SIGILL. Each
test starts the node's processes with a cpu-flags reader that reads a cpu without SSE4.2
(fake_cpu.py); the local engine's test is kernels/test_build_isa.py's."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from builders import batch_cluster
from cluster_lab import DaskLab
from conftest import run_cli
from fake_cpu import lacking_cpu, refusal_said
from netns import Lab, require_sshd
from sge_fixture import sge  # noqa: F401  (fixture)
from slurm_fixture import slurm  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

NULL = '[[task]]\nname = "n"\nkernel = "null"\n'


def _refused(res, node: str) -> None:
    assert res.returncode == 2, res.stderr[-3000:]
    assert refusal_said(res.stderr, node) and "Traceback" not in res.stderr, res.stderr[-3000:]


def _batch(queue: str, tmp_path, cpu: str, extra: str = "") -> str:
    """A [cluster] of one node job whose worker (and the agent it starts) reads the cpu."""
    return batch_cluster(queue, tmp_path,
                         lines=f'job_script_prologue = ["export PYTHONPATH={cpu}"]\n{extra}')


def test_a_dask_worker_on_a_cpu_without_the_builds_instructions_is_refused(plan_file,
                                                                           tmp_path):
    """Refused at its Info, before any node measured its noise floor (each spent the plan's
    `noise` seconds measuring it, and then the refused Start named the node twice)."""
    marks = tmp_path / "noise-measured"     # a line per noise floor measured on a node
    python = {i: ["env", f"PYTHONPATH={lacking_cpu(tmp_path / f'cpu{i}', lacking, marks)}",
                  sys.executable, "-m", "manybench"]
              for i, lacking in ((1, frozenset()), (2, frozenset({"sse4_2"})))}
    with DaskLab(2, slots=1, python=python) as lab:
        out = str(tmp_path / "res")
        res = run_cli("run", plan_file("noise = 0.4\n" + NULL), "-o", out, "--scheduler",
                      lab.scheduler, timeout=300)
    _refused(res, "n2")
    assert "node n1" not in res.stderr, res.stderr[-3000:]     # n1's cpu runs the build
    assert not marks.exists(), marks.read_text()


def test_a_host_reached_over_ssh_on_such_a_cpu_is_refused(plan_file, tmp_path):
    """Refused, and what the run shipped to the hosts is gone with it: the credentials made
    for the cluster were left in the hosts' temporary directories by every refused start
    (a run's start that failed never closed the cluster it had started)."""
    require_sshd()
    cpu = lacking_cpu(tmp_path / "cpu")
    shipped = tmp_path / "hosts-tmp"      # the hosts' $TMPDIR: where mktemp -d ships keys
    shipped.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(shipped)}
    with Lab(2) as lab:
        known, keys, hostfile = lab.ssh_logins(tmp_path, ["1", "1"], env=env)
        # the hosts' commands (the scheduler's, the workers', their agents') read the cpu
        plan = plan_file(NULL + f"""
            [cluster]
            python = "env PYTHONPATH={cpu} {sys.executable}"
            ssh = {{ username = "root", known_hosts = "{known}", client_keys = [{keys}] }}
        """)
        res = run_cli("run", plan, "-o", str(tmp_path / "res"), "-q", "--hosts",
                      str(hostfile), timeout=240)
        _refused(res, lab.ip(0))
        keys_left = sorted(str(p) for p in shipped.rglob("member.key"))
        assert not keys_left, keys_left


def test_a_slurm_job_on_such_a_cpu_is_refused(slurm, plan_file, tmp_path):  # noqa: F811
    cpu = lacking_cpu(tmp_path / "cpu")
    plan = plan_file(NULL + _batch(slurm.partition, tmp_path, cpu))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "-q", "--cluster", "slurm",
                  timeout=600, env=env)
    _refused(res, slurm.node)


def test_an_sge_job_on_such_a_cpu_is_refused(sge, plan_file, tmp_path):  # noqa: F811
    cpu = lacking_cpu(tmp_path / "cpu")
    plan = plan_file(NULL + _batch(sge.queue, tmp_path, cpu, 'job_extra_directives = ["-V"]'))
    res = run_cli("run", plan, "-o", str(tmp_path / "res"), "-q", "--cluster", "sge",
                  timeout=600)
    _refused(res, sge.node)


def test_a_run_inside_a_slurm_allocation_on_such_a_cpu_is_refused(slurm, plan_file,  # noqa: F811
                                                                 tmp_path):
    # the run's workers started with srun, in the allocation: they inherit the job's cpu
    cpu = lacking_cpu(tmp_path / "cpu")
    plan = plan_file(NULL)
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\ncd {tmp_path}\nexport PYTHONPATH={cpu}\n"
                      f"{sys.executable} -m manybench run {plan} -o {tmp_path / 'res'} -q "
                      f"--cluster slurm 2> {tmp_path / 'err'}\necho rc=$?\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    subprocess.run(["sbatch", "--wait", "-p", slurm.partition, "-N1", "-n1", "-c2",
                    f"--output={tmp_path}/job.out", str(script)], capture_output=True,
                   text=True, timeout=600, env=env)
    said = (tmp_path / "job.out").read_text()
    err = (tmp_path / "err").read_text()
    assert said.split()[-1] == "rc=2", said + err[-3000:]
    assert refusal_said(err, slurm.node), err[-3000:]     # (the workers' logs go there too)
