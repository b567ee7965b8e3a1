"""Comparisons: Student's t by hand against table values, the paired and Welch intervals on
known samples, the figure each kind of task is compared on, matching points within a run (with
and without "pair") and across runs; and real runs through the command line: a variant 10%
slower is significantly worse, an identical one is not, `compare` across runs, bad input."""
from __future__ import annotations

import math
import os

import pytest

from builders import compare_run, comparison, side
from conftest import run_cli
from manybench.analysis.compare import (BANDWIDTH, ELAPSED, OPS, SYNC, BETTER, N_TOO_SMALL, NO_DATA,
                                        NOT_SIGNIFICANT, WORSE, Comparison, choose_figure, load,
                                        task_verdict, within_run)
from manybench.analysis.points import PointSummary
from manybench.analysis.significance import betainc, paired, t_cdf, t_quantile, welch
from manybench.analysis.stats import Dist, Spread, Stats
from manybench.results.store import Store

WIDE = {**os.environ, "COLUMNS": "250"}     # report rows on one line each


# -- Student's t ------------------------------------------------------------------------------
@pytest.mark.parametrize("df, q975, q995", [(1, 12.706, 63.657), (2, 4.303, 9.925),
                                             (5, 2.571, 4.032), (10, 2.228, 3.169),
                                             (30, 2.042, 2.750), (120, 1.980, 2.617)])
def test_t_quantiles_match_the_tables(df, q975, q995):
    assert t_quantile(0.975, df) == pytest.approx(q975, abs=5e-4)
    assert t_quantile(0.995, df) == pytest.approx(q995, abs=5e-4)
    assert t_quantile(0.025, df) == pytest.approx(-q975, abs=5e-4)


def test_t_distribution_basics():
    assert t_cdf(0.0, 3) == pytest.approx(0.5)
    assert t_cdf(1.0, 1) == pytest.approx(0.75)          # Cauchy: 1/2 + atan(1)/pi
    assert t_quantile(0.975, 1e6) == pytest.approx(1.95996, abs=1e-4)   # the normal's
    # Welch's degrees of freedom are not whole: the quantile falls between its neighbours
    assert t_quantile(0.975, 5) > t_quantile(0.975, 5.5) > t_quantile(0.975, 6)
    assert betainc(1, 1, 0.3) == pytest.approx(0.3)       # the uniform's CDF
    assert betainc(3.5, 3.5, 0.5) == pytest.approx(0.5)   # symmetric
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


# -- the intervals ------------------------------------------------------------------------------
def test_paired_interval_on_known_log_ratios():
    # log ratios 0.08, 0.09, 0.10, 0.11, 0.12: mean 0.10, sd 0.0158, t(4) = 2.776
    base = [1.0, 2.0, 1.5, 1.2, 0.8]
    other = [b * math.exp(d) for b, d in zip(base, (0.08, 0.09, 0.10, 0.11, 0.12))]
    e = paired(base, other)
    half = 2.7764 * math.sqrt(0.00025) / math.sqrt(5)
    assert e.method == "paired" and e.df == 4
    assert e.ratio == pytest.approx(math.exp(0.10))
    assert e.low == pytest.approx(math.exp(0.10 - half), rel=1e-4)
    assert e.high == pytest.approx(math.exp(0.10 + half), rel=1e-4)
    assert e.significant


def test_welch_on_the_textbook_sample():
    # Welch's t-test example with unequal variances (Wikipedia, "Welch's t-test", A1 vs A2):
    # t = 2.46 (A2 > A1), df = 25.0, two-sided p = 0.021; on exp() of them so the logs are these
    a1 = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4]
    a2 = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4]
    e = welch([math.exp(x) for x in a1], [math.exp(x) for x in a2])
    diff = sum(a2) / 15 - sum(a1) / 15
    assert e.method == "welch" and e.df == pytest.approx(24.99, abs=0.01)
    se = (math.log(e.high) - diff) / t_quantile(0.975, e.df)
    assert diff / se == pytest.approx(2.46, abs=0.005)
    assert 2 * (1 - t_cdf(diff / se, e.df)) == pytest.approx(0.021, abs=0.0005)
    assert e.significant


