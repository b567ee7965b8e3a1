"""Open MPI's mpirun / mpiexec (ORTE, 4.x; PRRTE-based 5.x takes the same options).

  -np N --oversubscribe --bind-to none   manybench decided the slots and binds the ranks
  --allow-run-as-root                    only when running as root, which mpirun refuses
  -x NAME=VALUE                          each variable the ranks need, on every node
  -x NAME                                a private one (the job's socket name and token):
                                         mpirun exports its own value
  --hostfile F --mca rmaps seq           across nodes: the sequential mapper puts rank i
                                         on line i of F, so any layout is expressible; the
                                         launching node is named by its hostname there (an
                                         address of its own is renamed so in the allocation
                                         and the mapper would not find it)
  --mca orte_tmpdir_base DIR             the job's session directory under the launching
                                         slot's scratch: Open MPI 4.1's mpiruns started at
                                         once race to create /tmp/ompi.HOST.UID and the
                                         loser fails ("mkdir ... File exists")
Remote nodes are reached with its rsh/ssh agent (`--mca plm_rsh_agent ...` in
launcher_args). Failures: "mpirun noticed that process rank 1 with PID ... exited on signal
9 (Killed)", "Process name: [[J,1],1] Exit code: 3", "MPI_ABORT was invoked on rank 1".
"""
from __future__ import annotations

import os
import socket

from .base import Family, Job, exit_text, found, signal_text, write_hostfile


def _argv(path: str, job: Job) -> tuple[list[str], dict[str, str]]:
    argv = [path, "-np", str(len(job.hosts)), "--oversubscribe", "--bind-to", "none",
            "--mca", "orte_tmpdir_base", job.workdir]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    for k, v in job.env.items():
        argv += ["-x", f"{k}={v}"]
    for k in job.private:
        argv += ["-x", k]
    if not job.local:
        me = socket.gethostname()
        lines = [me if i < len(job.here) and job.here[i] else h for i, h in enumerate(job.hosts)]
        argv += ["--hostfile", write_hostfile(job, "hostfile", lines), "--mca", "rmaps", "seq"]
    return argv + list(job.args) + list(job.program), dict(job.private)


def _failures(text: str) -> dict[str, str]:
    out = found(r"process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)",
                text, lambda m: (f"rank {m[1]}", f"killed by {signal_text(int(m[3]))} on {m[2]}"))
    out.update(found(r"Process name: \[\[\d+,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(\d+)", text,
                     lambda m: (f"rank {m[1]}", exit_text(int(m[2])))))
    out.update(found(r"MPI_ABORT was invoked on rank (\d+) in communicator \S+\s+with "
                     r"errorcode (-?\d+)", text,
                     lambda m: (f"rank {m[1]}", f"called MPI_Abort (error code {m[2]})")))
    return out


def _version(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if "Open MPI" in ln or "OpenRTE" in ln),
                "")


FAMILIES = [Family(
    name="openmpi", title="Open MPI",
    matches=lambda text: "Open MPI" in text or "OpenRTE" in text,
    argv=_argv, failures=_failures, version=_version)]
