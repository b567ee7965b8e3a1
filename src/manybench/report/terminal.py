"""The terminal report: run header, one rich table per task, errors and notes below."""
from __future__ import annotations

import io
import os
from dataclasses import replace

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table as RichTable
from rich.text import Text

from ..printable import printable
from ..results.store import Store
from .build import build
from .view import RunView, Table


def _rich(t: Table, cols: list[int], widths: list[int] | None = None) -> RichTable:
    # compact tables draw no vertical rules: two columns' more figures fit in 80 columns
    style = {"box": box.SIMPLE_HEAD, "pad_edge": False, "collapse_padding": True} \
        if t.drop or t.wrap else {}
    # the title on a line of its own above (main's print): as a rich title it was wrapped to
    # the table's width, "mkdir (meta.mkdir), 3" over "phases a row" above a narrow table
    table = RichTable(header_style="bold", **style)
    for i, j in enumerate(cols):
        table.add_column(Text(t.columns[j]), overflow="fold",
                         width=widths[i] if widths else None)
    for row in t.rows:
        table.add_row(*(Text(row[j]) for j in cols))   # Text: never parsed as rich markup
    return table


def _lines(text: str) -> list[str]:
    return text.splitlines() or [""]


def _wrapped(t: Table, console: Console) -> list[int] | None:
    """Column widths that fit the console, narrowing the columns with most room first and
    never below a column's longest word (cells then wrap at spaces); None: it fits as is."""
    cols = list(range(len(t.columns)))
    natural = [max(len(line) for text in [t.columns[j]] + [r[j] for r in t.rows]
                   for line in _lines(text)) for j in cols]
    least = [max((len(w) for text in [t.columns[j]] + [r[j] for r in t.rows]
                  for w in text.split()), default=1) for j in cols]
    extra = _width(t, cols, console) - sum(natural)     # rules and padding
    widths = list(natural)
    while sum(widths) + extra > console.width:
        j = max(cols, key=lambda k: widths[k] - least[k])
        if widths[j] <= least[j]:
            break
        widths[j] -= 1
    return None if widths == natural else widths


def _width(t: Table, cols: list[int], console: Console) -> int:
    wide = console.options.update_width(1 << 16)   # measure unclamped by the console
    return Measurement.get(console, wide, _rich(t, cols)).maximum


def _fit(t: Table, console: Console) -> tuple[Table, list[int], list[int]]:
    """A compact table's columns that fit the console: the ranges go first (medians only),
    then the least important columns."""
    shown = list(range(len(t.columns)))
    if t.short_rows and _width(t, shown, console) > console.width:
        t = replace(t, rows=t.short_rows)
    dropped: list[int] = []
    for j in t.drop:
        if _width(t, shown, console) <= console.width:
            break
        shown.remove(j)
        dropped.append(j)
    return t, shown, dropped


def _parts(t: Table, console: Console) -> list[list[int]]:
    """Column groups that each fit the console without wrapping a figure.

    A wide table on a narrow terminal would fold every number over several lines; instead
    it is printed as several tables, each repeating the columns that identify a row.
    """
    keys = list(range(t.keys))
    figures = list(range(t.keys, len(t.columns)))

    def width(cols: list[int]) -> int:
        wide = console.options.update_width(1 << 16)   # measure unclamped by the console
        return Measurement.get(console, wide, _rich(t, cols)).maximum

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


def _late_line(t: Table, cols: list[int], j: int) -> str:
    """A dropped late-starts column as one line: "late starts (phases): workers 1: 3/5
    (a stall 2); ..." (each row named by its key cells)."""
    keys = [k for k in cols if k < t.keys]
    rows = []
    for row in t.rows:
        name = ", ".join(f"{t.columns[k].splitlines()[-1]} {row[k]}" for k in keys)
        rows.append(f"{name}: {row[j]}" if name else row[j])
    return f"{' '.join(t.columns[j].split())}: {'; '.join(rows)}"


