"""A job's slots share one deadline, T0 + timeout, however late each is armed (kernels/
mpi_job.py): a slot armed after T0 under load took the later of T0 and its own arming, so
its rank, stopped by the launcher at the other slots' deadline, read as an error
(test_parallel's hanging-job test failed so beside two busy loops)."""
from __future__ import annotations

import inspect
import time

from manybench.kernels import mpi_job


def test_a_slot_armed_after_t0_keeps_the_jobs_deadline():
    t0_ns = time.time_ns() - 1_000_000_000          # armed a second after T0
    deadline = mpi_job.job_deadline(t0_ns, 3.0)
    assert abs(deadline - (time.monotonic() - 1.0 + 3.0)) < 0.05    # T0 + 3 s, not now + 3 s


def test_every_slot_of_a_job_reads_the_deadline_so():
    """_run takes its deadline from job_deadline alone (no later of T0 and now)."""
    src = inspect.getsource(mpi_job._run)
    assert "job_deadline(t0_ns, spec.timeout)" in src and "max(" not in src
