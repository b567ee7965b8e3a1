"""The HTML report: one self-contained page (inline CSS, no scripts) with the terminal's tables."""
from __future__ import annotations

import os
from html import escape

from ..results.store import Store
from .tables import RunView, build

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; border-bottom: 1px solid #ccc; padding-bottom: .2em; }
h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .4em 0; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; }
table.header th, table.header td { text-align: left; border: none; white-space: normal; }
.note { color: #8a6d00; } .dim { color: #666; font-size: .9em; } .err { color: #b00020; }
"""


def _header_cell(name: str) -> str:
    # the "\n" a column name carries for the terminal is a line break here too
    return "<br>".join(escape(part) for part in name.split("\n"))


def _run_html(view: RunView) -> str:
    out = [f"<h1>{escape(view.title)}</h1>", '<table class="header">']
    out += [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in view.header]
    out.append("</table>")
    out += [f'<p class="note">note: {escape(n)}</p>' for n in view.notes]
    out += [f'<p class="err">{escape(w)}</p>' for w in view.warnings]
    if not view.tables:
        out.append('<p class="dim">no phases recorded yet</p>')
    for t in view.tables:
        out.append(f"<h2>{escape(t.title)}</h2><table><tr>"
                   + "".join(f"<th>{_header_cell(c)}</th>" for c in t.columns) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in t.rows]
        out.append("</table>")
        out += [f'<p class="dim">{escape(n)}</p>' for n in t.notes]
        out += [f'<p class="err">{escape(e)}</p>' for e in t.errors]
    out.append(f'<p class="dim">{escape(view.legend)}</p>')
    return "\n".join(out)


def html_page(store_dir_or_store: Store | str | os.PathLike, run_id: str | None = None,
              all_runs: bool = False) -> str:
    """The report as one HTML document (a string): latest run, `run_id`, or every run."""
    views = build(store_dir_or_store, run_id, all_runs)
    title = views[-1].title if views else "manybench report"
    body = "\n".join(_run_html(v) for v in views) or '<p class="dim">no runs recorded</p>'
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n"
            f"<body>\n{body}\n</body></html>\n")


def write_html(store_dir: Store | str | os.PathLike, path: str | os.PathLike,
               run_id: str | None = None, all_runs: bool = False) -> None:
    """Write the HTML report of a results directory to `path`."""
    page = html_page(store_dir, run_id, all_runs)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
