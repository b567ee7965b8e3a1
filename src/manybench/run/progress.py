"""The live progress line while a run goes: phases done/total, current point, elapsed.

Refreshed by the coordinator's own loop (no refresh thread: slots are forked from this
process, and forking with threads alive is unsafe).
"""
from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class RunProgress:
    def __init__(self, total: int, enabled: bool | None = None) -> None:
        console = Console(file=sys.stderr)
        self.enabled = console.is_terminal if enabled is None else enabled
        self.last = 0.0
        self.progress = None
        if self.enabled:
            self.progress = Progress(TextColumn("[bold]phases"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("{task.description}"),
                                     console=console, auto_refresh=False, transient=False)
            self.task = self.progress.add_task("", total=total)

    def __enter__(self) -> "RunProgress":
        if self.progress:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress:
            self.progress.refresh()
            self.progress.stop()

    def point(self, label: str) -> None:
        if self.progress:
            self.progress.update(self.task, description=label)
            self.tick()

    def advance(self) -> None:
        if self.progress:
            self.progress.advance(self.task)
            self.tick()

    def tick(self) -> None:
        """Redraw at most 10 times a second, so 1,000 short phases do not pay for drawing."""
        now = time.monotonic()
        if self.progress and now - self.last > 0.1:
            self.last = now
            self.progress.refresh()
