"""Real MPI programs from Debian as parallel tasks at tiny sizes: HPL from HPC Challenge
(hpcc) and LAMMPS's Lennard-Jones benchmark (lmp, our copy of bench/in.lj with the box and
step count as variables). Both packages link Open MPI."""
from __future__ import annotations

import os
import shutil

import pytest

from conftest import export_json, run_cli
from suite_paths import FIXTURES

pytestmark = pytest.mark.e2e   # real MPI jobs through the CLI

IN_LJ = str(FIXTURES / "lammps" / "in.lj")
HPCC_IN = "/usr/share/doc/hpcc/examples/_hpccinf.txt"
need_openmpi = pytest.mark.skipif(not shutil.which("mpirun.openmpi"),
                                  reason="openmpi not installed (Debian openmpi-bin)")


def _run(plan_file, tmp_path, text: str) -> list[dict]:
    out = str(tmp_path / "res")
    done = run_cli("run", plan_file(text), "-o", out, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return export_json(out)


@need_openmpi
@pytest.mark.skipif(not shutil.which("hpcc") or not os.path.exists(HPCC_IN),
                    reason="hpcc not installed (Debian hpcc)")
def test_hpl_from_hpcc_runs_as_two_ranks(plan_file, tmp_path):
    # each rank starts in its own {scratch}: the shell writes the input there, hpcc is the
    # rank (the MPI-linked program behind the shell), rank 0 prints HPL's output
    recs = _run(plan_file, tmp_path, f"""
        name = "hpl"
        [placement]
        workers = 2
        [[task]]
        name = "hpl"
        ranks = 2
        launcher = "mpirun.openmpi"
        parse = "hpl"
        timeout = "300s"
        command = ["sh", "-c", "sed -e '6s/^[0-9]*/200 /' -e '8s/^[0-9]*/32 /' -e '11s/^[0-9]*/1 /' -e '12s/^[0-9]*/2 /' {HPCC_IN} > hpccinf.txt && hpcc && cat hpccoutf.txt"]
        """)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs), recs
    assert all(r["metrics"]["mpi_sync"] == "MPI_Init" for r in recs)   # hpcc, not the shell
    first = next(r for r in recs if r["metrics"]["job_rank"] == 0)
    m = first["metrics"]
    assert m["n"] == 200 and m["p"] * m["q"] == 2 and m["gflops"] > 0
    assert m["residual_passed"] == 1


@need_openmpi
@pytest.mark.skipif(not shutil.which("lmp"), reason="lammps not installed (Debian lammps)")
def test_lammps_lennard_jones_runs_as_two_ranks(plan_file, tmp_path):
    recs = _run(plan_file, tmp_path, f"""
        name = "lj"
        [placement]
        workers = 2
        [[task]]
        name = "lj"
        ranks = 2
        launcher = "mpirun.openmpi"
        command = ["lmp", "-in", "{IN_LJ}", "-var", "size", "4", "-var", "steps", "20",
                   "-log", "none"]
        metrics.loop_s = 'Loop time of (?P<value>[\\d.eE+-]+) on'
        metrics.procs = 'Loop time of \\S+ on (?P<value>\\d+) procs'
        metrics.steps_per_s = '(?P<value>[\\d.]+) timesteps/s'
        """)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs), recs
    first = next(r for r in recs if r["metrics"]["job_rank"] == 0)
    m = first["metrics"]
    assert m["procs"] == 2 and m["loop_s"] > 0 and m["steps_per_s"] > 0
    assert {r["metrics"]["cpus_allowed"] for r in recs} == {str(r["cpu"]) for r in recs}
