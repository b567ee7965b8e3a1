"""MPICH's Hydra mpiexec, and Intel MPI's (a Hydra too, placed with -ppn).

MPICH:  -n N -bind-to none -genv NAME VALUE ... -hosts h1:c1,h2:c2,...
        the host list is the layout's runs of consecutive ranks per node, in rank order,
        so any layout is expressible (spread: a:1,b:1,a:1,b:1).
Intel:  -n N -ppn P -hosts h1,h2 ... -genv NAME VALUE
        -ppn puts P consecutive ranks on each host in turn: only layouts made of equal
        blocks on distinct nodes (order = "pack" with the same count per node, or one rank
        per node) can be said; others are refused at plan check.
Private variables (the job's socket name and token) are not on the command line: Hydra
passes mpiexec's whole environment to the ranks by default, where they are; a plan's
launcher_args that narrow it (-genvnone, -genvlist) get their names added.
Failures: MPICH prints "BAD TERMINATION ... PID 123 RUNNING AT host / EXIT CODE: 9" (a pid,
which the records map to its rank) and "application called MPI_Abort(..., 2) - process 1".
Hydra 4.0's "EXIT CODE: 11" is a signal when its "EXIT STRING: Segmentation fault (signal
11)" says so (4.1 and later say "KILLED BY SIGNAL: 11"), and mpiexec then exits with 11.
"""
from __future__ import annotations

import re

from .base import Family, Job, exit_text, found, runs, signal_text


def _env(job: Job) -> list[str]:
    out: list[str] = []
    for k, v in job.env.items():
        out += ["-genv", k, v]
    return out


def _args(job: Job) -> list[str]:
    """The plan's launcher_args, passing the private variables too where they narrow the
    environment Hydra passes (all of it by default)."""
    args = list(job.args)
    names = ",".join(job.private)
    for i, a in enumerate(args):
        if not names:
            break
        if a == "-genvnone":
            args[i:i + 1] = ["-genvlist", names]
            break
        if a == "-genvlist" and i + 1 < len(args):
            args[i + 1] += "," + names
            break
    return args


def _mpich_argv(path: str, job: Job) -> tuple[list[str], dict[str, str]]:
    argv = [path, "-n", str(len(job.hosts)), "-bind-to", "none", *_env(job)]
    if not job.local:
        argv += ["-hosts", ",".join(f"{h}:{n}" for h, n in runs(job.hosts))]
    return argv + _args(job) + list(job.program), dict(job.private)


def _blocks(layout: list[str]) -> list[tuple[str, int]]:
    return runs(layout)


def _intel_check(layout: list[str]) -> str:
    blocks = _blocks(layout)
    if len(blocks) == 1:
        return ""
    names = [n for n, _ in blocks]
    sizes = {c for _, c in blocks[:-1]}
    if len(set(names)) != len(names) or len(sizes) != 1 or blocks[-1][1] > min(sizes):
        return ("Intel-MPI-style -ppn puts the same number of consecutive ranks on each node "
                "in turn; this placement puts ranks " + ", ".join(
                    f"{n}x{c}" for n, c in blocks) + ' (order = "spread" interleaves nodes: '
                'use order = "pack" with workers a multiple of the node count, or another '
                "launcher)")
    return ""


def _intel_argv(path: str, job: Job) -> tuple[list[str], dict[str, str]]:
    argv = [path, "-n", str(len(job.hosts))]
    if not job.local:
        blocks = runs(job.hosts)
        argv += ["-ppn", str(blocks[0][1]), "-hosts", ",".join(h for h, _ in blocks)]
    return argv + _env(job) + _args(job) + list(job.program), dict(job.private)


def _signals(text: str) -> set[int]:
    """The signals Hydra's exit string names ("... EXIT STRING: Killed (signal 9)")."""
    return {int(s) for s in re.findall(r"EXIT STRING: .*\(signal (\d+)\)", text)}


def _failures(text: str) -> dict[str, str]:
    signals = _signals(text)

    def why(m: re.Match) -> tuple[str, str]:
        code = int(m[4])
        if m[3] == "KILLED BY SIGNAL" or code in signals:
            return f"pid {m[1]}", f"killed by {signal_text(code)} on {m[2]}"
        return f"pid {m[1]}", f"{exit_text(code)} on {m[2]}"
    out = found(r"BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\s*\n=\s*(?:RANK \d+ )?"
                r"PID (\d+) RUNNING AT (\S+)\s*\n=\s*(EXIT (?:CODE|STATUS)|KILLED BY SIGNAL):"
                r"\s*(-?\d+)", text, why)
    out.update(found(r"application called MPI_Abort\([^,]*, (-?\d+)\) - process (\d+)", text,
                     lambda m: (f"rank {m[2]}", f"called MPI_Abort (error code {m[1]})")))
    return out


def _status(code: int, text: str) -> str:
    """mpiexec's exit status: a rank's signal number when its exit string names it."""
    if code in _signals(text):
        return f"exit status {code} (a rank's {signal_text(code)})"
    return exit_text(code)


def _mpich_version(text: str) -> str:
    return next((" ".join(ln.split()) for ln in text.splitlines() if "Version:" in ln), "")


FAMILIES = [
    Family(name="intel", title="Intel MPI (-ppn)",
           matches=lambda text: "Intel(R) MPI" in text, argv=_intel_argv, check=_intel_check,
           failures=_failures, status=_status),
    Family(name="mpich", title="MPICH (Hydra)",
           matches=lambda text: "HYDRA" in text or "MPICH" in text, argv=_mpich_argv,
           failures=_failures, status=_status, version=_mpich_version),
]
