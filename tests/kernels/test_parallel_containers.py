"""Parallel tasks inside containers: a variant's `wrap` of Charliecloud's ch-run between the
launcher and the program, into a directory image holding mbmpi and a copy of this machine's
Open MPI (kernels/mpi_image.py). Every rank is still held in MPI_Init inside the container
and released at T0; one container per rank, or one per node that all its ranks join."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import export_json, run_cli

pytestmark = pytest.mark.e2e   # real MPI jobs in real containers through the CLI

CH_RUN = shutil.which("ch-run")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """(image directory, mbmpi's path inside it)."""
    if CH_RUN is None:
        pytest.skip("charliecloud not installed (ch-run: Debian charliecloud-runtime)")
    if not shutil.which("mpicc.openmpi") or not shutil.which("mpirun.openmpi"):
        pytest.skip("openmpi not installed (Debian openmpi-bin libopenmpi-dev)")
    from manybench.kernels.mpi_image import build_image
    from manybench.kernels.mpi_program import build
    os.environ.setdefault("USER", "root")   # ch-run needs USER
    img = str(tmp_path_factory.mktemp("img") / "mpi")
    inside = build_image(img, build("openmpi"), "openmpi")
    return img, inside


def _run(plan_file, tmp_path, text: str) -> list[dict]:
    out = str(tmp_path / "res")
    done = run_cli("run", plan_file(text), "-o", out, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return export_json(out)


def test_an_mpi_job_runs_in_containers_each_rank_held_until_t0(image, plan_file, tmp_path):
    img, mbmpi = image
    recs = _run(plan_file, tmp_path, f"""
        name = "ch-mpi"
        [placement]
        workers = 2
        [[task]]
        name = "lat"
        command = ["{{mbmpi}}", "latency", "-m", "64", "-i", "50", "-x", "5"]
        ranks = 2
        launcher = "mpirun.openmpi"
        parse = "osu"
        timeout = "120s"
        [[variant]]
        name = "host"
        vars = {{ mbmpi = "{img}{mbmpi}" }}
        [[variant]]
        name = "container"
        wrap = ["ch-run", "-b", "{{scratch}}", "{{image}}", "--"]
        vars = {{ image = "{img}", mbmpi = "{mbmpi}" }}
        """)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs), \
        [(r["variant"], r["error"]) for r in recs]
    for r in recs:
        assert r["metrics"]["mpi_sync"] == "MPI_Init"      # mbmpi, not ch-run, was held
        assert r["start_ns"] >= r["t0_ns"]
        assert r["metrics"]["cpus_allowed"] == str(r["cpu"])
    firsts = {r["variant"]: r for r in recs if r["metrics"]["job_rank"] == 0}
    assert set(firsts) == {"host", "container"}
    for first in firsts.values():
        assert first["metrics"]["latency_us"] > 0 and first["metrics"]["max_size_bytes"] == 64


def test_one_container_per_node_or_one_per_rank(image, plan_file, tmp_path):
    """ch-run --join puts a node's ranks of a job in one container (one user namespace), so
    Open MPI's shared-memory transport keeps its single copy (CMA); a container per rank
    cannot, and Open MPI says so. The join tag is the job's own (run, phase, first slot)."""
    img, mbmpi = image
    recs = _run(plan_file, tmp_path, f"""
        name = "ch-join"
        [placement]
        workers = 4
        [[task]]
        name = "lat"
        command = ["{mbmpi}", "latency", "-m", "64", "-i", "50", "-x", "5"]
        ranks = 2
        launcher = "mpirun.openmpi"
        parse = "osu"
        timeout = "120s"
        [[variant]]
        name = "per-rank"
        wrap = ["ch-run", "-b", "{{scratch}}", "{{image}}", "--"]
        vars = {{ image = "{img}" }}
        [[variant]]
        name = "per-node"
        wrap = ["ch-run", "--join-tag={{run}}.{{phase}}.{{slot}}", "--join-ct={{ranks}}",
                "-b", "{{scratch}}", "{{image}}", "--"]
        vars = {{ image = "{img}" }}
        """)
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs), \
        [(r["variant"], r["error"]) for r in recs]
    assert all(r["metrics"]["mpi_sync"] == "MPI_Init" for r in recs)
    # each rank's namespaces are read from /proc: which ranks shared a container
    for first in (r for r in recs if r["metrics"]["job_rank"] == 0):    # two jobs each
        mine = [r for r in recs if (r["phase"], r["metrics"]["job"]) ==
                (first["phase"], first["metrics"]["job"])]
        users = {r["metrics"]["user_ns"] for r in mine}
        assert first["metrics"]["job_mount_namespaces"] == len(users)
        assert len(users) == (2 if first["variant"] == "per-rank" else 1)
    # and no job shares a container with another
    joined = [r for r in recs if r["variant"] == "per-node"]
    assert len({r["metrics"]["user_ns"] for r in joined}) == len(joined) // 2
    host_ns = os.readlink("/proc/self/ns/user")
    assert all(r["metrics"]["user_ns"] != host_ns for r in recs)


