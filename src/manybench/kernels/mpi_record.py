"""What one rank of a parallel task measured, as its slot's Result (kernels/mpi_job.py).

Every rank's record: its start and end stamps (taken in the rank, libmbrank.so), where it
ran (its pid, host, the cpus it started and ended on, its binding read from /proc), its
cpu use, how it was held (`mpi_sync`), its MPI_Init and the job's start-up. The job's
first rank's record also holds the launcher: its family and version, exit status, output
tails, the figures parsed from the job's output, and which ranks the launcher said failed.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from .. import extra_keys as X
from ..extra_keys import (ARGV, MISSING_METRICS, RANK_FAILURES, SERIES, STDERR, STDOUT,
                          TRANSPORT, WARNINGS)
from ..launchers.base import how_ended
from ..results.contract import WarningKind
from ..status import Status
from ..node.wire_types import Result
from .binding import MIN_CPU_NS, allowed_count, cpu_figures
from .command import EXIT_STATUS, TAIL_BYTES, extract_metrics
from .facts import METRICS, Fact
from .mpi_transport import parse as parse_transport
from .figures import CONTEXT, COUNT, HIDDEN, JOB, LOWER, PHASE, Figure


def _hidden(name: str, unit: str = "") -> Figure:
    return Figure(name, unit, direction="", role=HIDDEN)


# what every rank's record carries besides the program's own figures: where it ran and how
# it was held (bookkeeping, never a figure of the program) and the job's start-up (context);
# the job's skew (kernels/mpi_phase.py) is a figure
FIGURES = (
    Figure("job_skew_s", "s", "job skew", LOWER, scope=JOB,
           note="job skew = max - min of one job's ranks' start stamps (on its rank 0)"),
    Figure("jobs_skew_s", "s", "skew across\njobs", LOWER, scope=PHASE,
           note="skew across jobs = max - min of a phase's jobs' starts (a job's start: its "
           "first rank's; on the first job's rank 0)"),
    Figure("job_startup_s", "s", "job\nstart-up", "", role=CONTEXT,
           note="job start-up = the slowest rank's launch-to-held time (launcher, wire-up, "
           "MPI_Init), outside the timed window"),
    Figure("job_mount_namespaces", "", "mount\nnamespaces", "", role=COUNT,
           note="mount namespaces: namespaces x jobs; how many a job's ranks ran in: one per "
           "node on the host or in one shared container per node, one per container "
           "otherwise"),
    Figure("mpi_init_s", "s", "MPI_Init", "", role=CONTEXT),
    Figure("mpi_startup_s", "s", "rank start-up", "", role=CONTEXT),
    Figure("finalize_s", "s", "MPI_Finalize", "", role=CONTEXT),
    Figure("launcher_exit_s", "s", "launcher exit", "", role=CONTEXT),
    EXIT_STATUS,
    *(_hidden(n) for n in ("job", "job_rank", "rank_pid", "rank_host", "mpi_sync",
                           "cpu_start", "cpu_end", "launcher", "mpi_family", "mpi_version",
                           "user_ns", "mnt_ns")),
)

# the MPI a job ran with, on its first rank's record (_launcher): shown beside the figures
FACTS = (Fact("mpi_family", "MPI family", METRICS, note="the launcher's family: openmpi, mpich, "
              "intel or slurm"),
         Fact("mpi_version", "MPI version", METRICS, note="the launcher's --version line"),
         Fact("launcher", "MPI launcher", METRICS, note="the launcher's path"),
         Fact("mpi_transport", "MPI transport", note="what carried the job's messages, as its "
              "ranks' MPI library said at MPI_Finalize (kernels/mpi_transport.py): Open MPI's "
              "pml and each pair's btl, MPICH's device and its node's ranks, UCX's lanes"))

ENDINGS = {"exited": "ended before MPI_Finalize (or exit) without an end stamp: killed, "
                     "crashed or stopped by its launcher",
           "unfinalized": "exited without calling MPI_Finalize",
           "timeout": "killed after the task's timeout",
           "stopped": "stopped after the task's timeout (another rank of its job, or its "
                      "launcher, was killed at the timeout)"}


def job_result(st: Any, t0_ns: int, armed_ns: int, how: str, gone_ns: int) -> Result:
    """The record of the rank `st` (its mpi_job.JobSlot) as its slot's Result."""
    s = st.link.st
    if s.start_ns:
        elapsed = s.end_mono - s.start_mono if s.end_mono else max(0, gone_ns - s.start_ns)
        elapsed = max(0, elapsed)
        start_ns, end_ns = s.start_ns, s.start_ns + elapsed
    else:
        elapsed, start_ns, end_ns = 0, t0_ns, gone_ns
    m: dict[str, Any] = dict(job=st.job, job_rank=st.jrank, rank_pid=s.pid, rank_host=s.host,
                             mpi_sync="MPI_Init" if s.mpi else "main")
    if s.init_return_ns:
        m["mpi_init_s"] = round((s.init_return_ns - s.init_enter_ns) / 1e9, 6)
    if s.ready_mono and st.connect_mono:
        m["mpi_startup_s"] = round((s.ready_mono - st.connect_mono) / 1e9, 6)
    if s.start_cpu >= 0:
        m["cpu_start"] = s.start_cpu
    if s.end_cpu >= 0:
        m["cpu_end"] = s.end_cpu
    if s.finalized_ns and s.end_ns:
        m["finalize_s"] = round((s.finalized_ns - s.end_ns) / 1e9, 6)
    m.update(s.binding)
    m.update(s.ns)
    if s.cpu_end_s >= 0 and s.cpu_start_s >= 0 and elapsed >= MIN_CPU_NS:
        m.update(cpu_figures(s.cpu_end_s - s.cpu_start_s, elapsed / 1e9,
                             allowed_count(s.binding) if s.binding else len(st.cpus)))
    if how in ("timeout", "stopped"):
        status, error = Status.TIMEOUT, f"rank {st.jrank}: {ENDINGS[how]}"
    elif how in ("exited", "unfinalized"):
        status = Status.ERROR
        error = f"rank {st.jrank}: " + ("ended before T0" if not s.start_ns else ENDINGS[how])
    else:
        status, error = Status.OK, ""
    extra: dict[str, Any] = {X.JOB: st.job}     # X.JOB, not figures.JOB (a scope)
    if s.transport:
        extra[TRANSPORT] = parse_transport(s.transport)
    res = Result(start_ns=start_ns, end_ns=end_ns, elapsed_ns=elapsed, armed_ns=armed_ns,
                 ops=int(status == Status.OK), status=status, error=error, metrics=m, extra=extra)
    return _launcher(st, res) if st.launch is not None else res


