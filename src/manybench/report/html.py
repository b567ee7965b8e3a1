"""The HTML report: one self-contained page (inline CSS, figures as inline SVG, no scripts):
per task its headline table, its hints, its figures, and every figure in a table below."""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from html import escape

from ..outfile import replacing
from ..results.store import Store
from .build import build
from .view import RunView, Table

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 75em; }
h1 { font-size: 1.4em; border-bottom: 1px solid #ccc; padding-bottom: .2em; }
h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .4em 0; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; }
table.header th, table.header td { text-align: left; border: none; white-space: normal; }
.note { color: #8a6d00; } .dim { color: #666; font-size: .9em; } .err { color: #b00020; }
.hint { color: #00577a; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
figure.plot { margin: 0; } figure.plot svg { width: 36em; height: auto; }
details { margin: .6em 0; }
"""


def _header_cell(name: str) -> str:
    # the "\n" a column name carries for the terminal is a line break here too
    return "<br>".join(escape(part) for part in name.split("\n"))


def _series_json(series: list) -> str:
    return json.dumps([asdict(s) for s in series], separators=(",", ":"))


def _table(t: Table, title: bool = True) -> list[str]:
    out = [f"<h2>{escape(t.title)}</h2>"] if title else []
    out.append("<table><tr>" + "".join(f"<th>{_header_cell(c)}</th>" for c in t.columns)
               + "</tr>")
    out += ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in t.rows]
    out.append("</table>")
    out += [f'<p class="dim">{escape(n)}</p>' for n in t.notes]
    out += [f'<p class="err">{escape(e)}</p>' for e in t.errors]
    out += [f'<p class="hint">hint: {escape(h)}</p>' for h in t.hints]
    return out


def _run_html(view: RunView, full: dict[str, Table], plots: dict[str, list]) -> str:
    out = [f"<h1>{escape(view.title)}</h1>", '<table class="header">']
    out += [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in view.header]
    out.append("</table>")
    out += [f'<p class="note">note: {escape(n)}</p>' for n in view.notes]
    out += [f'<p class="err">{escape(w)}</p>' for w in view.warnings]
    if not view.tables:
        out.append('<p class="dim">no phases recorded yet</p>')
    for t in view.tables:
        out += _table(t)
        task = t.task if t.drop else None
        figs = plots.get(task or "", [])
        if figs:
            out.append('<div class="plots">')
            # the series a figure drew, beside it: what it shows, as the table does
            out += [f'<figure class="plot" data-plot="{escape(p.name)}"'
                    + (f' data-values="{escape(_series_json(p.series))}"' if p.series else "")
                    + f">{p.svg()}<figcaption class=\"dim\">{escape(p.task)}: "
                    f"{escape(p.title)}</figcaption></figure>" for p in figs]
            out.append("</div>")
        if task in full:
            out.append(f"<details><summary>every figure of {escape(task)}</summary>")
            out += _table(full[task], title=False)
            out.append("</details>")
    out += [f'<p class="hint">hint: {escape(h)}</p>' for h in view.hints]
    out.append(f'<p class="dim">{escape(view.legend)}</p>')
    return "\n".join(out)


def html_page(store_dir_or_store: Store | str | os.PathLike, run_id: str | None = None,
              all_runs: bool = False, with_plots: bool = True) -> str:
    """The report as one HTML document (a string): latest run, `run_id`, or every run."""
    store = store_dir_or_store if isinstance(store_dir_or_store, Store) \
        else Store(store_dir_or_store, readonly=True)
    try:
        return page_of_views(store, build(store, run_id, all_runs, keep=True), with_plots)
    finally:
        if store is not store_dir_or_store:
            store.close()


def page_of_views(store: Store, views: list[RunView], with_plots: bool = True) -> str:
    """The page of views built once with keep=True (report/build.py)."""
    parts = []
    for v in views:
        plots = {}
        if with_plots and v.run_id:
            from .plots import figures   # noqa: PLC0415 (matplotlib only for a page)
            plots = figures(store, v.run_id, v.data)
        parts.append(_run_html(v, v.full, plots))
    title = views[-1].title if views else "manybench report"
    body = "\n".join(parts) or '<p class="dim">no runs recorded</p>'
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n"
            f"<body>\n{body}\n</body></html>\n")


def write_html(store_dir: Store | str | os.PathLike, path: str | os.PathLike,
               run_id: str | None = None, all_runs: bool = False) -> None:
    """Write the HTML report of a results directory to `path`."""
    page = html_page(store_dir, run_id, all_runs)
    with replacing(path, encoding="utf-8") as f:      # whole or not at all
        f.write(page)
