"""Hostile text stays text (issue 28, item 10): control characters in what a command printed,
a plan named or a node said are shown escaped (`\\x1b`) wherever they reach a terminal, and
a CSV export neutralises cells a spreadsheet would run as formulas; JSON keeps the data."""
from __future__ import annotations

import csv
import io
import json

import pytest

from manybench.results.export import write

from conftest import run_cli

# a window title set, the screen cleared: what a hostile command printed on stderr; names
# cannot hold control characters (the plan check refuses them), a parameter's value can
PLAN = r"""
name = "hostile"
noise = 0
[[task]]
name = "evil"
command = ["sh", "-c", "printf 'rate 5 \\033[2JMB/s\\n'; printf 'boom \\033]0;title\\007\\033[2J\\n' >&2; [ $0 = plain ] && exit 3; exit 0", "{x}"]
x = ["a\u001b]0;t\u0007", "plain"]
metrics.rate = '(?P<value>[\d.]+) (?P<unit>\S+)'
metrics."gone\u001b[2J" = 'nothing (?P<value>\d+)'
"""
STDERR = r"\x1b]0;title\x07\x1b[2J"
PARAM = r"a\x1b]0;t\x07"


def clean(res, *shown: str) -> str:
    """No control byte but newlines in what the command wrote; `shown`: escaped text in it."""
    out = res.stdout + res.stderr
    assert "Traceback" not in out, out
    bad = sorted({c for c in out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0})
    assert not bad, (bad, out)
    for s in shown:
        assert s in out, (s, out)
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """(results directory, `run`'s result) of a run of commands printing escape sequences."""
    d = tmp_path_factory.mktemp("hostile")
    plan = d / "plan.toml"
    plan.write_text(PLAN)
    res = run_cli("run", str(plan), "-o", str(d / "res"))
    assert res.returncode == 1, res.stdout + res.stderr      # the command fails: exit 1
    return d, res


def test_printable_escapes_controls_and_keeps_lines():
    from manybench.printable import printable
    assert printable("a\x1b[2Jb\x07\x0d\x00\x7f\x9b") == r"a\x1b[2Jb\x07\x0d\x00\x7f\x9b"
    assert printable("two\nlines\tand a tab, é ✓") == "two\nlines\tand a tab, é ✓"
    assert printable("\u202eevil\u2066") == r"\u202eevil\u2066"     # bidi overrides
    assert printable("bad \udcff byte") == r"bad \udcff byte"         # a lone surrogate


@pytest.mark.e2e
def test_a_run_and_its_report_show_escapes_as_text(hostile):
    d, res = hostile
    # the hint's evidence quotes the command's stderr; the warning names the metric
    clean(res, STDERR, PARAM, r"gone\x1b[2J")
    for args in ((), ("--all",), ("--metrics", "rate")):
        clean(run_cli("report", str(d / "res"), *args), STDERR, PARAM)


@pytest.mark.e2e
def test_compare_history_and_diff_show_escapes_as_text(hostile, tmp_path):
    d, _ = hostile
    res = str(d / "res")
    clean(run_cli("compare", res, res), PARAM)
    clean(run_cli("history", res))
    named = tmp_path / "res\x1b[2J"       # a directory named by someone else
    named.symlink_to(d / "res")
    clean(run_cli("diff", str(named), res), r"res\x1b[2J")


@pytest.mark.e2e
def test_dry_run_and_errors_show_escapes_as_text(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    clean(run_cli("run", str(plan), "--dry-run"), PARAM)
    missing = tmp_path / "none\x1b]0;t\x07"
    res = run_cli("report", str(missing))
    assert res.returncode == 2
    clean(res, r"none\x1b]0;t\x07")
    bad = tmp_path / "bad.toml"     # a plan's problems quote what it holds
    bad.write_text('baseline = "x\\u001b[2J"\n[[task]]\nname = "t\\u001b[2J"\n'
                   'command = ["echo", "{nope\\u001b[2J}"]\n[[variant]]\nname = "v"\n')
    res = run_cli("run", str(bad), "--dry-run")
    assert res.returncode == 2
    clean(res, "nope")


def test_the_progress_line_shows_a_label_as_text():
    from manybench.run.progress import RunProgress
    bar = RunProgress(2, enabled=True)
    bar.point("evil [bold] x=a\x1b]0;t\x07")
    desc = bar.progress.tasks[0].description
    assert "\x1b" not in desc and PARAM in desc
    # rich markup in a label is text too: "[bold]" stays in the line
    from rich.console import Console
    from rich.text import Text
    shown = Console(file=io.StringIO(), color_system=None).render_str(desc)
    assert "[bold]" in Text.assemble(shown).plain


# -- CSV: formula injection (OWASP) ------------------------------------------------------------

FORMULAS = ["=cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "+1+1", "-1+1", "\t=1",
            "\r=1"]


def _csv(rows: list[dict]) -> list[list[str]]:
    buf = io.StringIO()
    write(rows, "csv", buf)
    return list(csv.reader(io.StringIO(buf.getvalue())))


def test_csv_cells_a_spreadsheet_would_run_are_neutralised():
    rows = [{"task": f, "n": -3, "x": -1.5, "ok": "fine"} for f in FORMULAS]
    got = _csv(rows)
    assert got[0] == ["task", "n", "x", "ok"]
    assert [r[0] for r in got[1:]] == ["'" + f for f in FORMULAS]
    # numbers stay numbers: a negative count or figure is not text
    assert all(r[1:] == ["-3", "-1.5", "fine"] for r in got[1:])
    # a carriage return inside a cell is quoted: a spreadsheet would start a row there
    assert _csv([{"a": "ok\r=1+1", "b": 1}]) == [["a", "b"], ["ok\r=1+1", "1"]]


@pytest.mark.e2e
def test_export_neutralises_csv_and_keeps_json(tmp_path, plan_file):
    task, variant = FORMULAS[0], FORMULAS[1]
    plan = plan_file(f"""
        name = "formulas"
        noise = 0
        [[variant]]
        name = {json.dumps(variant)}
        [[task]]
        name = {json.dumps(task)}
        kernel = "null"
        """)
    out = tmp_path / "res"
    assert run_cli("run", plan, "-o", str(out), "-q").returncode == 0
    for table in ("records", "phases"):
        res = run_cli("export", str(out), "--format", "csv", "--table", table)
        assert res.returncode == 0, res.stderr
        rows = list(csv.DictReader(io.StringIO(res.stdout)))
        assert rows and all(r["task"] == "'" + task for r in rows), rows[0]
        assert all(r["variant"] == "'" + variant for r in rows), rows[0]
    records = json.loads(run_cli("export", str(out), "--format", "json").stdout)
    assert {(r["task"], r["variant"]) for r in records} == {(task, variant)}
