"""The terminal report: run header, one rich table per task, errors and notes below."""
from __future__ import annotations

import io
import os

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

from ..results.store import Store
from .tables import RunView, Table, build


def _rich(t: Table, cols: list[int], title: str) -> RichTable:
    table = RichTable(title=Text(title, style="bold"), title_justify="left", header_style="bold")
    for j in cols:
        table.add_column(Text(t.columns[j]), overflow="fold")
    for row in t.rows:
        table.add_row(*(Text(row[j]) for j in cols))   # Text: never parsed as rich markup
    return table


def _parts(t: Table, console: Console) -> list[list[int]]:
    """Column groups that each fit the console without wrapping a figure.

    A wide table on a narrow terminal would fold every number over several lines; instead
    it is printed as several tables, each repeating the columns that identify a row.
    """
    keys = list(range(t.keys))
    figures = list(range(t.keys, len(t.columns)))

    def width(cols: list[int]) -> int:
        wide = console.options.update_width(1 << 16)   # measure unclamped by the console
        return Measurement.get(console, wide, _rich(t, cols, "")).maximum

    if width(keys + figures) <= console.width:
        return [keys + figures]
    parts: list[list[int]] = []
    current: list[int] = []
    for j in figures:
        if current and width(keys + current + [j]) > console.width:
            parts.append(keys + current)
            current = []
        current.append(j)
    parts.append(keys + current)
    return parts


def _render_run(view: RunView, console: Console) -> None:
    console.rule(Text(view.title, style="bold"))
    head = RichTable.grid(padding=(0, 2))
    head.add_column(style="bold", no_wrap=True)
    head.add_column()
    for label, value in view.header:
        head.add_row(label, Text(value))
    console.print(head)
    for note in view.notes:
        console.print(Text("note: " + note, style="yellow"))
    for warning in view.warnings:
        console.print(Text(warning, style="bold red"))
    if not view.tables:
        console.print(Text("no phases recorded yet", style="dim"))
    for t in view.tables:
        parts = _parts(t, console)
        for i, cols in enumerate(parts):
            title = t.title if len(parts) == 1 else f"{t.title} ({i + 1}/{len(parts)})"
            console.print()
            console.print(_rich(t, cols, title))
        for note in t.notes:
            console.print(Text(note, style="dim"))
        for err in t.errors:
            console.print(Text(err, style="red"))
    console.print()
    console.print(Text(view.legend, style="dim"))


def render(store_dir_or_store: Store | str | os.PathLike, console: Console | None = None,
           run_id: str | None = None, all_runs: bool = False) -> None:
    """Print the report of the directory's latest run (or of `run_id`, or of every run)."""
    console = console or Console()
    views = build(store_dir_or_store, run_id, all_runs)
    if not views:
        console.print(Text("no runs recorded", style="dim"))
    for view in views:
        _render_run(view, console)


def render_view(view: RunView, console: Console | None = None) -> None:
    """Print one view built elsewhere (`manybench compare`'s)."""
    _render_run(view, console or Console())


def render_text(directory: Store | str | os.PathLike, width: int = 160,
                run_id: str | None = None, all_runs: bool = False) -> str:
    """The terminal report as plain text (no colour codes), e.g. for tests."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False)
    render(directory, console, run_id, all_runs)
    return buf.getvalue()
