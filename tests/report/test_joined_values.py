"""`history DIR` and `compare DIR DIR` (a run against itself) show, for each point, the Value
`report --json` gives for that point's headline figure: the same number, unit and scope
(issue 29: one figure, one meaning, in every view)."""
from __future__ import annotations

import json
import os
import re

import pytest

from conftest import run_cli
from manybench.report.build import build

PLAN = """
name = "views"
repeat = 3
[placement]
workers = [1, 2]
[[task]]
name = "sync"
kernel = "null"
[[task]]
name = "write"
kernel = "io.write"
size = "4MiB"
block = ["256KiB", "1MiB"]
[[task]]
name = "mk"
kernel = "meta.mkdir"
items = 50
[[task]]
name = "rate"
command = ["sh", "-c", "echo rate: 12.5 MB/s"]
metrics.rate_mb_s = 'rate: (?P<value>[\\d.]+) MB/s'
[[task]]
name = "nap"
command = ["true"]
"""
UNITS = {"B/s": 1, "KiB/s": 2**10, "MiB/s": 2**20, "GiB/s": 2**30, "s": 1, "ms": 1e-3,
         "us": 1e-6, "ns": 1e-9, "MB/s": 1, "ops/s": 1, "kops/s": 1e3, "Mops/s": 1e6}


def _where(task: str, workers: int, params: dict) -> str:
    return json.dumps([task, workers, params], sort_keys=True)


def _headline(directory: str, report: dict) -> dict[str, dict]:
    """Per point, the Value of its headline figure: the first figure column of its task's
    compact table in the report, the first of that figure's Values in `report --json`
    (without the unit the report writes it in)."""
    first = {}
    for t in build(directory)[0].tables:
        if t.task:
            first[t.task] = t.names[t.keys:]
    out = {}
    for task in report["runs"][0]["tasks"]:
        for p in task["points"]:
            names = [f["figure"] for f in p["figures"]]
            name = next(n for n in first[task["task"]] if n in names)
            value = next(f for f in p["figures"] if f["figure"] == name)
            # the unit a view writes it in is the view's (history picks one per column)
            value = {k: v for k, v in value.items() if not k.startswith("shown_")}
            out[_where(task["task"], p["workers"], p["params"])] = value
    return out


def _history_cells(text: str) -> dict[str, list[tuple[float, float]]]:
    """Per task, the latest cell of each row of its table and its header's unit, both in the
    base unit ("<0.001" reads 0: under a thousandth of the unit)."""
    out: dict[str, list[tuple[float, float]]] = {}
    task, head = "", []
    for line in text.splitlines():
        m = re.match(r"^(\S+) \(([\w.]+)\): ", line)
        if m:
            task, head = m.group(1), []
        elif line.startswith("┃") and task:
            head.append([c.strip() for c in line.strip("┃").split("┃")])
        elif line.startswith("│") and task:
            cells = [c.strip() for c in line.strip("│").split("│")]
            cols = [" ".join(h[j] for h in head).split() for j in range(len(cells))]
            j = next(j for j, c in enumerate(cols) if c and c[0] == "latest")
            unit = UNITS[cols[j][1]] if len(cols[j]) > 1 else 1.0
            x = 0.0 if cells[j] == "<0.001" else float(cells[j])
            out.setdefault(task, []).append((x * unit, unit))
    return out


@pytest.mark.e2e
def test_history_and_compare_show_the_reports_headline_value(plan_file, tmp_path):
    out = str(tmp_path / "r")
    done = run_cli("run", plan_file(PLAN), "-o", out, "-q", timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(run_cli("report", out, "--json").stdout)
    want = _headline(out, report)
    assert len(want) == 12                       # 2 workers x (1 + 2 + 1 + 1 + 1) points
    history = json.loads(run_cli("history", out, "--json").stdout)
    got = {_where(p["task"], p["workers"], p["params"]): p for p in history["points"]}
    assert set(got) == set(want)
    for where, value in want.items():
        [run] = got[where]["runs"]
        assert run["value"] == value, where
    compare = json.loads(run_cli("compare", out, out, "--json").stdout)
    assert compare["unpaired"] == [{"run": "B", "lack": [], "extra": []}]
    rows = {_where(r["task"], r["baseline"]["workers"], r["baseline"]["params"]): r
            for r in compare["comparisons"]}
    assert set(rows) == set(want)
    for where, value in want.items():
        r = rows[where]
        assert r["figure"] == value["figure"], where
        assert r["baseline"]["value"] == r["compared"]["value"] == value, where
        assert r["times"].startswith("1.00 times"), r
    # the text: each row's latest, in its table's unit, is the Value's median within rounding
    text = run_cli("history", out, env={**os.environ, "COLUMNS": "250"}).stdout
    cells = _history_cells(text)
    for task in {json.loads(w)[0] for w in want}:
        medians = sorted(v["median"] for w, v in want.items() if json.loads(w)[0] == task)
        shown = sorted(cells.get(task, []))
        assert len(shown) == len(medians), (task, text)
        for m, (x, unit) in zip(medians, shown):
            assert abs(x - m) <= 0.006 * m or (x == 0 and m < 0.001 * unit), (task, m, x, text)
