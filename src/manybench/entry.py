"""The `manybench` command's entry point: it owns SIGINT and SIGTERM before anything else is
imported, so an interrupt at any moment (start-up, a big plan's expansion, a run, its end)
is exit 130, never a traceback, click's "Aborted!" or a death by signal."""
from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def _forget_handled_interrupt() -> None:
    """A Ctrl-C that lands while Python runs a string through exec() (a dataclass or a named
    tuple being made while a module is imported) sets CPython's "unhandled KeyboardInterrupt"
    flag even when the interrupt is then handled, and `python -m manybench` would end in a
    death by SIGINT instead of the status given. Every exec() of a string clears the flag
    first; one that succeeds leaves it clear."""
    exec("pass")


def main() -> None:
    from .run.interrupts import interrupted, signals_ignored, take_signals
    take_signals()
    try:
        from .cli import main as cli
        cli()
    except (KeyboardInterrupt, Exception) as e:
        # KeyboardInterrupt: outside any command (importing, parsing arguments); another
        # error after an interrupt that library code swallowed, leaving it broken
        # (interrupts.py): its consequence, and the command was interrupted
        if not isinstance(e, KeyboardInterrupt) and not interrupted():
            raise
        with signals_ignored():
            print("interrupted", file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)
    finally:
        with signals_ignored():          # the command is over: no interrupt may land inside it
            _forget_handled_interrupt()
