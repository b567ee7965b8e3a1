"""Shared by the parallel-task tests: the MPI families, the probe program and readers of
its output and of leftover processes."""
from __future__ import annotations

import os

import shutil

import psutil

HERE = os.path.dirname(__file__)
PROBE = os.path.join(HERE, "fixtures", "mpi", "probe.c")
IP = shutil.which("ip") or "/usr/sbin/ip"
# family -> (compiler wrapper, launcher, Debian packages)
FAMILIES = {"openmpi": ("mpicc.openmpi", "mpirun.openmpi", "openmpi-bin libopenmpi-dev"),
            "mpich": ("mpicc.mpich", "mpiexec.mpich", "mpich libmpich-dev")}


def _probes(stdout: str) -> list[dict]:
    """The probe's lines: one per rank of the job."""
    return [dict(zip(m[0::2], m[1::2])) for m in
            (line.split()[1:] for line in stdout.splitlines() if line.startswith("probe "))]


def _by_phase(recs: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for r in recs:
        out.setdefault(r["phase"], []).append(r)
    return out


def _alive(path: str) -> list[str]:
    """Processes still running whose command line names `path` or whose working directory is
    under it (the run's scratch: ranks, launchers and their daemons all work there)."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            if any(path in a for a in p.info["cmdline"] or ()) or \
                    (p.info["cwd"] or "").startswith(path):
                out.append(f"{p.info['pid']}: {' '.join(p.info['cmdline'] or ())}")
        except psutil.Error:
            pass
    return out


def rsh_agent(lab, path: str) -> str:
    """An ssh-like agent: `agent [-opts] HOST COMMAND...` runs COMMAND in HOST's node."""
    cases = "\n".join(f"  {lab.lab.ip(i)}) ns={lab.lab.names[i]}; name={node};;"
                      for i, node in enumerate(lab.workers, start=1))
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done
host=$1; shift
case "$host" in
{cases}
  *) echo "rsh agent: unknown host $host" >&2; exit 255;;
esac
exec {IP} netns exec "$ns" unshare --uts sh -c "hostname $name && $*"
""")
    os.chmod(path, 0o755)
    return path
