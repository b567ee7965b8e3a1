"""[reference]: ReFrame-style bounds checked per point, `at` picking points (the most specific
wins), figures named by the plan checked; and real runs: a failing reference makes `run` and
`compare` exit 1 with a line per failure, a passing one leaves 0."""
from __future__ import annotations

import os

import pytest

from conftest import run_cli
from manybench.analysis import reference as ref
from manybench.analysis.compare import RunData
from manybench.analysis.points import PointSummary
from manybench.model import TaskSpec
from manybench.plan.reference import AGGREGATE_FIGURES, check_reference
from manybench.results.contract import RunInfo, RunNotes

WIDE = {**os.environ, "COLUMNS": "250"}


def _point(workers: int, kernel: str = "io.write", **params) -> PointSummary:
    return PointSummary(point=f"{kernel}{workers}{params}", task="w", kernel=kernel, variant="",
                        workers=workers, params=params)


def test_at_values_are_read_as_the_plan_writes_them():
    s = _point(4, block=1 << 20)
    assert ref.matches(s, {"workers": 4, "block": "1MiB"})
    assert not ref.matches(s, {"workers": 2})
    assert not ref.matches(s, {"block": "64KiB"})
    assert not ref.matches(s, {"nonsense": 1})
    cmd = _point(1, kernel="command", secs="0.10")
    assert ref.matches(cmd, {"secs": 0.1}) and ref.matches(cmd, {"secs": "0.10"})


def _run(summaries: list[PointSummary], reference: dict) -> RunData:
    info = RunInfo("r", "p", "", {"reference": reference}, [], 0, None, "finished", {},
                   RunNotes())
    return RunData("r", info, summaries, [], [])


def test_the_most_specific_reference_applies_and_bounds_are_relative(monkeypatch):
    points = [_point(1), _point(4)]
    measured = {1: 1000.0, 4: 2900.0}
    monkeypatch.setattr(ref, "measure", lambda run, s, figure: measured[s.workers])
    checks = ref.evaluate(_run(points, {"w.mb_s": [
        {"value": 1000, "lower": -0.05, "upper": 0.05},
        {"value": 3000, "lower": -0.05, "at": {"workers": 4}},      # 2850 .. unbounded
        {"value": 9, "at": {"workers": 8}}]}))                      # the run has no 8
    by = {(c.point.workers if c.point else None): c for c in checks}
    assert by[1].status == ref.PASS and by[1].value == 1000
    assert by[4].status == ref.PASS and by[4].value == 3000 and by[4].bounds == (2850, None)
    assert by[None].status == ref.NOT_RUN
    measured[4] = 2800.0
    (c,) = [c for c in ref.evaluate(_run(points, {"w.mb_s": {"value": 3000, "lower": -0.05,
                                                             "at": {"workers": 4}}}))
            if c.point]
    assert c.status == ref.FAIL and "expected 3000 [2850, +inf]" in c.line()


def test_a_figure_never_measured_fails():
    (c,) = ref.evaluate(_run([_point(1)], {"w.gflops": {"value": 1}}))
    assert c.status == ref.FAIL and "no phase had an ok record" in c.why


def test_the_figures_the_plan_may_name_are_the_ones_evaluated():
    assert set(AGGREGATE_FIGURES) == set(ref.figure_names())


