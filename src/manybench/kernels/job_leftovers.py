"""What holds a parallel job's launcher once its ranks have ended (kernels/mpi_job.py).

A launcher (mpirun, Hydra's proxy, orted) reads its ranks' stdout and stderr from pipes and
exits only when every one is closed. A process a rank left behind (a daemon it forked, a
`cmd &` of a wrapper) inherits those pipes and, once its rank is gone, is re-parented out of
the launcher's tree (to the slot, a subreaper, or to init) while still holding them: the
launcher then waited for it until the task's timeout, and the record said `timeout` though
every rank had ended in a second.

Found here on the launching node: a process of this user outside the launcher's tree holding
a pipe that a process of the tree holds too, once no rank is left in the tree (no process of
it maps libmbrank.so, which every rank loads: launchers and their daemons do not).
"""
from __future__ import annotations

import os

import psutil


def _tree(pid: int) -> list[psutil.Process]:
    try:
        p = psutil.Process(pid)
        return [p, *p.children(recursive=True)]
    except psutil.Error:
        return []


def _maps(pid: int, library: str) -> bool:
    try:
        with open(f"/proc/{pid}/maps") as f:
            return any(library in line for line in f)
    except OSError:
        return False


def _pipes(pid: int) -> set[str]:
    """The pipes a process holds open ("pipe:[123]")."""
    out = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("pipe:"):
                out.add(link)
    except OSError:
        pass
    return out


def holders(launcher: int, library: str) -> list[psutil.Process] | None:
    """The processes outside the launcher's tree that hold its pipes; None while a rank (a
    process mapping `library`) is still in the tree, or when the launcher is gone."""
    tree = _tree(launcher)
    if not tree or any(_maps(p.pid, library) for p in tree):
        return None
    inside = {p.pid for p in tree}
    pipes = set().union(*(_pipes(p) for p in inside))
    me, uid = os.getpid(), os.getuid()
    out = []
    for p in psutil.process_iter(["uids"]):
        try:
            if p.pid in inside or p.pid == me or p.info["uids"].real != uid:
                continue
        except (psutil.Error, AttributeError):
            continue
        if _pipes(p.pid) & pipes:
            out.append(p)
    return out


def describe(p: psutil.Process) -> str:
    """"pid 123 (sleep 600)": a leftover as the records name it."""
    try:
        cmd = " ".join(p.cmdline()) or p.name()
    except psutil.Error:
        cmd = "?"
    return f"pid {p.pid} ({cmd[:200]})"


def kill(procs: list[psutil.Process]) -> None:
    for p in procs:
        try:
            p.kill()       # psutil checks the pid still names the process found
        except psutil.Error:
            pass
