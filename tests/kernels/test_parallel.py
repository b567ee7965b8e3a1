"""Parallel tasks (ranks = N) with real Open MPI and real MPICH on the local engine: jobs of 1,
2 and 4 ranks, two jobs in one phase, spread and pack, hybrid ranks x threads, a program
that is not MPI-linked, a rank that dies, a job that hangs until its timeout."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import run_cli
from mpi_helpers import FAMILIES, _alive, _by_phase, _probes, build_probe, run_plan
from waits import LEFTOVER_S, wait_for

pytestmark = pytest.mark.e2e   # real MPI jobs through the CLI


@pytest.fixture(scope="module", params=list(FAMILIES))
def mpi(request, tmp_path_factory):
    """(family, launcher, probe executable) built with that family's mpicc."""
    return build_probe(request.param, tmp_path_factory)


def _by_task(recs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in recs:
        out.setdefault(r["task"], []).append(r)
    return out


def test_jobs_of_1_2_4_ranks_start_at_t0_on_their_slots(mpi, plan_file, tmp_path):
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, f"""
        name = "ranks"
        [placement]
        workers = 4
        order = ["spread", "pack"]
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = [1, 2, 4]
        launcher = "{launcher}"
        """, tmp_path)
    phases = _by_phase(recs)
    assert len(phases) == 6     # 3 rank counts x 2 orders
    for rs in phases.values():
        n = rs[0]["params"]["ranks"]
        assert len(rs) == 4 and all(r["status"] == "ok" for r in rs), rs
        assert all(r["kernel"] == "mpi" for r in rs)
        assert {r["metrics"]["job"] for r in rs} == set(range(4 // n))   # workers / ranks
        for r in rs:       # phase rank r is rank r % n of job r // n
            assert (r["metrics"]["job"], r["metrics"]["job_rank"]) == divmod(r["slot"], n)
        # every rank is a process of its own, held in MPI_Init, started at or after T0
        assert len({r["metrics"]["rank_pid"] for r in rs}) == 4
        assert all(r["start_ns"] >= r["t0_ns"] for r in rs)
        assert all(r["metrics"]["mpi_sync"] == "MPI_Init" for r in rs)
        assert all(r["metrics"]["mpi_init_s"] > 0 for r in rs)
        # where each rank ran, read back from /proc of the rank: its slot's cpu
        for r in rs:
            assert r["metrics"]["cpus_allowed"] == str(r["cpu"])
            assert r["metrics"]["cpu_start"] == r["cpu"]
        # each job's launcher, its family and its output are on the job's rank-0 record
        firsts = [r for r in rs if r["metrics"]["job_rank"] == 0]
        assert len(firsts) == 4 // n
        for first in firsts:
            m = first["metrics"]
            assert m["mpi_family"] == fam and m["exit_status"] == 0
            assert m["launcher"].endswith(launcher) and m["mpi_version"]
            lines = _probes(first["stdout"])
            assert sorted(int(p["rank"]) for p in lines) == list(range(n))
            assert all(p["of"] == str(n) for p in lines)
            assert m["job_startup_s"] > 0
            assert ("job_skew_s" in m) == (n > 1)


def test_two_jobs_in_one_phase_each_with_its_own_ranks_released_at_t0(mpi, plan_file,
                                                                        tmp_path):
    """Each launcher's output holds its own ranks only, and every rank's MPI_Init returned at
    T0 or after (the rank's own clock, read right after MPI_Init)."""
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, f"""
        name = "two-jobs"
        [placement]
        workers = 4
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = 2
        launcher = "{launcher}"
        """, tmp_path)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    firsts = [r for r in recs if r["metrics"]["job_rank"] == 0]
    assert len(firsts) == 2
    pids = {r["metrics"]["rank_pid"] for r in recs}
    seen: set[int] = set()
    for first in firsts:
        lines = _probes(first["stdout"])
        assert sorted(int(p["rank"]) for p in lines) == [0, 1]
        assert all(p["of"] == "2" for p in lines)
        mine = {int(p["pid"]) for p in lines}
        assert mine <= pids and not mine & seen      # its own ranks, no other job's
        seen |= mine
        assert all(int(p["init_ns"]) >= first["t0_ns"] for p in lines)
    # how far apart the two jobs began: on the first job's rank 0, from the jobs' first starts
    lead = min(firsts, key=lambda r: r["metrics"]["job"])
    starts = [min(r["start_ns"] for r in recs if r["metrics"]["job"] == j["metrics"]["job"])
              for j in firsts]
    assert lead["metrics"]["jobs_skew_s"] == pytest.approx((max(starts) - min(starts)) / 1e9)
    assert sum("jobs_skew_s" in r["metrics"] for r in recs) == 1


def test_hybrid_ranks_get_their_slots_cpus_and_threads(mpi, plan_file, tmp_path):
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, f"""
        name = "hybrid"
        [placement]
        workers = 2
        cpus = 2
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = 2
        launcher = "{launcher}"
        """, tmp_path)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    cpus = len(os.sched_getaffinity(0))
    for r in recs:
        assert r["metrics"]["cpus_allowed"] == f"0-{cpus - 1}"
    lines = _probes(next(r for r in recs if r["metrics"]["job_rank"] == 0)["stdout"])
    assert [(p["cpus"], p["threads"]) for p in lines] == [(str(cpus), str(cpus))] * 2


