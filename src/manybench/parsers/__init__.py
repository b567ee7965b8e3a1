"""Output parsers for external tools: `parse = "fio"` on a command task turns the tool's
output into named metrics (the unit in the name: _mb_s, _us, _gflops, ...).

Each module here exports NAME and parse(stdout, stderr) -> dict[str, float], raising
ParseError when the output is not the tool's; adding a parser is adding a module and its
name to MODULES. A module whose tool prints size-indexed tables (osu, imb) also exports
tables(stdout, stderr) -> list[Series] (parsers/series.py); parse_output() returns both.
"""
from __future__ import annotations

from importlib import import_module
from typing import Callable

MODULES: tuple[str, ...] = ("fio", "ior", "mdtest", "stream", "himeno", "hpl", "gnutime",
                          "osu", "imb")


class ParseError(ValueError):
    """The output is not what the parser's tool prints."""


_MODS = {(m := import_module(f"{__name__}.{name}")).NAME: m for name in MODULES}
PARSERS: dict[str, Callable[[str, str], dict]] = {n: m.parse for n, m in _MODS.items()}


def parse_output(name: str, stdout: str, stderr: str) -> tuple[dict[str, float], list]:
    """The named parser's metrics and its tables (a list of Series; empty for a parser
    without tables). ParseError as parse()."""
    mod = _MODS[name]
    metrics = mod.parse(stdout, stderr)
    tables = getattr(mod, "tables", None)
    return metrics, (tables(stdout, stderr) if tables else [])
