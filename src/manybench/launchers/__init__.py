"""Launchers of parallel tasks (`ranks = N`): one module per family, registered here.

  openmpi.py   Open MPI's mpirun / mpiexec
  hydra.py     MPICH's Hydra mpiexec; Intel MPI's (placed with -ppn)
  slurm.py     srun inside a Slurm allocation

A plan names a launcher (`launcher = "auto" | "mpirun" | "mpiexec" | "srun"`, or any
program name or path); its family is detected from its `--version` output and stored with
the records (`mpi_family`, `mpi_version`, `launcher`).
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import import_module

from .base import Family, Job, LauncherError

MODULES = ("openmpi", "hydra", "slurm")
# detection order: Intel's Hydra says "HYDRA" too, so it comes before MPICH
FAMILIES: dict[str, Family] = {f.name: f for m in MODULES
                               for f in import_module(f"{__name__}.{m}").FAMILIES}
KEYWORDS = ("auto", "mpirun", "mpiexec", "srun")


@dataclass(frozen=True)
class Launcher:
    path: str          # the program
    family: Family
    version: str       # its version line


def program(name: str, env: dict[str, str] | None = None) -> str:
    """The launcher program a plan's `launcher` names here: "auto" is srun inside a Slurm
    allocation, else mpirun, else mpiexec; others are looked up on PATH. LauncherError when
    there is none."""
    env = os.environ if env is None else env
    path_var = env.get("PATH", os.environ.get("PATH"))
    if name == "auto":
        names = (["srun"] if env.get("SLURM_JOB_ID") else []) + ["mpirun", "mpiexec"]
    else:
        names = [name]
    for n in names:
        if "/" in n:
            if os.path.isfile(n) and os.access(n, os.X_OK):
                return n
            continue
        found = shutil.which(n, path=path_var)
        if found:
            return found
    want = " or ".join(names)
    raise LauncherError(f"no launcher {want} found on PATH (install Open MPI: openmpi-bin, "
                        "or MPICH: mpich; or give the launcher's path)")


@functools.lru_cache(maxsize=32)
def _version_text(path: str) -> str:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise LauncherError(f"{path} --version failed: {e}") from None
    return done.stdout + done.stderr


def detect(path: str) -> Launcher:
    """The family of a launcher program, from its `--version`; LauncherError when unknown."""
    text = _version_text(path)
    for fam in FAMILIES.values():
        if fam.matches(text):
            return Launcher(path, fam, fam.version(text))
    raise LauncherError(f"cannot tell which MPI {path} belongs to (its --version says: "
                        f"{text.strip()[:120]!r}); known: "
                        + ", ".join(f.title for f in FAMILIES.values()))


def resolve(name: str, env: dict[str, str] | None = None) -> Launcher:
    """program() then detect()."""
    return detect(program(name, env))


__all__ = ["FAMILIES", "KEYWORDS", "Family", "Job", "Launcher", "LauncherError", "detect",
           "program", "resolve"]
