"""The command line, a thin layer: one module per command or group parses its options and
calls the layers below (errors.py turns what a user can fix into one line and exit 2).

Exit codes (README.md): 0 all phases succeeded, 1 some tasks failed, 2 invalid plan or
arguments (nothing run), 130 interrupted with every finished phase kept.
"""
from __future__ import annotations

from . import build, cluster, machine, report, run, runs
from .group import main

for _module in (run, report, runs, machine, build, cluster):
    for _command in _module.COMMANDS:
        main.add_command(_command)

__all__ = ["main"]
