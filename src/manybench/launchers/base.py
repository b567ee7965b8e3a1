"""What a launcher family is: how it is recognised, how one job's ranks are put into its
command line, which placements it can express, and how it says that a rank failed.

A job is the ranks of one parallel task's job (kernels/mpi_job.py) in rank order, each with
the host its node is reached at. Every family leaves cpu binding to manybench (its own
binding is turned off): each rank binds itself to its slot's cpus in libmbrank.so, so every
family expresses every cpu placement; what differs is which rank-to-node layouts a family's
command line can say.
"""
from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass, field
from typing import Callable


class LauncherError(Exception):
    """A launcher that cannot be used as the plan asks (the message names why)."""


@dataclass(frozen=True)
class Job:
    """One job's ranks, as a launcher is asked to start them."""
    program: list[str]          # every rank's argv
    hosts: list[str]            # per rank, in rank order: the host its node is reached at
    local: bool                 # every rank is on the launching node: no host list at all
    env: dict[str, str]         # for every rank (through the launcher's own option)
    # for every rank too, by name only: the values go into the launcher's own environment
    # (the family's argv returns them with its extra environment), never into its command
    # line, which every user of the node reads (/proc/PID/cmdline; an environment only
    # its owner does)
    private: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)   # the plan's launcher_args
    workdir: str = "."          # where a host file the launcher reads is written
    here: tuple[bool, ...] = ()  # per rank: on the launching node itself
    nodes: tuple[str, ...] = ()  # per rank: its node's manybench name (Slurm's node name)


@dataclass(frozen=True)
class Family:
    name: str                   # openmpi | mpich | intel | slurm: stored in the records
    title: str                  # for messages: "Open MPI", "MPICH (Hydra)", ...
    # recognises the family in the launcher's `--version` output
    matches: Callable[[str], bool]
    # (launcher path, job) -> (argv, extra environment of the launcher itself)
    argv: Callable[[str, Job], tuple[list[str], dict[str, str]]]
    # (node name per rank, in rank order) -> why this family cannot express it, or ""
    check: Callable[[list[str]], str] = lambda layout: ""
    # the launcher's output -> {"rank N" or "pid N": why that process failed}
    failures: Callable[[str], dict[str, str]] = lambda text: {}
    # (the launcher's non-zero exit status, its output) -> how that status reads
    status: Callable[[int, str], str] = lambda code, text: exit_text(code)
    # the version line worth recording, from the `--version` output
    version: Callable[[str], str] = lambda text: first_line(text)


def signal_text(sig: int) -> str:
    """"signal 11 (SIGSEGV: Segmentation fault)": a process killed by a signal, as every
    family's report of one reads in the records (MPICH's Hydra says "EXIT CODE: 11", Open
    MPI "signal 11 (Segmentation fault)", a shell 139)."""
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = ""
    desc = signal.strsignal(sig) if 0 < sig < signal.NSIG else None
    inner = ": ".join(x for x in (name, desc) if x)
    return f"signal {sig}" + (f" ({inner})" if inner else "")


def exit_text(code: int) -> str:
    """An exit status as the records tell it: a negative one (Popen's: killed by a signal)
    and one above 128 (a shell's report of a child killed by signal code - 128, which a
    launcher passes on) name the signal."""
    if code < 0:
        return f"killed by {signal_text(-code)}"
    if 128 < code < 128 + signal.NSIG:
        return f"exit status {code} ({signal_text(code - 128)}, as a shell reports it)"
    return f"exit status {code}"


def how_ended(family: Family, code: int, output: str) -> str:
    """How a launcher ended, its status as its family reads it: "exited with status 4",
    "exited with status 11 (a rank's signal 11 (SIGSEGV: ...))", "was killed by signal 9
    (SIGKILL: Killed)"."""
    text = family.status(code, output) if code else "exit status 0"
    return f"exited with {text[5:]}" if text.startswith("exit ") else f"was {text}"


def first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def runs(items: list[str]) -> list[tuple[str, int]]:
    """Consecutive runs: [a, a, b, a] -> [(a, 2), (b, 1), (a, 1)]."""
    out: list[tuple[str, int]] = []
    for x in items:
        if out and out[-1][0] == x:
            out[-1] = (x, out[-1][1] + 1)
        else:
            out.append((x, 1))
    return out


def write_hostfile(job: Job, name: str, lines: list[str]) -> str:
    """A file the launcher reads, in the launching slot's scratch directory."""
    path = os.path.join(job.workdir, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def found(pattern: str, text: str, why: Callable[[re.Match], tuple[str, str]]
          ) -> dict[str, str]:
    """{key: why} for every match of a failure message (the first one of each key kept)."""
    out: dict[str, str] = {}
    for m in re.finditer(pattern, text, re.MULTILINE):
        key, msg = why(m)
        out.setdefault(key, msg)
    return out
