"""The live progress line while a run goes: phases done/total, elapsed, ETA (from the pace of
the phases so far), the last phase's aggregate rate, and the current point.

Refreshed by the coordinator's own loop (no refresh thread: slots are forked from this
process, and forking with threads alive is unsafe).
"""
from __future__ import annotations

import sys
import time
from typing import Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Column

from ..analysis.phase_figures import phase_figures
from ..printable import printable
from ..record import Record
from ..units import format_rate


def rate_text(records: list[Record]) -> str:
    """A finished phase's aggregate rate (bandwidth, else ops/s), for the progress line."""
    if not records:
        return ""
    f = phase_figures(records[0].phase, records, records[0].kernel)
    if f.bytes and f.bandwidth:
        return format_rate(f.bandwidth)
    if f.ops and f.ops_rate:
        return f"{f.ops_rate:,.0f} ops/s"
    return ""


class RunProgress:
    def __init__(self, total: int, enabled: bool | None = None) -> None:
        console = Console(file=sys.stderr)
        self.enabled = console.is_terminal if enabled is None else enabled
        self.last = 0.0
        self.progress = None
        if self.enabled:
            # every column but the point's label keeps its width (no_wrap, a minimum): on a
            # narrow terminal the label is cut, never the counter ("4/…") or the rate
            keep = lambda width=0: Column(no_wrap=True, min_width=width)
            digits = len(str(total))
            self.progress = Progress(
                TextColumn("[bold]phases", table_column=keep(6)), BarColumn(bar_width=10),
                MofNCompleteColumn(table_column=keep(2 * digits + 1)),
                TimeElapsedColumn(table_column=keep(7)), TextColumn("ETA", table_column=keep(3)),
                TimeRemainingColumn(table_column=keep(7)),
                TextColumn("{task.fields[rate]}", table_column=keep(len("1,234.5 MiB/s"))),
                TextColumn("{task.description}",
                           table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
                console=console, auto_refresh=False, transient=False, expand=True)
            self.task = self.progress.add_task("", total=total, rate="")
        self.label = ""

    def __enter__(self) -> "RunProgress":
        if self.progress:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress:
            self.progress.refresh()
            self.progress.stop()

    def point(self, label: str) -> None:
        """The phase about to run; a new point clears the rate of the one before (a mkdir
        point showed the MiB/s of the io point before it). The label (a parameter's value)
        is text: its controls escaped, its brackets no rich markup."""
        if self.progress:
            fields = {} if label == self.label else {"rate": ""}
            self.label = label
            self.progress.update(self.task, description=escape(printable(label)), **fields)
            self.tick()

    def advance(self, records: Sequence[Record] | None = None) -> None:
        """One phase done; its records give the rate shown until the next one ends (none
        when the phase has no rate of its own, never the one before)."""
        if self.progress:
            self.progress.update(self.task, advance=1, rate=rate_text(records) if records else "")
            self.tick()

    def tick(self) -> None:
        """Redraw at most 10 times a second, so 1,000 short phases do not pay for drawing."""
        now = time.monotonic()
        if self.progress and now - self.last > 0.1:
            self.last = now
            self.progress.refresh()