def test_a_wrap_that_hides_the_runs_directory_is_told_what_to_bind(image, plan_file,
                                                                   tmp_path):
    """The ranks load libmbrank.so from the run's directory: a container that does not see it
    (a private /tmp, no bind) cannot hold them, and the record says what the wrap lacks."""
    img, mbmpi = image
    out = str(tmp_path / "res")
    done = run_cli("run", plan_file(f"""
        name = "ch-hidden"
        [placement]
        workers = 2
        [[task]]
        name = "lat"
        command = ["{mbmpi}", "latency", "-m", "8", "-i", "20", "-x", "2"]   # short: it runs unheld
        ranks = 2
        launcher = "mpirun.openmpi"
        timeout = "60s"
        [[variant]]
        name = "hidden"
        wrap = ["ch-run", "--private-tmp", "{{image}}", "--"]
        vars = {{ image = "{img}" }}
        """), "-o", out, timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]
    recs = export_json(out)
    first = min(recs, key=lambda r: r["slot"])      # the job's rank 0: its launcher's account
    assert first["status"] == "error"
    assert "bind {scratch}" in first["error"], first["error"]


CXX_PROGRAM = """
#include <iostream>
#include <string>
int main() { std::string s = "from C++"; std::cout << s << std::endl; return 0; }
"""


def test_a_program_added_to_the_image_brings_what_it_loads(tmp_path):
    """`mpi-build --image DIR --add PROGRAM` puts a C++ program in the image with libstdc++
    (issue 31, defect 7: IMB copied in by hand failed with "libstdc++.so.6: cannot open
    shared object file"); ch-run runs it inside."""
    if CH_RUN is None:
        pytest.skip("charliecloud not installed (ch-run: Debian charliecloud-runtime)")
    if not shutil.which("mpicc.openmpi") or not shutil.which("g++"):
        pytest.skip("openmpi or g++ not installed (Debian openmpi-bin libopenmpi-dev g++)")
    src, prog, img = tmp_path / "hello.cc", str(tmp_path / "hello"), str(tmp_path / "img")
    src.write_text(CXX_PROGRAM)
    subprocess.run(["g++", "-O1", "-o", prog, str(src)], check=True, capture_output=True)
    assert "libstdc++" in subprocess.run(["ldd", prog], capture_output=True, text=True).stdout
    done = run_cli("mpi-build", "--family", "openmpi", "--image", img, "--add", prog)
    assert done.returncode == 0, done.stderr
    ran = subprocess.run([CH_RUN, img, "--", "/usr/local/bin/hello"], capture_output=True,
                         text=True, env={**os.environ, "USER": os.environ.get("USER", "root")},
                         timeout=60)
    assert ran.returncode == 0 and ran.stdout == "from C++\n", ran.stderr
    # --add without an image is a usage error naming both options
    alone = run_cli("mpi-build", "--family", "openmpi", "--add", prog)
    assert alone.returncode == 2 and "--add" in alone.stderr and "--image" in alone.stderr
