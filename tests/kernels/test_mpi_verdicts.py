"""A parallel task's verdicts without MPI (kernels/mpi_job.py, mpi_record.py): what a rank's
slot concludes from how its rank and its launcher ended, against the task's timeout."""
from __future__ import annotations

import subprocess
import tempfile
import time
from types import SimpleNamespace

import pytest

from manybench.kernels import mpi_job
from manybench.kernels.rank_link import Stamps


class _Link:
    """A rank that is held, released, and then ends the way `how` says once `after_s` has
    passed (its launcher killing it, say)."""

    def __init__(self, how: str, after_s: float) -> None:
        self.how, self.after_s, self.st = how, after_s, Stamps(pid=1)

    def go(self, t0_ns: int, spin_ns: int) -> bool:
        self.st.start_ns, self.st.start_mono = t0_ns, time.monotonic_ns()
        return True

    def wait_end(self, deadline: float | None) -> str:
        time.sleep(self.after_s)
        return self.how


def _slot(jrank: int, how: str, after_s: float, timeout: float, launch=None):
    spec = SimpleNamespace(timeout=timeout, metrics={}, parse=None)
    return SimpleNamespace(ctx=SimpleNamespace(spec=spec), job=0, jrank=jrank,
                           link=_Link(how, after_s), launch=launch, connect_mono=0, cpus=(0,))


@pytest.mark.parametrize("how", ["exited", "unfinalized"])
def test_a_rank_stopped_after_the_timeout_killed_another_rank_is_a_timeout(how):
    """The job's ranks share one deadline: whichever slot reaches it first kills its rank, and
    the launcher then stops the others, whose slots see them exit a moment after the deadline,
    before their own wait ran out (killed, or exiting from a signal handler without
    MPI_Finalize). Those ranks were ended by the timeout too."""
    st = _slot(1, how, after_s=0.15, timeout=0.1)
    res = mpi_job._run(st, time.time_ns(), 0)
    assert res.status == "timeout", res.error
    assert "timeout" in res.error and res.error.startswith("rank 1")


def test_a_rank_that_dies_before_the_timeout_is_an_error():
    st = _slot(1, "exited", after_s=0.0, timeout=5.0)
    res = mpi_job._run(st, time.time_ns(), 0)
    assert res.status == "error" and "without an end stamp" in res.error


def test_a_launcher_that_exits_after_the_timeout_killed_a_rank_is_a_timeout(tmp_path):
    """The job's first slot: its rank was stopped after another slot's timeout, and its
    launcher exits with an error status a moment later: the job's timeout, not a failure."""
    proc = subprocess.Popen(["sh", "-c", "sleep 0.12; exit 7"], start_new_session=True)
    fam = SimpleNamespace(name="openmpi", failures=lambda text: {})
    launch = mpi_job.Launch(SimpleNamespace(path="/x/mpirun", family=fam, version="4.1"),
                            ["/x/mpirun"], proc, tempfile.TemporaryFile(),
                            tempfile.TemporaryFile())
    st = _slot(0, "exited", after_s=0.15, timeout=0.1, launch=launch)
    # the slot sees its rank gone once the launcher has exited: on a loaded machine (a
    # parallel suite) `sleep 0.12` could outlast the 0.15 s wait, and the slot killed it
    wait_end = st.link.wait_end
    st.link.wait_end = lambda deadline: (wait_end(deadline), proc.wait())[0]
    res = mpi_job._run(st, time.time_ns(), 0)
    assert res.status == "timeout", res.error
    assert res.metrics["exit_status"] == 7


def test_the_launchers_account_of_a_timed_out_job_leaves_the_timeout_verdicts():
    """The launcher reports the ranks killed at the timeout as killed by a signal; their
    records keep saying the timeout did it."""
    from manybench.kernels.mpi_phase import finish_jobs
    from manybench.record import Record

    def rec(rank: int, error: str, **extra) -> Record:
        return Record(run="r", phase=0, task="t", kernel="mpi", variant="", rep=0, workers=2,
                      node="n", slot=rank, cpu=0, t0_ns=0, start_ns=10, end_ns=20,
                      status="timeout", error=error,
                      metrics={"job": 0, "job_rank": rank, "rank_pid": 100 + rank},
                      extra=extra)
    recs = [rec(0, "the launcher was killed", rank_failures={"pid 101": "exit code 9"}),
            rec(1, "rank 1: killed after the task's timeout")]
    finish_jobs(recs)
    assert recs[1].error == "rank 1: killed after the task's timeout"


def test_a_job_says_how_many_containers_its_ranks_ran_in():
    from manybench.kernels.mpi_phase import finish_jobs
    from manybench.record import Record

    def rec(rank: int, mnt: str) -> Record:
        return Record(run="r", phase=0, task="t", kernel="mpi", variant="", rep=0, workers=3,
                      node="n", slot=rank, cpu=0, t0_ns=0, start_ns=10, end_ns=20,
                      status="ok", error="",
                      metrics={"job": 0, "job_rank": rank, "mnt_ns": mnt, "user_ns": mnt})
    recs = [rec(0, "mnt:[1]"), rec(1, "mnt:[2]"), rec(2, "mnt:[1]")]
    finish_jobs(recs)
    assert recs[0].metrics["job_mount_namespaces"] == 2
    assert "job_mount_namespaces" not in recs[1].metrics


def test_a_preemption_between_the_clock_reads_does_not_move_a_slots_deadline(monkeypatch):
    """Two slots of one job must agree on T0 + timeout in CLOCK_MONOTONIC: a slot preempted
    for 40 ms between reading one clock and the other (a loaded machine) would have its
    deadline 40 ms off its peers', and its rank, stopped after a peer's timeout, told as an
    error. The pair is read again until the two reads are one instant."""
    mono = [10_000_000_000]
    wall = [1_700_000_000_000_000_000]
    stalls = iter([40_000_000, 0, 0])      # the first pair is split by a preemption

    def monotonic_ns():
        return mono[0]

    def time_ns():
        mono[0] += next(stalls, 0)        # preempted after the first read, for a while
        wall[0] = 1_700_000_000_000_000_000 + mono[0] - 10_000_000_000
        return wall[0]

    monkeypatch.setattr(mpi_job.time, "monotonic_ns", monotonic_ns)
    monkeypatch.setattr(mpi_job.time, "time_ns", time_ns)
    t0 = 1_700_000_001_000_000_000          # 1 s after the clocks' common origin
    # read once, the split pair would say 10.98 (its midpoint) or 10.96 (one clock, then
    # the other); read again, the pair is one instant
    assert mpi_job.monotonic_at(t0) == 11.0
