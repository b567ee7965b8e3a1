"""`null`: no work at all; its phases measure lateness, skew, sync overhead and the phase
cycle."""
from __future__ import annotations

from types import ModuleType

from ..node.wire_types import Result, SlotContext
from .base import Kernel, Standalone
from .figures import CYCLE, LATENESS, SKEW, SYNC_OVERHEAD
from .native import native, result_from_native


def _prepare(ctx: SlotContext, params: dict) -> ModuleType:
    return native()  # fails here, before T0, when the C kernels are not built


def _run(state: ModuleType, t0_ns: int, spin_ns: int) -> Result:
    return result_from_native(state.run_null(t0_ns, spin_ns))


STANDALONE = Standalone(args=lambda ctx, params: {},
                        finish=lambda d, args: result_from_native(d))

NULL = Kernel(
    name="null",
    figures=(SYNC_OVERHEAD.first(), SKEW.first(), LATENESS.first(), CYCLE.first()),
    doc="Does nothing between its start and end stamps. Its phases measure how late each slot "
        "starts (lateness), the spread of starts (skew), the sync overhead (last end - first "
        "start) and the phase cycle (the coordinator's go to the last end). The phase cycle is "
        "the figure to set beside SMTEF's null tasks (docs/definitions.md says why).",
    params={},
    prepare=_prepare,
    run=_run,
    light_prepare=True,   # nothing to lay out: prepare and go travel in one message
    sync_only=True,
    standalone=STANDALONE,
)

KERNELS = [NULL]
