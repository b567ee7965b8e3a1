"""The live progress line while a run goes: phases done/total, elapsed, ETA (from the pace of
the phases so far), the last phase's aggregate rate, and the current point.

On a terminal it is a bar redrawn in place. When stderr is not a terminal (a batch job's
log, CI, a pipe) it is a plain line every run.progress_every (config/), never a bar's
escapes, which also says what the run is doing and for how long: a prepare of minutes shows
as such, not as silence; the last is written at the end when any was.

Refreshed by the coordinator's own loop (no refresh thread: slots are forked from this
process, and forking with threads alive is unsafe).
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.table import Column

from ..analysis.phase_figures import phase_figures
from ..config import timing
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


def clock_text(seconds: float) -> str:
    """A duration as the bar shows one: h:mm:ss."""
    s = max(0, round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class ProgressLines:
    """The plain lines written where there is no terminal: one at most every `every_s`
    seconds (default run.progress_every), as the coordinator's loop ticks, on `clock` (default
    time.monotonic)."""

    def __init__(self, total: int, every_s: float | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.total = total
        self.every_s = timing("run.progress_every") if every_s is None else every_s
        self.clock = clock or time.monotonic
        self.began = self.written = self.since = self.clock()
        self.done, self.label, self.what = 0, "", ""
        self.index: int | None = None     # the phase about to run (or running)
        # the last phase's records: its rate is read only when a line is written (reading
        # it every phase costs a 64,000-slot phase its Records)
        self.records: Sequence[Record] | None = None
        self.lines = 0

    def doing(self, what: str) -> None:
        if what != self.what:
            self.what, self.since = what, self.clock()

    def tick(self, final: bool = False) -> None:
        now = self.clock()
        if final or now - self.written >= self.every_s:
            self.written = now
            self.lines += 1
            print(self.text(now, final), file=sys.stderr, flush=True)

    def text(self, now: float, final: bool = False) -> str:
        elapsed = now - self.began
        parts = [f"progress: {self.done}/{self.total} phases, {clock_text(elapsed)} elapsed"]
        if 0 < self.done < self.total:
            parts[0] += f", ETA {clock_text(elapsed / self.done * (self.total - self.done))}"
        rate = rate_text(self.records) if self.records else ""
        if rate:
            parts.append(f"last phase {rate}")
        if final and self.done == self.total:     # its end is still to come, and can be long
            parts.append("ending the run: its checks, its nodes closed, their scratch removed")
        if not final and self.what and self.done < self.total:
            which = "" if self.index is None else f" {self.index}"
            parts.append(f"{self.what} phase{which} ({printable(self.label)}) for "
                         f"{clock_text(now - self.since)}")
        return "; ".join(parts)


class RunProgress:
    def __init__(self, total: int, enabled: bool | None = None,
                 every_s: float | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        console = Console(file=sys.stderr)
        # True: the bar; None: the bar on a terminal, else lines; False: nothing
        self.enabled = True if enabled is None and console.is_terminal else enabled
        self.lines = (ProgressLines(total, every_s, clock) if enabled is None and
                      not self.enabled else None)
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
        if self.lines and self.lines.lines:    # the log ends with where the run got to
            self.lines.tick(final=True)

    def point(self, label: str, index: int | None = None) -> None:
        """The phase about to run (its index, as the report numbers phases); a new point
        clears the rate of the one before (a mkdir point showed the MiB/s of the io point
        before it). The label (a parameter's value) is text: its controls escaped, its
        brackets no rich markup."""
        if self.lines:
            self.lines.index = index
            if label != self.lines.label:     # a rate is told beside its own point only
                self.lines.label, self.lines.records = label, None
            self.lines.tick()
        if self.progress:
            fields = {} if label == self.label else {"rate": ""}
            self.label = label
            self.progress.update(self.task, description=escape(printable(label)), **fields)
            self.tick()

    def advance(self, records: Sequence[Record] | None = None) -> None:
        """One phase done; its records give the rate shown until the next one ends (none
        when the phase has no rate of its own, never the one before)."""
        if self.lines:
            self.lines.done += 1
            self.lines.records = records
            self.lines.doing("")       # between phases until the next one says
            self.lines.tick()
        if self.progress:
            self.progress.update(self.task, advance=1, rate=rate_text(records) if records else "")
            self.tick()

    def doing(self, what: str) -> None:
        """What the run does now for the phase about to run ("preparing", "running"): the
        lines say it, with for how long."""
        if self.lines:
            self.lines.doing(what)

    def tick(self) -> None:
        """Redraw at most 10 times a second, so 1,000 short phases do not pay for drawing."""
        if self.lines:
            self.lines.tick()
        now = time.monotonic()
        if self.progress and now - self.last > 0.1:
            self.last = now
            self.progress.refresh()
