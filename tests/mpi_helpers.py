"""Shared by the parallel-task tests: the MPI families, the probe program and readers of
its output, of leftover processes and of a job's sockets."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import psutil
import pytest

from suite_paths import FIXTURES

PROBE = str(FIXTURES / "mpi" / "probe.c")
IP = shutil.which("ip") or "/usr/sbin/ip"
# family -> (compiler wrapper, launcher, Debian packages)
FAMILIES = {"openmpi": ("mpicc.openmpi", "mpirun.openmpi", "openmpi-bin libopenmpi-dev"),
            "mpich": ("mpicc.mpich", "mpiexec.mpich", "mpich libmpich-dev")}


def build_probe(fam: str, tmp_path_factory) -> tuple[str, str, str]:
    """(family, launcher, probe executable) built with that family's mpicc; skips the test
    where the family is not installed."""
    cc, launcher, pkgs = FAMILIES[fam]
    if not shutil.which(cc) or not shutil.which(launcher):
        pytest.skip(f"{fam} not installed ({cc}, {launcher}: Debian {pkgs})")
    out = str(tmp_path_factory.mktemp(fam) / "probe")
    subprocess.run([cc, "-O1", "-fopenmp", "-o", out, PROBE], check=True, capture_output=True)
    return fam, launcher, out


def run_plan(plan_file, text: str, tmp_path, expect: int = 0) -> list[dict]:
    """Run the plan through the CLI, check its exit status, and return its records."""
    from conftest import export_json, run_cli
    out = str(tmp_path / "res")
    done = run_cli("run", plan_file(text), "-o", out, timeout=600)
    assert done.returncode == expect, done.stdout[-3000:] + done.stderr[-3000:]
    return export_json(out)


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


def tree(pid: int) -> list[psutil.Process]:
    try:
        p = psutil.Process(pid)
        return [p, *p.children(recursive=True)]
    except psutil.Error:
        return []


def _socket_inodes(procs: list[psutil.Process]) -> dict[int, int]:
    """The sockets these processes hold: inode -> pid."""
    inodes = {}
    for p in procs:
        try:
            for fd in os.listdir(f"/proc/{p.pid}/fd"):
                link = os.readlink(f"/proc/{p.pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes[int(link[8:-1])] = p.pid
        except OSError:
            pass
    return inodes


def _net_rows(inodes: dict[int, int], table: str):
    """Rows of /proc/<pid>/net/<table> (one pid per network namespace: the sockets of that
    namespace) split in fields."""
    for pid in _one_per_netns(set(inodes.values())):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                yield from (line.split() for line in f)
        except OSError:
            pass


def rank_sockets(procs: list[psutil.Process]) -> dict[str, int]:
    """Listening abstract sockets named manybench.* that these processes hold: name -> pid
    (read as anyone may: /proc/net/unix lists every name of its network namespace)."""
    inodes = _socket_inodes(procs)
    return {parts[7][1:]: inodes[int(parts[6])] for parts in _net_rows(inodes, "unix")
            if len(parts) >= 8 and parts[7].startswith("@manybench.")
            and int(parts[3], 16) & 0x10000 and int(parts[6]) in inodes}


def _address(hex_addr: str) -> str:
    """/proc/net/tcp's address (32-bit words in host order) as text."""
    raw = b"".join(int(hex_addr[i:i + 8], 16).to_bytes(4, sys.byteorder)
                   for i in range(0, len(hex_addr), 8))
    return socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)


def _one_per_netns(pids: set[int]) -> list[int]:
    seen: dict[str, int] = {}
    for pid in pids:
        try:
            seen.setdefault(os.readlink(f"/proc/{pid}/ns/net"), pid)
        except OSError:
            pass
    return list(seen.values())


def cmdline(p: psutil.Process) -> list[str]:
    try:
        return p.cmdline()
    except psutil.Error:
        return []


def abort_ports(procs: list[psutil.Process]) -> list[tuple[str, int]]:
    """The TCP ports the job's slots (the processes holding a rank socket) listen on, read
    in their own network namespace (psutil reads the caller's)."""
    slots = set(rank_sockets(procs).values())
    inodes = {i: pid for i, pid in _socket_inodes(procs).items() if pid in slots}
    out = []
    for table in ("tcp", "tcp6"):
        for parts in _net_rows(inodes, table):
            if len(parts) > 9 and parts[3] == "0A" and int(parts[9]) in inodes:   # LISTEN
                host, port = parts[1].split(":")
                out.append((_address(host), int(port, 16)))
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
