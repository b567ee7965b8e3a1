"""How comparisons read (issue 17, item 8): speed-ups worded as hyperfine words them ("17.6
times faster [interval]", not "overhead -94.3%"), no interval from fewer than 3 repetitions
("n too small"), geometric means labelled as such (`report` shows medians), and at 80
columns the comparison and reference tables fit whole, never split in parts."""
from __future__ import annotations

import io
import re

from rich.console import Console

from builders import compare_run, comparison
from manybench.analysis.compare import ELAPSED, N_TOO_SMALL, WORSE, within_run, times_text
from manybench.analysis.reference import PASS, FAIL, RefCheck
from manybench.report.comparison import DEFINITIONS, comparison_table, reference_table
from manybench.report.terminal import render_views
from manybench.report.view import RunView

VARIANTS = {"variant": [{"name": "container-with-a-long-name"}, {"name": "host"}]}


def _text(tables, width: int = 80) -> str:
    buf = io.StringIO()
    render_views([RunView("t", [], [], tables, legend=DEFINITIONS)],
                 Console(file=buf, width=width, color_system=None, force_terminal=False))
    return buf.getvalue()


def test_speed_ups_read_as_times_faster_or_slower():
    assert times_text(1 / 17.6, (1 / 17.9, 1 / 17.3)) == "17.6 times faster [17.3, 17.9]"
    assert times_text(1.1, (1.08, 1.12)) == "1.10 times slower [1.08, 1.12]"
    assert times_text(1.1, None) == f"1.10 times slower [{N_TOO_SMALL}]"
    c = comparison(ELAPSED, [1.0, 1.01, 0.99], [0.1, 0.101, 0.099])   # 10 x faster
    assert c.times().startswith("10.0 times faster [") and "%" not in c.line()
    slow = comparison(ELAPSED, [1.0, 1.01, 0.99], [1.1, 1.11, 1.09])
    assert slow.verdict == WORSE and slow.times().startswith("1.10 times slower [")


def test_two_repetitions_give_no_interval():
    c = comparison(ELAPSED, [1.0, 1.4], [1.1, 9.0])
    assert c.verdict == N_TOO_SMALL and c.times().endswith(f"[{N_TOO_SMALL}]")
    assert "%" not in c.times()


def test_comparison_and_reference_tables_fit_80_columns_whole():
    rows = [(v, rep, {"block": "1MiB"}, (1.3 if v == "host" else 1.0) + rep * 0.001)
            for rep in range(3) for v in ("container-with-a-long-name", "host")]
    (tc,) = within_run(compare_run(rows, VARIANTS))
    table = comparison_table(tc)
    assert "median" in table.columns[2] and "faster or" in " ".join(table.columns)
    assert "container-with-a-long-name" in table.title     # the baseline, named once
    checks = [RefCheck("write.mb_s", 1800, -0.05, 0.2, {"workers": 4}, FAIL, None, 1500.0,
                       "below the lower bound of the expected value by 12%"),
              RefCheck("read.mb_s", 2200, -0.05, None, {}, PASS, None, 2300.0)]
    text = _text([table, reference_table(checks)])
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert not re.search(r"\(\d+/\d+\)", text), text
    # cells wrap at spaces at this width: "1.30 times slower" on lines of its own column
    assert "1.30" in text and "times" in text and "slower" in text and "median" in text
    wide = _text([table, reference_table(checks)], width=200)
    assert "1.30 times slower [1.30, 1.30]" in wide and "(1/" not in wide
    assert "(median)" in text and "write.mb_s" in text and "FAIL" in text