def _shown(view: RunView) -> RunView:
    """The view with every string it shows escaped (printable.py): a command's output, a
    parameter's value, a node's name are text on the terminal, never control. Done once
    here, so the widths measured are those of the text shown."""
    def rows(table: list[list[str]]) -> list[list[str]]:
        return [[printable(c) for c in row] for row in table]

    def strings(items: list[str]) -> list[str]:
        return [printable(s) for s in items]

    tables = [replace(t, title=printable(t.title), columns=strings(t.columns),
                      rows=rows(t.rows), short_rows=rows(t.short_rows), notes=strings(t.notes),
                      errors=strings(t.errors), names=strings(t.names), hints=strings(t.hints))
              for t in view.tables]
    return replace(view, title=printable(view.title), tables=tables,
                   header=[(printable(k), printable(v)) for k, v in view.header],
                   notes=strings(view.notes), warnings=strings(view.warnings),
                   legend=printable(view.legend), hints=strings(view.hints))


def _render_run(view: RunView, console: Console) -> None:
    view = _shown(view)
    console.rule(Text(view.title, style="bold"))
    head = RichTable.grid(padding=(0, 2))
    head.add_column(style="bold", no_wrap=True)
    head.add_column()
    for label, value in view.header:
        head.add_row(Text(label), Text(value))
    console.print(head)
    for note in view.notes:
        console.print(Text("note: " + note, style="yellow"))
    for warning in view.warnings:
        console.print(Text(warning, style="bold red"))
    if not view.tables:
        console.print(Text("no phases recorded yet", style="dim"))
    for t in view.tables:
        widths = None
        if t.drop:     # a compact table: one table, never split
            t, cols, dropped = _fit(t, console)
            parts = [cols]
        elif t.wrap:   # one table whose cells wrap at spaces to fit
            parts, dropped = [list(range(len(t.columns)))], []
            widths = _wrapped(t, console)
        else:
            parts, dropped = _parts(t, console), []
        for i, cols in enumerate(parts):
            title = t.title if len(parts) == 1 else f"{t.title} ({i + 1}/{len(parts)})"
            console.print()
            console.print(Text(title, style="bold"), overflow="fold")
            console.print(_rich(t, cols, widths))
        # late starts dropped at this width: a line below, each row's count and causes
        late = [j for j in dropped if t.names and t.names[j] == "late"]
        if late:
            console.print(Text(_late_line(t, cols, late[0]), style="dim"))
            dropped = [j for j in dropped if j not in late]
        if dropped:
            names = list(dict.fromkeys(t.names[j] if t.names else t.columns[j] for j in dropped))
            console.print(Text(f"not shown at this width: {', '.join(names)} (report --metrics "
                               "NAME,... or --all)", style="dim"))
        if t.short_rows and t.rows is t.short_rows:
            console.print(Text("medians only at this width (ranges: a wider terminal or --all)",
                               style="dim"))
        for note in t.notes:
            console.print(Text(note, style="dim"))
        for err in t.errors:
            console.print(Text(err, style="red"))
        for hint in t.hints:
            console.print(Text("hint: " + hint, style="cyan"))
    for hint in view.hints:
        console.print(Text("hint: " + hint, style="cyan"))
    console.print()
    console.print(Text(view.legend, style="dim"))


def render(store_dir_or_store: Store | str | os.PathLike, console: Console | None = None,
           run_id: str | None = None, all_runs: bool = False, figures: list[str] | None = None,
           all_columns: bool = False) -> None:
    """Print the report of the directory's latest run (or of `run_id`, or of every run):
    per task its headline figures, the `figures` named instead, or every figure."""
    render_views(build(store_dir_or_store, run_id, all_runs, figures, all_columns), console)


def render_views(views: list[RunView], console: Console | None = None) -> None:
    """Print views built once (report/build.py)."""
    console = console or Console()
    if not views:
        console.print(Text("no runs recorded", style="dim"))
    for view in views:
        _render_run(view, console)


def render_view(view: RunView, console: Console | None = None) -> None:
    """Print one view built elsewhere (`manybench compare`'s)."""
    _render_run(view, console or Console())


def render_text(directory: Store | str | os.PathLike, width: int = 160,
                run_id: str | None = None, all_runs: bool = False,
                figures: list[str] | None = None, all_columns: bool = False) -> str:
    """The terminal report as plain text (no colour codes), e.g. for tests."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None, force_terminal=False,
                      highlight=False, emoji=False)
    render(directory, console, run_id, all_runs, figures, all_columns)
    return buf.getvalue()
