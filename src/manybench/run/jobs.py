"""The plan checks of a parallel task that need the run's nodes: a launcher family that cannot
express the phase's rank-to-node layout is refused (exit 2, naming the field). What a
parallel phase's records say job by job is the kernel's (kernels/mpi_phase.py).
"""
from __future__ import annotations

from ..model import Phase


def layout_problems(phase: Phase, work: dict, field: str) -> list[str]:
    """Why the phase's launcher cannot place its jobs' ranks as `work` (node -> assignments)
    does; [] when it can or the launcher is not found here (its node checks again)."""
    from ..launchers import LauncherError, resolve   # noqa: PLC0415
    ranks = phase.params.get("ranks")
    if not isinstance(ranks, int) or ranks < 1:
        return []
    node_of = {a.rank: node for node, assigned in work.items() for a in assigned}
    try:
        fam = resolve(phase.task.launcher or "auto", phase.env).family
    except LauncherError:
        return []
    out = []
    for j in range(phase.workers // ranks):
        why = fam.check([node_of.get(j * ranks + r, "") for r in range(ranks)])
        if why:
            out.append(f"{field}: {fam.title} cannot place job {j} of task {phase.task.name}: "
                       f"{why}")
            break
    return out
