"""What ran on a slot's cpus as its window ended: named when its work found them about all
busy while it used well less (kernels/binding.py cpu_shared), so the warning says what the
other load was, not only how much of the cpus it took. A scan of /proc's threads (a few ms
on a small node): made after the window, once per slot, only when the flag is raised."""
from __future__ import annotations

import os

SHOWN = 8   # processes named; the rest counted


def _runnable_on(path: str, cpus: set[int]) -> str | None:
    """The command name of a thread runnable on one of these cpus (its stat's state R and
    the cpu it last ran on), else None."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return None
    close = text.rfind(")")
    rest = text[close + 2:].split()
    # fields from the third on: state is /proc's field 3, the cpu last run on field 39
    if len(rest) < 37 or rest[0] != "R" or int(rest[36]) not in cpus:
        return None
    return text[text.find("(") + 1:close]


def lineage(pid: int) -> set[int]:
    """pid and its ancestors: the run's own (slot, agent, coordinator) and what started it,
    waiting on it, never the other load."""
    out: set[int] = set()
    while pid > 0 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                text = f.read()
            pid = int(text[text.rfind(")") + 2:].split()[1])   # field 4: the parent
        except (OSError, ValueError, IndexError):
            break
    return out


def running_on(cpus: set[int], own: set[int]) -> list[str]:
    """Processes (outside `own`) with a thread running or waiting to run on these cpus now:
    "name (pid N)", by pid."""
    names: list[str] = []
    try:
        pids = sorted(int(e.name) for e in os.scandir("/proc") if e.name.isdigit())
    except OSError:
        return names
    for pid in pids:
        if pid in own:
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            comm = _runnable_on(f"/proc/{pid}/task/{tid}/stat", cpus)
            if comm is not None:
                names.append(f"{comm} (pid {pid})")
                break
    return names


def named(names: list[str]) -> str:
    """running_on's list as a warning says it: the first SHOWN, then how many more."""
    more = len(names) - SHOWN
    return ", ".join(names[:SHOWN] + ([f"{more} more"] if more > 0 else []))