def test_a_program_not_mpi_linked_is_held_before_main(mpi, plan_file, tmp_path):
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, f"""
        name = "plain"
        [placement]
        workers = 2
        [[task]]
        name = "date"
        command = ["date", "+%s%N"]
        ranks = 2
        launcher = "{launcher}"
        """, tmp_path)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs)
    assert all(r["metrics"]["mpi_sync"] == "main" and "mpi_init_s" not in r["metrics"]
               for r in recs)
    first = next(r for r in recs if r["metrics"]["job_rank"] == 0)
    stamps = [int(x) for x in first["stdout"].split()]
    assert len(stamps) == 2 and all(t >= first["t0_ns"] for t in stamps)


def test_a_job_that_ends_without_its_ranks_held_says_its_start_was_not_synchronized(
        mpi, plan_file, tmp_path):
    """A shell that runs only programs that are not MPI-linked: the shell is let through and
    its child is a helper, so no rank is ever held; the job runs to its end before T0. Its
    records say the start was not synchronized and why (not only that the launcher exited),
    and keep the output."""
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, f"""
        name = "unheld"
        [placement]
        workers = 2
        [[task]]
        name = "sh"
        command = ["sh", "-c", "date +%s%N"]
        ranks = 2
        timeout = "60s"
        launcher = "{launcher}"
        """, tmp_path, expect=1)
    first = next(r for r in recs if r["slot"] == 0)
    assert "not synchronized" in first["error"], first["error"]
    assert "not MPI-linked" in first["error"] and "exec" in first["error"]
    stamps = first["error"].rsplit(": ", 1)[1].split()   # both ranks ran: output kept
    assert len(stamps) == 2 and all(s.isdigit() for s in stamps), first["error"]
    other = next(r for r in recs if r["slot"] == 1)
    assert "not synchronized" in other["error"], other["error"]
    # what the message advises: exec'd by the shell, the program is the rank, held before
    # main() and released at T0
    recs = run_plan(plan_file, f"""
        name = "held"
        [placement]
        workers = 2
        [[task]]
        name = "sh"
        command = ["sh", "-c", "exec date +%s%N"]
        ranks = 2
        timeout = "60s"
        launcher = "{launcher}"
        """, tmp_path / "exec")
    assert all(r["status"] == "ok" and r["metrics"]["mpi_sync"] == "main" for r in recs), \
        [(r["status"], r["error"]) for r in recs]


def test_a_statically_linked_program_is_refused_with_the_reason(mpi, plan_file, tmp_path):
    from manybench.kernels.mpi_job import statically_linked
    from manybench.kernels.wrapped import executable
    fam, launcher, probe = mpi
    static = executable()          # mbkernel links statically where it can
    if not statically_linked(static):
        pytest.skip("mbkernel did not link statically here (no static libc)")
    recs = run_plan(plan_file, f"""
        name = "static"
        [placement]
        workers = 1
        [[task]]
        name = "static"
        command = ["{static}"]
        ranks = 1
        launcher = "{launcher}"
        """, tmp_path, expect=1)
    assert recs[0]["status"] == "error" and "statically linked" in recs[0]["error"]


@pytest.mark.alone     # which slot sees its rank die first is a race under others' load
def test_a_rank_that_dies_is_named_and_the_next_phase_runs(mpi, plan_file, tmp_path):
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, f"""
        name = "dies"
        [placement]
        workers = 2
        [[task]]
        name = "dies"
        command = ["{probe}", "{{how}}"]
        how = ["kill", "exit"]
        ranks = 2
        launcher = "{launcher}"
        [[task]]
        name = "after"
        command = ["{probe}"]
        ranks = 2
        launcher = "{launcher}"
        """, tmp_path, expect=1)
    tasks = _by_task(recs)
    assert all(r["status"] == "ok" for r in tasks["after"])
    for rs in _by_phase(tasks["dies"]).values():
        assert all(r["status"] == "error" for r in rs), rs
        first = next(r for r in rs if r["metrics"]["job_rank"] == 0)
        second = next(r for r in rs if r["metrics"]["job_rank"] == 1)
        # the launcher's own account is kept on the job's first record
        assert "the launcher" in first["error"] and (first["stderr"] or first["stdout"])
        assert second["error"].startswith("rank 1")
        if rs[0]["params"]["how"] == "kill":
            assert "9" in second["error"]
    if fam == "openmpi":     # it names the rank and the signal or the status
        errs = {r["params"]["how"]: r["error"] for r in tasks["dies"]
                if r["metrics"]["job_rank"] == 1}
        assert "signal 9" in errs["kill"] and "exit status 3" in errs["exit"]


