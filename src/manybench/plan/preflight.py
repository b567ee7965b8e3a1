"""Checks of the expanded phases that need their placement or this machine, made before
anything starts (and by --dry-run), so a phase that could only fail is never run: a kernel's
placement rules (threads beyond a pinned slot's cpus, an odd worker count for net.*) and a
command that is not on PATH. Each problem names the field, as plan errors do."""
from __future__ import annotations

import os
import shutil

from ..kernels import kernel
from ..model import Phase, Plan
from .expand import distinct
from .parallel import parallel_problems


def slot_cpus(phase: Phase) -> int | None:
    """The cpus each slot may run on when the plan alone fixes it (pin = core)."""
    if phase.pin == "core" and phase.bind in (None, "core") and isinstance(phase.cpus, int) \
            and not isinstance(phase.cpus, bool):
        return phase.cpus
    return None


def _field(phase: Phase, name: str) -> str:
    if name == "workers" and not phase.task.workers:
        return "placement.workers"
    return f"task.{phase.task.name}.{name}"


def _missing(argv0: str, env: dict) -> bool:
    """Whether a command's program cannot be found (as the slot will look it up)."""
    if "/" in argv0:
        return os.path.isabs(argv0) and not (os.path.isfile(argv0) and os.access(argv0, os.X_OK))
    return shutil.which(argv0, path=env.get("PATH", os.environ.get("PATH"))) is None


def _command_problem(plan: Plan, phase: Phase) -> str | None:
    cmd = phase.task.command
    if not cmd or phase.task.shell or phase.wrap or "{" in cmd[0]:
        return None     # a shell line, a wrapped (container) program or a template: unknown
    variant = next((v for v in plan.variants if v.name == phase.variant), None)
    if variant is not None and variant.setup:
        return None     # its setup may install the program
    if _missing(cmd[0], phase.env):
        return f"{_field(phase, 'command')}: program {cmd[0]!r} is not found on PATH"
    return None


# what one slot process holds (benchmarks/bench_sync.py measures ~5.7 MiB PSS a slot)
SLOT_BYTES = 6 * 2**20


def _memory_problem(plan: Plan, phases: list[Phase]) -> str | None:
    """A phase with more slots than this machine's memory holds, one process each: refused
    before any starts (64,000 workers here started slot after slot until memory ran out)."""
    import psutil
    most = max((ph for ph in distinct(phases)), key=lambda ph: ph.workers, default=None)
    if most is None:
        return None
    need, have = most.workers * SLOT_BYTES, psutil.virtual_memory().available
    if need <= have:
        return None
    return (f"{plan.path}: {_field(most, 'workers')}: {most.workers} slots on this machine "
            f"need ~{need / 2**30:.1f} GiB (a process each, ~{SLOT_BYTES >> 20} MiB), more "
            f"than its {have / 2**30:.1f} GiB available: run it on a cluster (--scheduler, "
            "--hosts, --cluster), or --simulate it to see what it costs the coordinator")


def preflight(plan: Plan, phases: list[Phase], distributed: bool = False
              ) -> tuple[list[str], list[str]]:
    """(errors, warnings), one line each. A program missing here is only a warning when the
    plan runs on other nodes, which may have it."""
    errors: dict[str, None] = {}
    warnings: dict[str, None] = {}
    for ph in distinct(phases):     # one phase per point: repeats add nothing to check
        for part in ph.members or [ph]:
            k = kernel(part.kernel)
            if k.check_placement is not None:
                for fld, msg in k.check_placement(part.params, part.workers, slot_cpus(part)):
                    errors.setdefault(f"{plan.path}: {_field(part, fld)}: {msg}", None)
            errs, warns = parallel_problems(part, distributed)
            for msg in errs:
                errors.setdefault(f"{plan.path}: {msg}", None)
            for msg in warns:
                warnings.setdefault(f"{plan.path}: {msg} (the nodes may have it)", None)
            if k.from_command:
                msg = _command_problem(plan, part)
                if msg:
                    (warnings if distributed else errors).setdefault(
                        f"{plan.path}: {msg}" + (" (the nodes may have it)" if distributed
                                                 else ""), None)
    if not distributed:
        msg = _memory_problem(plan, phases)
        if msg:
            errors.setdefault(msg, None)
    return list(errors), list(warnings)