def test_unequal_sample_sizes_and_constant_samples():
    e = welch([1.0, 1.1, 0.9], [1.2, 1.3, 1.25, 1.15, 1.22, 1.28])
    assert (e.n_base, e.n_other) == (3, 6) and e.low < e.ratio < e.high
    same = welch([2.0, 2.0, 2.0], [2.0, 2.0, 2.0])    # nothing varied: no difference at all
    assert same.ratio == 1.0 and not same.significant and not same.n_too_small
    assert paired([1.0], [2.0]).n_too_small and welch([1.0], [1.0, 2.0]).n_too_small
    # two repetitions a side give no interval: t(0.975, 1) = 12.7 spans orders of magnitude
    two = paired([1.0, 1.1], [2.0, 2.3])
    assert two.n_too_small and two.low is None and two.ratio == pytest.approx(2.0, rel=0.05)
    assert welch([1.0, 1.1, 1.05], [2.0, 2.2]).n_too_small


# -- verdicts and directions ------------------------------------------------------------------
def test_overhead_is_in_the_figures_own_direction():
    slower = comparison(ELAPSED, [1.0, 1.01, 0.99], [1.1, 1.11, 1.09])
    assert slower.verdict == WORSE and slower.overhead == pytest.approx(0.10, abs=0.001)
    # a rate 10% lower costs 1/0.9 - 1 = 11.1% more: worse, whatever the figure
    lower_rate = comparison(BANDWIDTH, [100, 101, 99], [90, 90.9, 89.1])
    assert lower_rate.verdict == WORSE
    assert lower_rate.overhead == pytest.approx(1 / 0.9 - 1, abs=0.001)
    lo, hi = lower_rate.overhead_interval
    assert lo <= lower_rate.overhead <= hi
    assert comparison(SYNC, [10, 11, 12], [5, 5.5, 6]).verdict == BETTER
    assert comparison(ELAPSED, [1.0, 1.2, 0.9], [1.1, 1.0, 1.0]).verdict == NOT_SIGNIFICANT
    assert comparison(ELAPSED, [1.0], [1.1]).verdict == N_TOO_SMALL
    assert Comparison("t", ELAPSED, side("a", [1.0]), side("b", []), None).verdict == NO_DATA


def test_the_task_verdict_counts_its_points():
    assert task_verdict([WORSE]) == WORSE
    assert task_verdict([WORSE, WORSE, NOT_SIGNIFICANT]) == f"{WORSE} at 2 of 3 points"
    assert task_verdict([WORSE, BETTER, NOT_SIGNIFICANT]).startswith("mixed")
    assert task_verdict([NOT_SIGNIFICANT, N_TOO_SMALL]) == \
        f"{NOT_SIGNIFICANT} at any of 2 points (1 {N_TOO_SMALL})"


def test_the_figure_is_the_headline_the_report_shows():
    """Issue 29: compare's figure is the point's headline figure as `report` shows it (a
    command's elapsed was the phase's window where the report's is per-slot time; meta.*
    compared on bandwidth where the report heads with ops/s)."""
    def summary(kernel: str, **kw) -> PointSummary:
        return PointSummary(point="p", task="t", kernel=kernel, variant="", workers=1,
                            params={}, slot_elapsed=Spread(1.0, 1.0, 1.0, 3), **kw)
    null = summary("null", sync_overhead=Dist.of([10, 12, 11]))
    assert choose_figure(null, null) == SYNC
    assert choose_figure(summary("command"), summary("command")) == ELAPSED
    sums = {"read_mb_s": Stats.of([5.0, 5.0])}
    rate = summary("command", metrics={"read_mb_s": 5.0, "gosa": 1.0}, metric_sums=sums)
    assert choose_figure(rate, rate).name == "read_mb_s"
    assert choose_figure(rate, summary("command")) == ELAPSED    # both sides must have it
    # a plain number (no direction) is passed over: faster or slower would mean nothing
    gosa = summary("command", metrics={"gosa": 1.0, "read_mb_s": 5.0}, metric_sums=sums)
    assert choose_figure(gosa, gosa).name == "read_mb_s"
    stream = summary("mem.stream", metrics={"triad_mb_s": 1.0, "copy_mb_s": 1.0},
                     metric_sums={"triad_mb_s": Stats.of([1.0]), "copy_mb_s": Stats.of([1.0])})
    assert choose_figure(stream, stream).name == "triad_mb_s"
    assert choose_figure(stream, stream).higher_is_better
    io = summary("io.write", bandwidth=Stats.of([1.0]), ops_rate=Stats.of([1.0]))
    assert choose_figure(io, io) == BANDWIDTH
    meta = summary("meta.read", bandwidth=Stats.of([1.0]), ops_rate=Stats.of([1.0]))
    assert choose_figure(meta, meta) == OPS
    # an MPI job's skew is manybench's figure: the program's time heads, not the skew
    skew = {"job_skew_s": Stats.of([1e-6, 2e-6])}
    job = summary("mpi", metrics={"job_skew_s": 1e-6}, metric_sums=skew)
    assert choose_figure(job, job) == ELAPSED
    osu = summary("mpi", metrics={"job_skew_s": 1e-6, "bw_mb_s": 5.0},
                  metric_sums={**skew, "bw_mb_s": Stats.of([5.0])})
    assert choose_figure(osu, osu).name == "bw_mb_s"


