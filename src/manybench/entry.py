"""The `manybench` command's entry point: it owns SIGINT and SIGTERM before anything else is
imported, so an interrupt at any moment (start-up, a big plan's expansion, a run, its end)
is exit 130, never a traceback, click's "Aborted!" or a death by signal."""
from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> None:
    from .run.interrupts import ignored, own
    own()
    try:
        from .cli import main as cli
        cli()
    except KeyboardInterrupt:    # outside any command (importing, parsing arguments)
        with ignored():
            print("interrupted", file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)
