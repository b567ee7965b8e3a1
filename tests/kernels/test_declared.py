"""Every metric a built-in kernel's records carry is declared (kernels/figures.py), so the
report, the JSON summary, comparisons and hints know its unit and role: a real run of every
kernel family at a tiny size, its records checked against the declarations."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import export_json, run_cli
from suite_paths import FIXTURES
from manybench.kernels import figures as F
from manybench.kernels import kernel

PLAN = """
name = "declared"
[[task]]
name = "sync"
kernel = "null"
[[task]]
name = "w"
kernel = "io.write"
dir = "{tmp}"
size = "1MiB"
[[task]]
name = "r"
kernel = "io.read"
dir = "{tmp}"
size = "1MiB"
[[task]]
name = "rr"
kernel = "io.randread"
dir = "{tmp}"
size = "1MiB"
duration = "50ms"
[[task]]
name = "md"
kernel = "meta.mkdir"
dir = "{tmp}"
total = 20
[[task]]
name = "st"
kernel = "mem.stream"
elements = 20000
ntimes = 2
[[task]]
name = "hi"
kernel = "cpu.himeno"
grid = "XS"
iterations = 2
[[task]]
name = "cmd"
command = ["true"]
"""
PAIRS = """
name = "pairs"
[placement]
workers = 2
[[task]]
name = "pp"
kernel = "net.pingpong"
iterations = 100
[[task]]
name = "ns"
kernel = "net.stream"
size = "1MiB"
[[task]]
name = "dg"
kernel = "cpu.dgemm"
n = 64
repeat = 2
"""


@pytest.mark.e2e
def test_every_metric_of_every_kernels_records_is_declared(tmp_path, plan_file):
    rows = []
    for i, plan in enumerate((PLAN, PAIRS)):
        out = str(tmp_path / f"res{i}")
        res = run_cli("run", plan_file(plan, f"plan{i}.toml"), "-o", out, "-q")
        assert res.returncode == 0, res.stderr
        rows += export_json(out)
    assert {r["kernel"] for r in rows} == {"null", "io.write", "io.read", "io.randread",
                                           "meta.mkdir", "mem.stream", "cpu.himeno", "command",
                                           "net.pingpong", "net.stream", "cpu.dgemm"}
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows if r["error"]]
    undeclared = sorted({(r["kernel"], name) for r in rows for name, v in r["metrics"].items()
                         if isinstance(v, (int, float)) and not F.latency_metric(name)
                         and kernel(r["kernel"]).figure(name) is None})
    assert undeclared == []


@pytest.mark.e2e
def test_every_metric_of_an_mpi_jobs_records_is_declared(tmp_path, plan_file):
    """A parallel task's ranks carry the job's bookkeeping (where each rank ran, how it was
    held, the launcher) beside the program's figures: every one of them is declared."""
    if not shutil.which("mpicc.openmpi") or not shutil.which("mpirun.openmpi"):
        pytest.skip("openmpi not installed (mpicc.openmpi, mpirun.openmpi: Debian openmpi-bin "
                    "libopenmpi-dev)")
    probe = str(tmp_path / "probe")
    src = str(FIXTURES / "mpi" / "probe.c")
    subprocess.run(["mpicc.openmpi", "-O1", "-fopenmp", "-o", probe, src], check=True)
    out = str(tmp_path / "res")
    plan = f"""
name = "declared-mpi"
[placement]
workers = 2
[[task]]
name = "job"
command = ["{probe}"]
ranks = 2
launcher = "mpirun.openmpi"
"""
    res = run_cli("run", plan_file(plan), "-o", out, "-q", timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    rows = export_json(out)
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows)
    undeclared = sorted({(r["kernel"], name) for r in rows for name, v in r["metrics"].items()
                         if isinstance(v, (int, float)) and not F.latency_metric(name)
                         and kernel(r["kernel"]).figure(name) is None})
    assert undeclared == []