@pytest.mark.alone     # the job's slots' shared deadline: under load one rank read as an error
@pytest.mark.parametrize("ranks", [2, 4])
def test_a_hanging_job_is_ended_by_its_timeout_with_nothing_left(mpi, ranks, plan_file,
                                                                 tmp_path):
    """Every rank's slot reaches the same deadline; the first to act kills its rank and the
    launcher stops the others a moment later: all of them were ended by the timeout (4 ranks
    on 2 cpus make that order all but certain)."""
    fam, launcher, probe = mpi
    hang = tmp_path / "hang-probe"     # a path of this test's own, to find its processes
    shutil.copy(probe, hang)
    recs = run_plan(plan_file, f"""
        name = "hangs"
        [placement]
        workers = {ranks}
        [[task]]
        name = "hangs"
        command = ["{hang}", "hang"]
        ranks = {ranks}
        timeout = "3s"
        launcher = "{launcher}"
        [[task]]
        name = "after"
        command = ["{probe}"]
        ranks = 2
        launcher = "{launcher}"
        """, tmp_path, expect=1)
    tasks = _by_task(recs)
    assert all(r["status"] == "timeout" for r in tasks["hangs"]), \
        [(r["slot"], r["status"], r["error"]) for r in tasks["hangs"]]
    assert all(r["status"] == "ok" for r in tasks["after"])
    assert _alive(str(hang)) == [] and _alive(str(tmp_path / "res")) == []


def test_a_launcher_that_hangs_at_start_up_is_ended_by_its_start_up_bound(plan_file,
                                                                         tmp_path):
    """No MPI needed: a launcher that says it is Open MPI, says why it is stuck and never
    starts anything. Its start-up bound is the task's `startup_timeout`, not its `timeout`
    (2 h here), and what it said is kept."""
    fake = tmp_path / "fake-mpirun"
    fake.write_text('#!/bin/sh\ncase "$1" in --version) echo "mpirun (Open MPI) 4.1.4";; '
                    '*) echo "fake: waiting for a daemon that never calls" >&2; '
                    'exec sleep 1000;; esac\n')
    fake.chmod(0o755)
    recs = run_plan(plan_file, f"""
        name = "stuck"
        [placement]
        workers = 2
        [[task]]
        name = "stuck"
        command = ["hostname"]
        ranks = 2
        timeout = "2h"
        startup_timeout = "2s"
        launcher = "{fake}"
        [[task]]
        name = "after"
        kernel = "null"
        """, tmp_path, expect=1)
    tasks = _by_task(recs)
    first, second = sorted(tasks["stuck"], key=lambda r: r["slot"])
    assert first["status"] == "error" and "not ready within 2s" in first["error"]
    assert "fake: waiting for a daemon that never calls" in first["error"], first["error"]
    assert "fake: waiting for a daemon" in first["stderr"]
    assert second["status"] == "error" and ("not ready" in second["error"]
                                            or "did not start" in second["error"])
    assert all(r["status"] == "ok" for r in tasks["after"])
    assert _alive(str(fake)) == [] and _alive(str(tmp_path / "res")) == []


def test_a_rank_gone_before_it_was_ready_is_told_with_what_its_launcher_said(mpi, plan_file,
                                                                              tmp_path):
    """Every rank exits before MPI_Init: the first slot's record says so, with the launcher's
    exit status and the tail of its output (the ranks' own message). It said only that the
    rank had ended, which hid why (seen once under MPICH in a parallel test run)."""
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, f"""
        name = "early"
        [placement]
        workers = 2
        [[task]]
        name = "probe"
        command = ["{probe}", "early"]
        ranks = 2
        timeout = "60s"
        launcher = "{launcher}"
        """, tmp_path, expect=1)
    first = next(r for r in recs if r["metrics"].get("job_rank", r["slot"]) == 0)
    assert first["status"] == "error"
    assert "ended before it was ready" in first["error"] or \
        "exited with status 4 before rank 0" in first["error"], first["error"]
    assert f"the launcher {launcher} exited with status 4" in first["error"], first["error"]
    assert "probe: leaving before MPI_Init" in first["error"], first["error"]