def _launcher(st: Any, res: Result) -> Result:
    """The job's first rank: its Result with the launcher's figures, output and verdict."""
    launch = st.launch
    m, extra = dict(res.metrics), dict(res.extra)
    status, error = res.status, res.error
    stdout, stderr = launch.text()
    m.update(launcher=launch.launcher.path, mpi_family=launch.launcher.family.name,
             mpi_version=launch.launcher.version, **{EXIT_STATUS.name: launch.status})
    if launch.exited_mono and st.link.st.end_mono:
        m["launcher_exit_s"] = round(max(0, launch.exited_mono - st.link.st.end_mono) / 1e9, 6)
    extra.update({STDOUT: stdout[-TAIL_BYTES:], STDERR: stderr[-TAIL_BYTES:], ARGV: launch.argv})
    failures = launch.launcher.family.failures(stdout + "\n" + stderr)
    if failures:
        extra[RANK_FAILURES] = failures
    if launch.leftovers:
        extra[WARNINGS] = [[WarningKind.LEFTOVER, f"task {st.ctx.spec.name}, job {st.job}: "
                              + "; ".join(launch.leftovers) + ", left by its ranks, held "
                              "the launcher's output after they had ended: killed"]]
    spec = st.ctx.spec
    m.update(extract_metrics(spec.metrics, [stdout, stderr])[0])
    ok = launch.status == 0 and not launch.timed_out
    if spec.parse and ok:
        from .. import parsers   # noqa: PLC0415
        try:
            # parsers that read size-indexed tables (OSU, IMB) give them too, where this
            # build has them: stored as rows of their own from the record's extra["series"]
            both = getattr(parsers, "parse_output", None)
            if both is not None:
                found, tables = both(spec.parse, stdout, stderr)
                if tables:
                    extra[SERIES] = [t.to_json() for t in tables]
            else:
                found = parsers.PARSERS[spec.parse](stdout, stderr)
            m.update(found)
        except parsers.ParseError as e:
            if status == Status.OK:
                status, error = Status.ERROR, f"{spec.parse} output not understood: {e}"
    missing = [n for n in spec.metrics if n not in m]
    if missing:
        extra[MISSING_METRICS] = missing
    if launch.timed_out:
        status = Status.TIMEOUT
        error = (f"the launcher was killed after the task's timeout {spec.timeout:g}s"
                 if launch.killed else f"the launcher ended (status {launch.status}) "
                 f"after the task's timeout {spec.timeout:g}s killed a rank of its job")
    elif launch.status != 0:
        code = launch.status
        said = "; ".join(f"{k}: {v}" for k, v in failures.items())
        how = how_ended(launch.launcher.family, code, stdout + "\n" + stderr)
        status = Status.ERROR
        error = (f"the launcher {os.path.basename(launch.argv[0])} {how}"
                 + (f" ({said})" if said else "") + (f"; {error}" if error else ""))
    return replace(res, status=status, error=error, metrics=m, extra=extra)