def test_plan_checks_of_figures_and_at():
    tasks = [TaskSpec("cmd", "command", {"secs": "1"}, command=["sleep", "{secs}"],
                      metrics={"rate_mb_s": "(?P<value>.*)"}),
             TaskSpec("w", "io.write", {"block": "1MiB"}),
             TaskSpec("n", "null", {})]
    probs: list = []
    check_reference({"cmd.elapsed_s": {"value": 1, "at": {"secs": "1", "variant": "host"}},
                     "cmd.rate_mb_s": {"value": 1},
                     "w.whatever_metric": {"value": 1, "at": {"block": "1MiB", "pin": "core"}},
                     "n.sync_overhead_us": {"value": 1}}, tasks, probs, variants=["host"])
    assert probs == []
    check_reference({"cmd.rate": {"value": 1},
                     "w.sync_overhead_us": {"value": 1},
                     "w.mb_s": [{"value": 1, "at": {"blok": "1MiB"}}],
                     "cmd.elapsed_s": {"value": 1, "at": {"variant": "hots"}},
                     "nope.mb_s": {"value": 1}}, tasks, probs, variants=["host"])
    text = "\n".join(f"{loc}: {msg}" for loc, msg in probs)
    assert "unknown figure 'rate' for command task 'cmd'" in text and "rate_mb_s" in text
    assert "sync_overhead_us is the figure of kernels that do no work" in text
    assert "unknown point field 'blok'" in text and "did you mean 'block'" in text
    assert "no variant named 'hots'" in text
    assert "unknown task 'nope'" in text
    # called with task names only (as before), the keys' tasks are still checked
    probs = []
    check_reference({"cmd.anything": {"value": 1}, "x.mb_s": {"value": 1}}, ["cmd"], probs)
    assert len(probs) == 1


PLAN = """
name = "refs"
repeat = 2
[[task]]
name = "echo"
command = ["echo", "rate 123.5 MB/s"]
metrics.rate_mb_s = 'rate (?P<value>[\\d.]+)'
[[task]]
name = "nap"
command = ["sleep", "0.05"]
[reference]
"echo.rate_mb_s" = { value = 120, lower = -0.05, upper = 0.05 }
"nap.elapsed_s" = [{ value = 0.05, upper = 20 }, { value = 9, at = { workers = 8 } }]
"""


@pytest.mark.e2e
def test_run_exits_0_when_every_reference_passes(plan_file, tmp_path):
    out = str(tmp_path / "ok")
    done = run_cli("run", plan_file(PLAN), "-o", out, env=WIDE)
    assert done.returncode == 0, done.stderr
    assert "references (all pass)" in done.stdout
    rows = [ln for ln in done.stdout.splitlines() if "echo.rate_mb_s" in ln]
    assert rows and "123.5" in rows[0] and "pass" in rows[0]
    assert any("nap.elapsed_s" in ln and "not run" in ln for ln in done.stdout.splitlines())
    assert "reference failed" not in done.stderr


@pytest.mark.e2e
def test_a_failing_reference_makes_run_and_compare_exit_1(plan_file, tmp_path):
    # 123.5 is above 100 x 1.05; the nap is far below 5 x (1 - 0.5)
    plan = plan_file(PLAN.replace("value = 120,", "value = 100,")
                     .replace("value = 0.05, upper = 20", "value = 5, lower = -0.5"))
    out = str(tmp_path / "bad")
    done = run_cli("run", plan, "-o", out, "-q")
    assert done.returncode == 1, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("reference failed: ")]
    assert len(lines) == 2
    assert "echo.rate_mb_s at workers=1: measured 123.5, expected 100 [95, 105]" in lines[0]
    report = run_cli("report", out, env=WIDE)
    assert "references (2 failed)" in report.stdout and "FAIL" in report.stdout
    # compare: the newest run's references decide, whatever the comparison says
    again = str(tmp_path / "bad2")
    assert run_cli("run", plan, "-o", again, "-q").returncode == 1
    cmp = run_cli("compare", out, again)
    assert cmp.returncode == 1 and cmp.stderr.count("reference failed: ") == 2, cmp.stderr


@pytest.mark.e2e
def test_a_reference_to_an_unknown_task_is_refused(plan_file, tmp_path):
    plan = plan_file(PLAN.replace('"nap.elapsed_s"', '"napp.elapsed_s"'))
    done = run_cli("run", plan, "-o", str(tmp_path / "x"))
    assert done.returncode == 2 and "unknown task 'napp'" in done.stderr
    assert "Traceback" not in done.stderr
