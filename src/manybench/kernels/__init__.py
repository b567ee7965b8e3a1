"""Registry of built-in kernels: adding a kernel is adding a module and one line here."""
from __future__ import annotations

from .base import REQUIRED, Kernel, Param, Result, SlotContext
from . import io, meta, null

KERNELS: dict[str, Kernel] = {k.name: k for k in (null.NULL, io.WRITE, io.READ, *meta.KERNELS)}

__all__ = ["KERNELS", "Kernel", "Param", "Result", "SlotContext", "REQUIRED"]
