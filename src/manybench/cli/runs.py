"""`history`, `diff` and `compare`: runs across results directories, side by side."""
from __future__ import annotations

import json
import os

import click

from ..printable import echo
from . import errors as errs
from .errors import fail


@click.command()
@click.argument("directories", nargs=-1, required=True, metavar="DIR [DIR ...]")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def history(directories: tuple[str, ...], as_json: bool) -> None:
    """Runs over time across results directories: runs per month, failures, and per point
    (the same task, parameters, workers, placement, variant and hosts) its headline figure
    in each run, with the latest, mean, min and max over runs."""
    from ..analysis.history import history as gather
    from ..report import history as hrep
    missing = [d for d in directories if not os.path.isfile(os.path.join(d, "results.db"))]
    if missing:
        raise fail(f"no results.db in {', '.join(missing)}")
    with errs.reading_runs(list(directories)):
        h = gather(directories)
    if as_json:
        echo(json.dumps(hrep.as_json(h), indent=2))
    else:
        hrep.render(h)


@click.command()
@click.argument("run_a")
@click.argument("run_b")
@click.option("--all", "show_all", is_flag=True,
              help="Also keys that differ in every run (times, pids, boot ids, clock offsets).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def diff(run_a: str, run_b: str, show_all: bool, as_json: bool) -> None:
    """What changed between two runs' environments (RUN: a results directory, its latest
    run, or DIR:RUN_ID). Exit status 0 when they are the same, 1 when they differ."""
    from ..results import diff as rdiff
    try:
        with errs.reading_runs([run_a, run_b]):
            d = rdiff.diff_runs(run_a, run_b, show_all)
    except rdiff.DiffError as e:
        raise fail(str(e))
    echo(json.dumps(rdiff.as_json(d), indent=2, default=str) if as_json
               else rdiff.render(d, show_all), nl=as_json)
    raise click.exceptions.Exit(1 if d.differs else 0)


@click.command()
@click.argument("runs", nargs=-1, metavar="DIR_A DIR_B [DIR ...]")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a run is significantly worse than DIR_A at some point.")
@click.option("--ignore", "ignore", multiple=True, metavar="NAME",
              help="Pair points as if this parameter (or workers, variant, a placement field) "
                   "were not part of them: runs made with different values of it are "
                   "compared point by point. Repeatable.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def compare(runs: tuple[str, ...], fail_on_regression: bool, ignore: tuple[str, ...],
            as_json: bool) -> None:
    """Compare runs point by point against DIR_A (the baseline): geometric means, their ratio,
    how many times faster or slower with its 95% confidence interval, and whether it is
    significant (DIR: a results directory, its
    latest run, or DIR:RUN_ID). Points that could not be paired are listed with what differs.
    Exit status 1 when a [reference] of the newest run fails, or with --fail-on-regression a
    significant regression; 2 for bad input."""
    from ..analysis import compare as cmp
    from ..analysis.reference import evaluate, failures
    from ..report.comparison import as_json as compare_json
    from ..report.comparison import compare_view
    from ..report.unpaired import PointWords
    from ..report.terminal import render_view
    try:
        with errs.reading_runs(list(runs)):
            loaded = cmp.open_runs(list(runs))
            cmp.check_ignore(loaded, ignore)
            tcs = cmp.across_runs(loaded, ignore)
            cmp.check_common(loaded, tcs, PointWords(loaded).why(loaded, ignore))
    except cmp.CompareError as e:
        raise fail(str(e))
    checks = evaluate(max(loaded, key=lambda r: r.info.started_ns))
    if as_json:
        echo(json.dumps(compare_json(loaded, tcs, ignore), indent=1, default=str))
    else:
        render_view(compare_view(loaded, tcs, checks, ignore))
    bad = [f"reference failed: {c.line()}" for c in failures(checks)]
    if fail_on_regression:
        bad += [f"regression: {c.line()}" for c in cmp.regressions(tcs)]
    for line in bad:
        echo(line, err=True)
    raise click.exceptions.Exit(1 if bad else 0)


COMMANDS = (history, diff, compare)
