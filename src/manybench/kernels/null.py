"""`null`: no work at all; its phases measure lateness, skew and sync overhead."""
from __future__ import annotations

from .base import Kernel, Result, SlotContext


def _prepare(ctx: SlotContext, params: dict) -> None:
    return None


def _run(state: None, t0_ns: int, spin_ns: int) -> Result:
    raise NotImplementedError  # filled by the native kernels work


NULL = Kernel(
    name="null",
    doc="Does nothing between its start and end stamps. Its phases measure how late each slot "
        "starts (lateness), the spread of starts (skew) and the sync overhead "
        "(last end - first start), SMTEF's null-task figure.",
    params={},
    prepare=_prepare,
    run=_run,
)