# -- matching points within a run ---------------------------------------------------------------
def test_variants_that_set_params_still_pair_by_position():
    raw = {"variant": [{"name": "fast"}, {"name": "slow"}], "baseline": "fast"}
    rows = []
    for rep in range(3):
        rows += [("fast", rep, {"secs": "1"}, 1.0 + rep * 0.01),
                 ("slow", rep, {"secs": "1.1"}, 1.1 + rep * 0.01)]
    (tc,) = within_run(compare_run(rows, raw))
    (c,) = tc.rows
    assert tc.baseline == "fast" and c.other.label == "slow"
    assert c.estimate.method == "paired" and c.verdict == WORSE and c.interleaved


def test_old_runs_without_pair_match_keys_without_the_variant():
    raw = {"variant": [{"name": "a"}, {"name": "b"}]}
    rows = [(v, rep, {"secs": "1"}, 1.0 + (0.1 if v == "b" else 0) + rep * 0.001)
            for rep in range(3) for v in ("a", "b")]
    (tc,) = within_run(compare_run(rows, raw, pair=False))
    assert tc.baseline == "a" and tc.rows[0].verdict == WORSE
    # a variant that set params has no partner in such runs: nothing is compared wrongly
    rows = [(v, rep, {"secs": "1" if v == "a" else "2"}, 1.0) for rep in range(2)
            for v in ("a", "b")]
    assert within_run(compare_run(rows, raw, pair=False)) == []


def test_a_missing_repetition_falls_back_to_welch_and_blocks_are_flagged():
    raw = {"variant": [{"name": "a"}, {"name": "b"}]}
    rows = [("a", 0, {}, 1.0), ("a", 1, {}, 1.01), ("a", 2, {}, 0.99), ("a", 3, {}, 1.0),
            ("b", 0, {}, 1.2), ("b", 1, {}, 1.21), ("b", 2, {}, 1.19)]   # b after a, one short
    (tc,) = within_run(compare_run(rows, raw))
    c = tc.rows[0]
    assert c.estimate.method == "welch" and (c.estimate.n_base, c.estimate.n_other) == (4, 3)
    assert not c.interleaved


# -- real runs ------------------------------------------------------------------------------------
AB_PLAN = """
name = "ab"
repeat = 6
[[task]]
name = "nap"
command = ["sleep", "{secs}"]
secs = "0.30"
[[variant]]
name = "base"
[[variant]]
name = "slow"
set = { "task.nap.secs" = "0.33" }
[[variant]]
name = "same"
"""


def _comparisons(directory: str) -> dict[str, Comparison]:
    with Store(directory, readonly=True) as store:
        run = load(store, store.runs()[-1])
    (tc,) = within_run(run)
    return {c.other.label: c for c in tc.rows}


