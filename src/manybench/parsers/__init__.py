"""Output parsers for external tools: `parse = "fio"` on a command task turns the tool's
output into named metrics (the unit in the name: _mb_s, _us, _gflops, ...).

Each module here exports NAME and parse(stdout, stderr) -> dict[str, float], raising
ParseError when the output is not the tool's; adding a parser is adding a module and its
name to MODULES.
"""
from __future__ import annotations

from importlib import import_module
from typing import Callable

MODULES: tuple[str, ...] = ("fio", "ior", "mdtest", "stream", "himeno", "hpl", "gnutime")


class ParseError(ValueError):
    """The output is not what the parser's tool prints."""


PARSERS: dict[str, Callable[[str, str], dict]] = {
    (m := import_module(f"{__name__}.{name}")).NAME: m.parse for name in MODULES}