def test_a_variant_wrap_goes_between_the_launcher_and_the_program(mpi, plan_file, tmp_path):
    """A variant's wrap (a container launcher, say) runs each rank's program inside it:
    `launcher ... wrap... program`; the program behind it is still held in MPI_Init."""
    fam, launcher, probe = mpi
    recs = run_plan(plan_file, f"""
        name = "wrapped"
        [placement]
        workers = 2
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = 2
        launcher = "{launcher}"
        [[variant]]
        name = "plain"
        [[variant]]
        name = "wrapped"
        wrap = ["sh", "-c", "echo wrapped-{{variant}}; exec \\"$@\\"", "wrap"]
        """, tmp_path)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    assert all(r["metrics"]["mpi_sync"] == "MPI_Init" for r in recs)
    for r in recs:
        if r["metrics"]["job_rank"] == 0:
            wrapped = r["stdout"].count("wrapped-wrapped")
            assert wrapped == (2 if r["variant"] == "wrapped" else 0), r["stdout"]
            assert len(_probes(r["stdout"])) == 2


@pytest.mark.skipif(not (shutil.which("mpirun.openmpi") and shutil.which("mpiexec.mpich")),
                    reason="needs both openmpi (openmpi-bin) and mpich (Debian mpich)")
def test_variants_may_set_the_launcher_and_each_record_names_its_mpi(plan_file, tmp_path):
    recs = run_plan(plan_file, """
        name = "two-mpis"
        [placement]
        workers = 2
        [[task]]
        name = "date"
        command = ["date", "+%s%N"]
        ranks = 2
        launcher = "mpirun.openmpi"
        [[variant]]
        name = "openmpi"
        [[variant]]
        name = "mpich"
        set = { "task.date.launcher" = "mpiexec.mpich" }
        """, tmp_path)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs)
    fams = {r["variant"]: r["metrics"]["mpi_family"] for r in recs
            if r["metrics"]["job_rank"] == 0}
    assert fams == {"openmpi": "openmpi", "mpich": "mpich"}


@pytest.mark.skipif(not (shutil.which("mpirun.openmpi") and shutil.which("mpiexec.mpich")),
                    reason="needs both openmpi (openmpi-bin) and mpich (Debian mpich)")
def test_diff_shows_the_mpi_of_both_sides(plan_file, tmp_path):
    outs = []
    for launcher in ("mpirun.openmpi", "mpiexec.mpich"):
        out = str(tmp_path / launcher)
        done = run_cli("run", plan_file(f"""
            name = "prov"
            [[task]]
            name = "d"
            command = ["date"]
            ranks = 1
            launcher = "{launcher}"
            """, name=f"{launcher}.toml"), "-o", out, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        outs.append(out)
    diff = run_cli("diff", *outs, timeout=120)
    assert "programs[mpirun.openmpi].package: openmpi-bin" in diff.stdout, diff.stdout
    assert "programs[mpiexec.mpich].package: mpich" in diff.stdout


@pytest.mark.parametrize("cgroups", ["1", "0"])
def test_ctrl_c_during_a_job_leaves_no_launcher_and_no_rank(mpi, cgroups, plan_file,
                                                           tmp_path):
    """Ctrl-C (SIGINT to the command's process group) while two jobs hang: exit 130, and
    nothing of theirs is left, with the slots' cgroups (MANYBENCH_CGROUP=1) or without them
    (=0: what a node without a delegated cgroup has), where only the slots' own kill of the
    launcher's group and their ranks reaches them."""
    fam, launcher, probe = mpi
    hang = str(tmp_path / "ctrlc-probe")
    shutil.copy(probe, hang)
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "ctrlc"
        [placement]
        workers = 4
        [[task]]
        name = "hang"
        command = ["{hang}", "hang"]
        ranks = 2
        launcher = "{launcher}"
        """)
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q"],
                            env={**os.environ, "MANYBENCH_CGROUP": cgroups},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(_alive(hang)) < 4:
        time.sleep(0.2)
    assert len(_alive(hang)) >= 4, "the jobs' ranks never ran"
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)            # our own run, by its process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    # killed, they go when the kernel has torn them down (later on a busy machine); a rank
    # left behind hangs for ever: only that reaches the bound
    left = lambda: _alive(hang) + _alive(out)      # noqa: E731
    wait_for(lambda: not left(), "end of the job's processes", LEFTOVER_S, detail=left)