@pytest.mark.alone     # a 10% difference in sleeps: other tests' load widens the interval
@pytest.mark.e2e
def test_a_variant_ten_percent_slower_is_significant_and_an_identical_one_is_not(
        plan_file, tmp_path):
    """sleep 0.30 s against 0.33 s: about +9% (the exec is in both), against a scatter of a
    few ms even on a loaded machine, over 6 paired repetitions: the interval is far from 0.
    An identical variant: under no difference a 95% interval leaves 0 out one time in 20 by
    definition, so a significant result is tried again; three in a row happen one time in
    8000."""
    plan = plan_file(AB_PLAN)
    for attempt in range(3):
        out = str(tmp_path / f"ab{attempt}")
        done = run_cli("run", plan, "-o", out, "-q", timeout=300)
        assert done.returncode == 0, done.stderr
        got = _comparisons(out)
        slow, same = got["slow"], got["same"]
        assert slow.verdict == WORSE, slow.line()
        assert slow.estimate.method == "paired" and slow.estimate.n_base == 6
        assert slow.base.point.params["secs"] == "0.30"
        assert slow.other.point.params["secs"] == "0.33"
        lo, hi = slow.overhead_interval
        assert 0 < lo <= slow.overhead <= hi
        print(slow.line())
        print(same.line())
        if same.verdict == NOT_SIGNIFICANT:
            break
    else:
        pytest.fail(f"identical variants significant in 3 runs of 3: {same.line()}")
    report = run_cli("report", out, env=WIDE)
    lines = report.stdout.splitlines()
    assert any("slow (secs=0.33)" in ln and WORSE in ln and "6+6 paired" in ln for ln in lines)
    assert any(" same " in ln and NOT_SIGNIFICANT in ln for ln in lines), report.stdout


# 10 repetitions a side: runs do not pair, so load that delays a run's processes (exec, the
# sleep's wake-up, the reap: one-sided delays of 15-46 ms on a 0.2 s sleep beside busy loops
# at load 8, a 6-9% spread of the logs) widens Welch's interval; with 5+5 it reached
# [1.00, 1.26] for the 10% difference once in 5 such runs, 10+10 makes it ~0.6x as wide
# (load that changes between the two runs still shifts one whole: at load 13-14 neither holds)
COMPARE_PLAN = """
name = "c"
repeat = 10
[[task]]
name = "nap"
command = ["sh", "-c", "exec sleep $NAP"]
env = { NAP = "0.20" }
"""


@pytest.mark.alone     # runs 10% apart compared unpaired: load between the runs blurs it
@pytest.mark.e2e
def test_compare_across_runs(plan_file, tmp_path):
    """The same plan run again 10% slower (its env is not part of the point): compare finds
    it significantly worse with Welch's t (runs do not pair) and fails on regression when
    asked; a run against itself is no difference at all."""
    plan = plan_file(COMPARE_PLAN)
    a, slow = str(tmp_path / "a"), str(tmp_path / "slow")
    done = run_cli("run", plan, "-o", a, "-q")
    assert done.returncode == 0, done.stderr
    done = run_cli("run", plan, "-o", slow, "-q", "--set", "task.nap.env.NAP=0.22")
    assert done.returncode == 0, done.stderr
    out = run_cli("compare", a, slow, env=WIDE)
    assert out.returncode == 0, out.stderr          # no gate asked: a regression is shown
    assert "nap: B against A (per-slot time, per slot, lower is better)" in out.stdout
    row = next(ln for ln in out.stdout.splitlines() if "10+10 welch" in ln)
    assert WORSE in row, out.stdout
    gate = run_cli("compare", a, slow, "--fail-on-regression")
    assert gate.returncode == 1
    assert "regression: nap at workers=1: B against A: significantly worse" in gate.stderr
    with Store(a, readonly=True) as store:
        run_id = store.runs()[-1].run_id
    itself = run_cli("compare", a, f"{a}:{run_id}", "--fail-on-regression", env=WIDE)
    assert itself.returncode == 0, itself.stderr
    row = next(ln for ln in itself.stdout.splitlines() if "10+10 welch" in ln)
    assert "1.00 times" in row and NOT_SIGNIFICANT in row


@pytest.mark.e2e
def test_compare_bad_input_exits_2_with_a_message(tmp_path, plan_file):
    plan = plan_file("""
        [[task]]
        name = "n"
        kernel = "null"
        """)
    a = str(tmp_path / "a")
    assert run_cli("run", plan, "-o", a, "-q").returncode == 0
    other = plan_file("""
        [[task]]
        name = "m"
        kernel = "null"
        """, "other.toml")
    b = str(tmp_path / "b")
    assert run_cli("run", other, "-o", b, "-q").returncode == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = {(a,): "compare needs two runs or more",
             (a, str(tmp_path / "nope")): "DIR_B: ",
             (a, str(empty)): "DIR_B: no results.db",
             (a, f"{a}:no-such-run"): "no run 'no-such-run'",
             (a, b): "no point in common"}
    for args, message in cases.items():
        out = run_cli("compare", *args)
        assert out.returncode == 2, (args, out.stderr)
        assert message in out.stderr and "Traceback" not in out.stderr, out.stderr
