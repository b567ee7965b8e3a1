"""Registry of built-in kernels: each module listed here exports KERNELS, a list of Kernel;
adding a kernel is adding it to a module (or a module and one name here).

Code outside this package never tests a kernel's name: it looks the kernel up with `kernel()`
and reads its traits (base.Kernel: uses_dir, light_prepare, runs_child, connects, ...).
"""
from __future__ import annotations

from importlib import import_module

from ..node.wire_types import Result, SlotContext
from .base import REQUIRED, SHARED, Kernel, Param
from .figures import Figure

MODULES = ("null", "io", "meta", "stream", "himeno", "dgemm", "randio", "net", "command",
           "mpi_job")

KERNELS: dict[str, Kernel] = {
    k.name: k for m in MODULES for k in import_module(f"{__name__}.{m}").KERNELS}

WARM_UP = "null"   # what an agent runs, unrecorded, to pay first-use costs before phase 0


def declared_metrics() -> dict[str, Figure]:
    """Every metric declared in this build, by name: those every slot adds and tools' parsers
    share first, then each kernel's (the first declaration of a name wins)."""
    out: dict[str, Figure] = dict(SHARED)
    for k in KERNELS.values():
        for f in k.figures:
            if not f.computed:
                out.setdefault(f.name, f)
    return out


def _unknown(ctx: SlotContext, params: dict) -> None:
    raise KeyError("unknown kernel")


def kernel(name: str) -> Kernel:
    """The kernel of that name; for a name this build does not know (a run stored by another
    version, say) a stand-in with no traits, so reading old results never fails."""
    k = KERNELS.get(name)
    if k is not None:
        return k
    return Kernel(name=name, doc="not a kernel of this build", params={}, prepare=_unknown,
                  run=_unknown)


__all__ = ["KERNELS", "WARM_UP", "Kernel", "Param", "Result", "SlotContext", "REQUIRED", "kernel",
           "declared_metrics", "Figure"]
