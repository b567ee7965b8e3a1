"""Registry of built-in kernels: each module of this package listed here exports KERNELS;
adding a kernel is adding it to a module (or a module and one name here)."""
from __future__ import annotations

from importlib import import_module

from .base import REQUIRED, Kernel, Param, Result, SlotContext

MODULES = ("null", "io", "meta", "stream", "himeno", "dgemm", "randio", "net")

KERNELS: dict[str, Kernel] = {
    k.name: k for m in MODULES for k in import_module(f"{__name__}.{m}").KERNELS}

__all__ = ["KERNELS", "Kernel", "Param", "Result", "SlotContext", "REQUIRED"]
