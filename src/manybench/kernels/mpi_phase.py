"""A parallel task's phase (kernels/mpi_job.py) seen job by job, once its records are made:
each record is one rank, each job's ranks are told apart by `metrics.job`.

  job_skew_s     on the job's rank-0 record: max - min of its ranks' start stamps (the
                 coordinator's clock), the job's own start skew; the phase's skew is across
                 every rank of every job
  jobs_skew_s    on the first job's rank-0 record, when a phase ran several jobs: max - min
                 of the jobs' starts (a job's start: its first rank's), how far apart the
                 concurrent jobs began
  job_startup_s  on the job's rank-0 record: the slowest rank's launch-to-held time
                 (launcher start-up, wire-up, MPI_Init), outside the timed window
  job_mount_namespaces  on the job's rank-0 record: how many mount namespaces its ranks
                 ran in (one per node on the host or in a container per node; one per
                 container)
  mpi_transport  on the job's rank-0 record (extra): what carried its messages, as its
                 ranks' library said (kernels/mpi_transport.py); a `job-shared-memory`
                 warning for ranks on different nodes it carried through shared memory
  failures       the launcher names the rank (or the pid) that failed; each rank's record
                 says whether it was that one or was stopped because of it
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..extra_keys import RANK_FAILURES, TRANSPORT, WARNINGS
from ..status import Status

from .mpi_transport import job_transport

if TYPE_CHECKING:
    from ..record import Record


def finish_jobs(records: list[Record]) -> None:
    """Add the job figures and the failed ranks' causes to a phase's records, in place."""
    jobs: dict[int, list[Record]] = {}
    for r in records:
        job = r.metrics.get("job")
        if isinstance(job, int) and "job_rank" in r.metrics:
            jobs.setdefault(job, []).append(r)
    job_starts: dict[int, int] = {}      # job -> its first rank's start, all ranks started
    for job, recs in sorted(jobs.items()):
        first = next((r for r in recs if r.metrics.get("job_rank") == 0), None)
        if first is None:
            continue
        started = [r.start_ns for r in recs if r.metrics.get("cpu_start") is not None]
        if len(started) == len(recs):
            job_starts[job] = min(started)
            if len(recs) > 1:
                first.metrics["job_skew_s"] = (max(started) - min(started)) / 1e9
        ups = [r.metrics["mpi_startup_s"] for r in recs
               if isinstance(r.metrics.get("mpi_startup_s"), (int, float))]
        if len(ups) == len(recs):
            first.metrics["job_startup_s"] = max(ups)
        mounts = {r.metrics["mnt_ns"] for r in recs if r.metrics.get("mnt_ns")}
        if mounts:
            first.metrics["job_mount_namespaces"] = len(mounts)
        _transport(first, recs)
        _causes(recs, first.extra.get(RANK_FAILURES) or {})
    if len(job_starts) > 1 and len(job_starts) == len(jobs):
        lead = next(r for r in jobs[min(job_starts)] if r.metrics.get("job_rank") == 0)
        lead.metrics["jobs_skew_s"] = (max(job_starts.values()) - min(job_starts.values())) / 1e9


def _transport(first: Record, recs: list[Record]) -> None:
    ranks = {r.metrics["job_rank"]: r.extra.get(TRANSPORT) or {} for r in recs}
    nodes = {r.metrics["job_rank"]: r.node for r in recs}
    text, warnings = job_transport(ranks, nodes)
    if text:
        first.extra["mpi_transport"] = text   # a fact (mpi_record.FACTS)
    if warnings:
        task, job = first.task, first.metrics.get("job")
        first.extra[WARNINGS] = list(first.extra.get(WARNINGS) or []) + [
            [kind, f"task {task}, job {job}: {said}"] for kind, said in warnings]


def _causes(recs: list[Record], failures: dict[str, str]) -> None:
    """Each failed rank's record says what the launcher said of it, or which rank's failure
    stopped it."""
    if not failures:
        return
    named: dict[int, str] = {}
    for r in recs:
        rank, pid = r.metrics.get("job_rank"), r.metrics.get("rank_pid")
        why = failures.get(f"rank {rank}") or failures.get(f"pid {pid}")
        if why:
            named[rank] = why
    culprits = "; ".join(f"rank {k}: {v}" for k, v in sorted(named.items())) or \
        "; ".join(f"{k}: {v}" for k, v in failures.items())
    for r in recs:
        if r.status in (Status.OK, Status.TIMEOUT) or r.metrics.get("job_rank") == 0:
            continue      # rank 0's error already holds the launcher's whole account; what
                          # the launcher says of ranks the timeout killed is the kill
        rank = r.metrics.get("job_rank")
        if rank in named:
            r.error = f"rank {rank}: {named[rank]} (as its launcher reported)"
        else:
            r.error += f" (the launcher reported {culprits})"
