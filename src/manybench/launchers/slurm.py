"""srun, inside a Slurm allocation (SLURM_JOB_ID set where the job is launched).

  srun -n N --cpu-bind=none --overlap --export=ALL,NAME=VALUE,...,NAME   (one step per job;
  a private variable by its name alone: srun exports its own value)
  across nodes: --distribution=arbitrary with SLURM_HOSTFILE naming rank i's node on line i,
  so any layout is expressible. The nodes are named by their manybench node names, which
  are the Slurm node names when the run's nodes are the allocation's.
--overlap lets the job's step share the allocation's cpus with the manybench workers that
hold them (Slurm 20.11+). Failures: "srun: error: node: task 1: Killed" / "Exited with exit
code 3".
"""
from __future__ import annotations

import os

from .base import Family, Job, LauncherError, found, write_hostfile


def _argv(path: str, job: Job) -> tuple[list[str], dict[str, str]]:
    if not os.environ.get("SLURM_JOB_ID"):
        raise LauncherError("srun runs only inside a Slurm allocation (SLURM_JOB_ID is not "
                            "set where the job is launched)")
    if any("," in v for v in job.env.values()):
        raise LauncherError("srun --export cannot pass a value holding a comma: "
                            + ", ".join(k for k, v in job.env.items() if "," in v))
    argv = [path, "-n", str(len(job.hosts)), "--cpu-bind=none", "--overlap",
            "--export=" + ",".join(["ALL"] + [f"{k}={v}" for k, v in job.env.items()]
                                   + list(job.private))]
    extra: dict[str, str] = dict(job.private)
    if not job.local:
        names = list(job.nodes) if len(job.nodes) == len(job.hosts) else job.hosts
        extra["SLURM_HOSTFILE"] = write_hostfile(job, "slurm-hostfile", names)
        argv.append("--distribution=arbitrary")
    return argv + list(job.args) + list(job.program), extra


def _failures(text: str) -> dict[str, str]:
    return found(r"srun: error: (\S+): tasks? (\d+)(?:-\d+)?: (.+)$", text,
                 lambda m: (f"rank {m[2]}", f"{m[3].strip()} on {m[1]}"))


FAMILIES = [Family(name="slurm", title="Slurm srun",
                   matches=lambda text: text.lower().startswith("slurm"),
                   argv=_argv, failures=_failures)]
