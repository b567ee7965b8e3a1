"""Plan checks of a parallel task's phases (`ranks = N`, kernels/mpi_job.py), made before
anything runs: jobs must divide the workers, and the launcher must exist here and be one
whose MPI family is known (on a cluster only a warning: the nodes may have it). The
rank-to-node layout a family cannot express is refused once the nodes are known
(run/jobs.py)."""
from __future__ import annotations

import os

from ..launchers import LauncherError, resolve
from ..model import Phase


def parallel_problems(phase: Phase, distributed: bool) -> tuple[list[str], list[str]]:
    """(errors, warnings) of one expanded phase, each naming its field."""
    ranks = phase.params.get("ranks")
    if not isinstance(ranks, int):
        return [], []
    task = phase.task
    errors: list[str] = []
    warnings: list[str] = []
    if phase.workers % ranks:
        errors.append(f"task.{task.name}.ranks: ranks = {ranks} does not divide workers = "
                      f"{phase.workers} (each job takes {ranks} slots: workers must be a "
                      "multiple of ranks)")
    name = task.launcher or "auto"
    env = {**os.environ, **phase.env}
    try:
        resolve(name, env)
    except LauncherError as e:
        (warnings if distributed else errors).append(f"task.{task.name}.launcher: {e}")
        return errors, warnings
    if name == "srun" and not distributed and not env.get("SLURM_JOB_ID"):
        errors.append(f"task.{task.name}.launcher: srun runs only inside a Slurm allocation "
                      "(SLURM_JOB_ID is not set here)")
    return errors, warnings
