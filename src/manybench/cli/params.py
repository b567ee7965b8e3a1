"""The command line's own option types: a choice read from a registry, and --fanout."""
from __future__ import annotations

import importlib

import click


class Registry(click.Choice):
    """A choice among a registry's names (module, attribute), read from the registry when the
    option is used or its help shown: the command line lists no names of its own, and imports
    the registry's module only then."""

    def __init__(self, module: str, attr: str) -> None:
        self.where = (module, attr)
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        module, attr = self.where
        return tuple(getattr(importlib.import_module(module, "manybench"), attr))

    @choices.setter
    def choices(self, value: object) -> None:
        pass     # click.Choice.__init__ sets it: the registry stays the only source


class Fanout(click.ParamType):
    """--fanout: auto (None), off (0), or nodes per relay (1 or more)."""
    name = "auto|off|N"

    def convert(self, value, param, ctx):
        if value in (None, "auto") or isinstance(value, int):
            return None if value == "auto" else value
        if value == "off":
            return 0
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            self.fail(f"{value!r}: give auto, off, or how many nodes each relay serves "
                      "(1 or more)", param, ctx)
        return n
