"""Every view of a run's figures, read back as what it shows: per point, figure and scope,
the median as the view writes it (three significant digits, kernels' declared figures in
report/colunits.num's form), its unit and its scope label. `assert_views_agree` checks that
they all say the same (issue 29: one figure, one meaning, in every view).

Views:
  table    `manybench report --all` (the Tables it lays out, checked against its text)
  json     `manybench report --json` (each figure's median / shown_factor, in shown_unit)
  plots    the series behind the HTML figures (`report --html`: data-values)
  history, compare (against itself): their --json, each Value field for field
           `report --json`'s (the unit each writes it in is its own: history picks one
           per column over its runs)
and the points the phases' stored aggregates give are those every record gives
(tests/aggregate_check.py).
A test module imports this (not another test module)."""
from __future__ import annotations

import html
import json
import os
import re
from dataclasses import dataclass
from typing import Callable

from aggregate_check import assert_aggregates_agree
from conftest import run_cli
from manybench.report.build import build
from manybench.report.colunits import num

Key = tuple[str, str, str]          # point key, figure, scope


def _point_key(point) -> str | None:
    """The stored key (plan/expand.point_key) of a --json `point` object."""
    if isinstance(point, dict) and set(point) == {"group", "task"}:
        return f"{_point_key(point['group'])}#{point['task']}"
    if isinstance(point, dict):
        return json.dumps(point, sort_keys=True, default=str)
    return point if isinstance(point, str) else None


@dataclass(frozen=True)
class Shown:
    text: str      # the median as written
    unit: str
    scope: str


def _unit_of(header: str, scope: str) -> str:
    """The unit in a table's header: "bandwidth\\naggregate, GiB/s" -> "GiB/s"; a
    distribution's "skew\\nus\\nmed / max" -> "us"; "per-slot time\\ns" -> "s"."""
    lines = header.split("\n")
    for line in lines[1:]:
        if line.startswith(scope):
            return line[len(scope):].lstrip(", ")
    rest = [x for x in lines[1:] if " / " not in x]
    return rest[-1] if rest else ""


def table_view(out: str) -> dict[Key, Shown]:
    (view,) = build(out, all_columns=True)
    res = run_cli("report", out, "--all", env={**os.environ, "COLUMNS": "1000"})
    assert res.returncode == 0, res.stderr
    got: dict[Key, Shown] = {}
    for t in view.tables:
        if not t.figures:
            continue
        for point, row in zip(t.points, t.rows):
            for j, fig in enumerate(t.figures):
                if fig is None or row[j] == "-":
                    continue
                assert row[j] in res.stdout, (t.title, t.columns[j], row[j])
                text = row[j].split(" / ")[0].split(" (")[0]
                got[(point, *fig)] = Shown(text, _unit_of(t.columns[j], fig[1]), fig[1])
    return got


def _walk(tree, take: Callable[[dict], object | None], point: str | None = None
          ) -> dict[Key, object]:
    """Every figure object in a --json tree that take() makes something of, keyed by the
    point it sits under (the nearest `point` above it), its figure and its scope."""
    out: dict[Key, object] = {}
    if isinstance(tree, dict):
        point = _point_key(tree.get("point")) or point
        got = take(tree)
        if got is not None:
            out[(point or "", tree["figure"], tree["scope"])] = got
        for v in tree.values():
            out |= _walk(v, take, point)
    elif isinstance(tree, list):
        for v in tree:
            out |= _walk(v, take, point)
    return out


def _shown(f: dict) -> Shown | None:
    """A figure as `report --json` says a view writes it: median / shown_factor."""
    if not {"figure", "scope", "median", "shown_unit", "shown_factor"} <= set(f):
        return None
    return Shown(num(f["median"] / f["shown_factor"]), f["shown_unit"], f["scope"])


def _value(f: dict) -> dict | None:
    """A figure's Value as stored (the unit a view writes it in left out: history picks one
    per column over its runs)."""
    if not {"figure", "scope", "median", "n"} <= set(f):
        return None
    return {k: v for k, v in f.items() if not k.startswith("shown_")}


def json_view(out: str) -> dict[Key, Shown]:
    res = run_cli("report", out, "--json")
    assert res.returncode == 0, res.stderr
    return _walk(json.loads(res.stdout), _shown)


def plot_view(out: str) -> dict[Key, Shown]:
    page = os.path.join(out, "..", "views-agree.html")
    res = run_cli("report", out, "--html", page)
    assert res.returncode == 0, res.stderr
    text = open(page, encoding="utf-8").read()
    got: dict[Key, Shown] = {}
    for m in re.finditer(r'<figure class="plot" data-plot="(\w+)" data-values="([^"]*)"', text):
        for s in json.loads(html.unescape(m.group(2))):
            for point, median in zip(s["points"], s["median"]):
                got[(point, s["figure"], s["scope"])] = Shown(num(median), s["unit"], s["scope"])
    return got


def _cli_values(*args: str) -> Callable[[str], dict[Key, dict]]:
    def read(out: str) -> dict[Key, dict]:
        res = run_cli(*[out if a == "{out}" else a for a in args], "--json")
        assert res.returncode == 0, res.stderr
        return _walk(json.loads(res.stdout), _value)
    return read


# the views beside the table, each read as the table is
VIEWS: dict[str, Callable[[str], dict[Key, Shown]]] = {"json": json_view, "plots": plot_view}
# views whose every figure must be found in the table (the others show a part of them)
WHOLE = ("json",)
# views joined by value: each Value they hold is `report --json`'s for the same point,
# figure and scope, field for field (which the table writes as checked above)
BY_VALUE: dict[str, Callable[[str], dict[Key, dict]]] = {
    "history": _cli_values("history", "{out}"),
    "compare": _cli_values("compare", "{out}", "{out}")}


def assert_views_agree(out: str) -> dict[str, int]:
    """Every figure each view shows is the table's (same median as written, same unit, same
    scope), `report --json` has every figure of the table, and history's and compare's
    Values are report --json's. Returns the figures checked per view."""
    table = table_view(out)
    assert table, "the table shows no figure"
    checked = {"table": len(table)}
    for name, read in VIEWS.items():
        try:
            seen = read(out)
        except AssertionError:
            if name in WHOLE:
                raise
            continue               # a view that cannot read this run (compare: one run)
        if not seen:
            continue
        if name in WHOLE:
            missing = sorted(set(table) - set(seen))
            assert not missing, (name, missing[:10])
        for key, shown in seen.items():
            assert key in table, (name, key, "not in the table")
            assert shown == table[key], (name, key, shown, table[key])
        checked[name] = len(seen)
    report = _cli_values("report", "{out}")(out)
    for name, read in BY_VALUE.items():
        seen = read(out)
        assert seen, (name, "holds no figure")
        for key, value in seen.items():
            assert key in report, (name, key, "not in report --json")
            assert value == report[key], (name, key, value, report[key])
        checked[name] = len(seen)
    # the views read the phases' aggregates (issue 30): they give what every record gives
    checked["aggregates"] = assert_aggregates_agree(out)
    return checked
