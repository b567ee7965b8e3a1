"""How the coordinator reaches node agents. One table: adding an engine is adding a module."""
from __future__ import annotations

from .base import Engine
from .local import LocalEngine

ENGINES: dict[str, type[Engine]] = {"local": LocalEngine}

__all__ = ["ENGINES", "Engine", "LocalEngine"]
