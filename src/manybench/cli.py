"""Thin command line: parse arguments, call the layers, map outcomes to exit codes.

Exit codes (README.md): 0 all phases succeeded, 1 some tasks failed, 2 invalid plan or
arguments (nothing run), 130 interrupted with every finished phase kept.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from importlib import resources

import click

from .results.contract import RunStatus
from . import cli_errors as errs
from .printable import echo
from .units import plural

EXIT_USAGE = 2


class _Registry(click.Choice):
    """A choice among a registry's names (module, attribute), read from the registry when the
    option is used or its help shown: the command line lists no names of its own, and imports
    the registry's module only then."""

    def __init__(self, module: str, attr: str) -> None:
        self.where = (module, attr)
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        module, attr = self.where
        return tuple(getattr(importlib.import_module(module, __package__), attr))

    @choices.setter
    def choices(self, value: object) -> None:
        pass     # click.Choice.__init__ sets it: the registry stays the only source


class _Fanout(click.ParamType):
    """--fanout: auto (None), off (0), or nodes per relay (1 or more)."""
    name = "auto|off|N"

    def convert(self, value, param, ctx):
        if value in (None, "auto") or isinstance(value, int):
            return None if value == "auto" else value
        if value == "off":
            return 0
        try:
            n = int(value)
        except ValueError:
            n = 0
        if n < 1:
            self.fail(f"{value!r}: give auto, off, or how many nodes each relay serves "
                      "(1 or more)", param, ctx)
        return n


_fail = errs.fail


def _load(plan_path: str | None, text: str | None, overrides: tuple[str, ...], slots: int | None):
    from .plan import PlanError, load_plan, parse_plan
    from .plan.expand import expand
    try:
        plan = (load_plan(plan_path, overrides, slots=slots) if text is None
                else parse_plan(text, "demo.toml", overrides, slots=slots))
        return plan, expand(plan)
    except PlanError as e:
        for problem in e.problems:
            echo(problem, err=True)
        raise click.exceptions.Exit(EXIT_USAGE)


def _engine(plan, slots: int | None, scheduler: str | None, hosts: str | None,
            cluster: str | None, simulate: str | None = None, credentials: str | None = None,
            insecure: bool = False):
    """The local engine, a Dask engine for --scheduler / --hosts / --cluster (secured unless
    --insecure: engines/access.py), or simulated nodes for --simulate."""
    if simulate:
        from .engines.simulated import SimulatedEngine, parse_spec
        try:
            return SimulatedEngine(parse_spec(simulate))
        except ValueError as e:
            raise _fail(f"--simulate: {e}")
    if not (scheduler or hosts or cluster):
        from .engines import LocalEngine
        return LocalEngine()
    from .engines import clusters
    from .engines.hostfile import HostfileError
    try:
        if scheduler:
            return clusters.from_scheduler(plan, scheduler, slots, credentials, insecure)
        if hosts:
            return clusters.from_hosts(plan, hosts, slots, credentials, insecure)
        return clusters.from_cluster(plan, cluster, slots, credentials, insecure)
    except HostfileError as e:
        for problem in e.problems:
            echo(problem, err=True)
        raise click.exceptions.Exit(EXIT_USAGE)
    except clusters.EngineError as e:
        raise _fail(str(e))


def _run(plan, phases, outdir: str, slots: int | None, quiet: bool, engine=None,
         resume=None) -> None:
    from .engines import LocalEngine
    from .run.coordinator import Coordinator
    from .engines.base import EngineError
    from .plan import PlanError
    engine = engine or LocalEngine()
    try:
        outcome = Coordinator(plan, phases, outdir, engine, sys.argv, slots,
                              progress=False if quiet else None, resume=resume).run()
    except PlanError as e:        # the plan does not fit the nodes found: nothing was run
        for problem in e.problems:
            echo(problem, err=True)
        raise click.exceptions.Exit(EXIT_USAGE)
    except EngineError as e:
        raise _fail(str(e))
    except KeyboardInterrupt:    # before the first phase: nothing measured, nothing to keep
        from .run.interrupts import ignored
        with ignored():          # a second Ctrl-C must not cut the abort short
            engine.abort()
            echo("interrupted before the first phase", err=True)
            raise click.exceptions.Exit(130) from None
    except OSError as e:   # not left to click, which takes a BrokenPipeError for its stdout
        echo(f"manybench: the run stopped: {type(e).__name__}: {e} (any phase it "
                   f"finished is kept in {outdir})", err=True)
        raise click.exceptions.Exit(1)
    if not quiet:
        from .report.terminal import render
        render(outdir, run_id=outcome.run_id)
    if outcome.checks_cut:
        echo(f"interrupted after the last phase: every phase is kept in {outdir}; "
                   f"`manybench run --resume {outdir}` makes the run's end checks", err=True)
    elif outcome.status == RunStatus.INTERRUPTED:
        echo(f"interrupted: finished phases kept in {outdir}; `manybench run --resume "
                   f"{outdir}` runs the rest", err=True)
    elif outcome.failed:
        echo(f"{plural(outcome.failed, 'record')} failed: see `manybench report {outdir}`",
             err=True)
    code = outcome.exit_code
    if plan.reference and outcome.status != RunStatus.INTERRUPTED:   # a CI gate: 0 -> 1 when one fails
        code = _reference_exit(outdir, outcome.run_id, code)
    raise click.exceptions.Exit(code)


def _reference_exit(directory: str, run_id: str, code: int) -> int:
    """Tell each failed [reference] on stderr; exit status 1 if one failed and all else passed."""
    from .analysis.reference import check_directory, failures
    failed = failures(check_directory(directory, run_id))
    for c in failed:
        echo(f"reference failed: {c.line()}", err=True)
    return 1 if failed and code == 0 else code


class _Main(click.Group):
    """Any interrupt inside a command that the command did not turn into its own exit (a
    big plan's expansion, start-up, a report) is exit 130, not click's "Aborted!" (1)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            from .run.interrupts import ignored
            with ignored():
                echo("interrupted", err=True)
                raise click.exceptions.Exit(130) from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="manybench")
def main() -> None:
    """Synchronized many-task benchmarks: many slots start at the same instant, phase after
    phase; results land in results.db and come out as reports."""
    from .config import ConfigError, check
    try:       # an override read before any command: a bad timing is exit 2 here, not mid-run
        check()
    except ConfigError as e:
        raise errs.UserError(f"configuration: {e}") from None


@main.command()
@click.argument("plan", type=click.Path(dir_okay=False), required=False)
@click.option("-o", "--output", "outdir", help="Results directory (default manybench-results/<plan name>).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Continue DIR's interrupted or killed run from its first missing phase, "
                   "into the same run (PLAN, if given, must be the run's own).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a plan field by dotted path, e.g. placement.workers=[2,4].")
@click.option("--slots", type=click.IntRange(min=1, max=100_000),
              help="Fix the slot count on this machine.")
@click.option("--dry-run", is_flag=True, help="Print the expanded phases and placement; run nothing.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no report.")
@click.option("--scheduler", metavar="ADDR", help="An existing Dask scheduler whose workers run "
              "`manybench worker`.")
@click.option("--hosts", type=click.Path(dir_okay=False), metavar="FILE",
              help="A hostfile (`node01 8` or `node01 slots=8`); Dask started over SSH.")
@click.option("--cluster", type=_Registry(".engines.clusters", "CLUSTERS"),
              help="Workers as batch jobs through dask-jobqueue ([cluster] in the plan); "
                   "slurm inside an allocation uses the allocation's nodes.")
@click.option("--simulate", metavar="NxS[,OPT=V...]",
              help="Simulated nodes instead of a cluster, to see what a run of N nodes x S "
                   "slots costs the coordinator: nothing runs, records are synthetic "
                   "(options delay, jitter, loss, offset, work, processes; docs/scale.md).")
@click.option("--credentials", type=click.Path(file_okay=False), metavar="DIR",
              help="The cluster's credentials (`manybench cluster-credentials`); default: "
                   "[cluster] credentials, else $MANYBENCH_CREDENTIALS, else "
                   "~/.config/manybench/cluster.")
@click.option("--insecure", is_flag=True, help="Reach the cluster without TLS or "
              "authentication (anyone who reaches it can drive its nodes): named in the run.")
@click.option("--fanout", type=_Fanout(), default=None,
              help="On a cluster: relays, nodes that carry each phase to a group of nodes "
                   "(docs/scale.md). auto (default): above 128 nodes, sqrt(N) per relay; off: "
                   "none; N: N nodes per relay.")
def run(plan: str | None, outdir: str | None, resume_dir: str | None,
        overrides: tuple[str, ...], slots: int | None, dry_run: bool, quiet: bool,
        scheduler: str | None, hosts: str | None, cluster: str | None,
        simulate: str | None, credentials: str | None, insecure: bool,
        fanout: int | None) -> None:
    """Run a plan."""
    if resume_dir is not None and (outdir is not None or dry_run):
        raise _fail("--resume DIR continues DIR: give neither -o nor --dry-run with it")
    if plan is None and resume_dir is None:
        raise _fail("give a PLAN to run (or --resume DIR)")
    if plan is not None and not os.path.isfile(plan):
        raise _fail(f"plan file not found: {plan}")
    if resume_dir is not None and not (scheduler or hosts or cluster or simulate):
        # the run's own nodes, as its own --set: resumed elsewhere, its phases would differ
        (scheduler, hosts, cluster, simulate, fanout, stored_credentials,
         stored_insecure) = _stored_engine(resume_dir, fanout)
        if not (credentials or insecure):    # and reached as it was
            credentials, insecure = stored_credentials, stored_insecure
    if sum(x is not None for x in (scheduler, hosts, cluster, simulate)) > 1:
        raise _fail("give at most one of --scheduler, --hosts, --cluster, --simulate")
    distributed = bool(scheduler or hosts or cluster or simulate)
    if (credentials or insecure) and not (scheduler or hosts or cluster):
        raise _fail("--credentials and --insecure are for a cluster (--scheduler, --hosts, "
                    "--cluster): this machine's slots need no network")
    if fanout is not None and not distributed:
        raise _fail("--fanout needs a cluster (--scheduler, --hosts, --cluster or --simulate):"
                    " this machine's slots need no relay")
    # on a cluster, --slots is per node and worker counts are checked against the nodes found
    here = None if distributed else slots
    # a resume only decides which phases remain and the run they go into; from here on it
    # is a run: the same checks, the same start, the same handling of a failing disk
    if resume_dir is None:
        (the_plan, phases), resume = _load(plan, None, overrides, here), None
    else:
        the_plan, phases, resume = _resumed(resume_dir, plan, overrides, here)
    errs.preflight(the_plan, phases, distributed)
    if dry_run and distributed:     # the cluster's nodes and placement (run/dry_run.py)
        return _dry_run_cluster(the_plan, phases, slots,
                                _engine(the_plan, slots, scheduler, hosts, cluster, simulate,
                                        credentials, insecure))
    if dry_run:
        _dry_run(the_plan, phases, slots)
        return
    outdir = resume_dir or outdir or os.path.join("manybench-results", the_plan.name)
    option = "-o" if resume is None else "--resume"
    errs.writable_results_dir(outdir, option)      # before any node or slot starts
    errs.own_results(outdir)         # locked by another process: exit 2, nothing started
    engine = _engine(the_plan, slots, scheduler, hosts, cluster, simulate, credentials,
                     insecure)
    engine.per_relay = fanout
    with errs.storing_results(outdir):
        _run(the_plan, phases, outdir, slots, quiet, engine, resume)


def _stored_engine(directory: str, fanout: int | None) -> tuple:
    """The stored run's --scheduler, --hosts, --cluster, --simulate and --fanout (this one's
    --fanout first), told on stderr when there are any."""
    from .run.resume import ResumeError, stored_engine
    try:
        found = stored_engine(directory)
    except ResumeError as e:
        raise _fail(str(e))
    if fanout is None and "fanout" in found:
        fanout = _Fanout().convert(found["fanout"], None, None)
    names = ("scheduler", "hosts", "cluster", "simulate")
    if any(found.get(n) for n in names):
        echo("resuming where the run ran: " + " ".join(
            f"--{n} {found[n]}" for n in (*names, "fanout", "credentials") if found.get(n))
            + (" --insecure" if "insecure" in found else "")
            + " (name one of them to resume elsewhere)", err=True)
    return (*(found.get(n) or None for n in names), fanout, found.get("credentials") or None,
            "insecure" in found)


def _resumed(directory: str, plan_path: str | None, overrides: tuple[str, ...],
             slots: int | None):
    """The stored run of DIR to continue: its plan, the phases left, and the run (exit 2 with
    the reason when it cannot be resumed)."""
    from .plan import PlanError
    from .run.resume import ResumeError, load
    try:
        return load(directory, plan_path, overrides, slots)
    except ResumeError as e:
        raise _fail(str(e))
    except PlanError as e:
        for problem in e.problems:
            echo(problem, err=True)
        raise click.exceptions.Exit(EXIT_USAGE)


def _dry_run_cluster(plan, phases, slots: int | None, engine) -> None:
    from .engines.base import EngineError
    from .plan.expand import describe
    from .run.dry_run import on_cluster
    try:
        lines, problems = on_cluster(plan, phases, engine, slots)
    except EngineError as e:
        raise _fail(str(e))
    echo("\n".join([lines[0], describe(phases), *lines[1:]]))
    for problem in problems:
        echo(problem, err=True)
    if problems:
        raise click.exceptions.Exit(EXIT_USAGE)


def _dry_run(plan, phases, slots: int | None) -> None:
    from .inventory.topology import topology
    from .plan.expand import describe
    from .run.placement import oversubscribed, place
    from .plan.expand import distinct
    n = slots or plan.slots or max((p.workers for p in distinct(phases)), default=1)
    cpus = topology()
    echo(f"plan {plan.name}: {plural(len(phases), 'phase')}, {plural(n, 'slot')} on "
         f"{plural(len(cpus), 'cpu')}"
               + (" (oversubscribed)" if oversubscribed(n) else ""))
    echo(describe(phases))
    seen = set()
    for p in distinct(phases):
        key = (p.workers, p.order, p.pin)
        if key not in seen:
            seen.add(key)
            cpu_list = ",".join(str(s.cpu) if s.cpu >= 0 else "*" for s in place(*key))
            echo(f"placement workers={p.workers} order={p.order} pin={p.pin}: cpus {cpu_list}")


@main.command()
@click.option("-o", "--output", "outdir", default=os.path.join("manybench-results", "demo"),
              show_default=True, help="Results directory.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a demo plan field.")
def demo(outdir: str, overrides: tuple[str, ...]) -> None:
    """Run a small built-in plan on this machine and print its report."""
    text = resources.files("manybench").joinpath("demo.toml").read_text()
    plan, phases = _load(None, text, overrides, None)
    errs.writable_results_dir(outdir)
    with errs.storing_results(outdir):
        _run(plan, phases, outdir, None, False)


def _open_results(directory: str):
    """The directory's results, read-only; exit 2 with the reason when they cannot be read."""
    from .results.store import SchemaError, Store
    if not os.path.isfile(os.path.join(directory, "results.db")):
        raise _fail(f"no results.db in {directory}")
    try:
        return Store(directory, readonly=True)
    except SchemaError as e:
        raise _fail(str(e))


@main.command()
@click.argument("directory", type=click.Path())
@click.option("--html", "html_path", type=click.Path(dir_okay=False),
              help="Also write an HTML report: one self-contained file with figures.")
@click.option("--plots", "plots_dir", type=click.Path(file_okay=False),
              help="Also write every figure as PNG and SVG into this directory.")
@click.option("--run", "run_id", help="Which run of the directory (default: the latest).")
@click.option("--metrics", "metrics", metavar="A,B",
              help="Show these figures instead of each task's headline (bandwidth, ops_rate, "
                   "latency, skew, lateness, cycle, elapsed, sync_overhead, stonewall, or a "
                   "metric).")
@click.option("--all", "all_columns", is_flag=True, help="Show every figure of every task.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the report's numbers as JSON instead of tables: every figure of "
                   "every point with n, median, interval and unit, and the throughput series.")
def report(directory: str, html_path: str | None, plots_dir: str | None, run_id: str | None,
           metrics: str | None, all_columns: bool, as_json: bool) -> None:
    """Print the report of a results directory."""
    figures = [m.strip() for m in metrics.split(",") if m.strip()] if metrics else None
    if metrics is not None and not figures:
        raise _fail("--metrics: give figure names separated by commas, e.g. bandwidth,latency")
    with errs.reading_results(directory, run_id), _open_results(directory) as store:
        errs.check_run(store, run_id)
        if not store.runs():
            raise errs.UserError(f"{store.path}: no runs recorded")
        if html_path:      # unwritable: exit 2 before any output
            errs.output_file(html_path, option="--html")
        from .report.build import chosen_runs, read_run, views_of
        from .report.terminal import render_views
        try:    # each run read and summarised once: tables, JSON, page and figures from it
            data = [read_run(store, r) for r in chosen_runs(store, run_id, False)]
            views = views_of(store, data, figures, all_columns, keep=bool(html_path or plots_dir)) \
                if not as_json or html_path or plots_dir else []
        except (KeyError, ValueError) as e:
            raise _fail(str(e).strip("'\""))
        if as_json:      # the numbers by machine on stdout, instead of the tables
            from .report.summary import summary_of
            echo(json.dumps(summary_of(store, data), indent=1))
        else:
            render_views(views)
        if html_path:
            from .outfile import replacing
            from .report.html import page_of_views
            with errs.writing(html_path, "--html"), \
                    replacing(html_path, encoding="utf-8") as f:
                f.write(page_of_views(store, views))
            echo(f"wrote {html_path}", err=True)
        if plots_dir:
            from .report.plots import write_plots
            with errs.writing(plots_dir, "--plots"):
                written = write_plots(store, plots_dir, run_id=views[-1].run_id,
                                      data=views[-1].data)
            echo(f"wrote {len(written)} files in {plots_dir}", err=True)


@main.command()
@click.argument("directory", type=click.Path())
@click.option("--format", "fmt", type=_Registry(".results.export", "EXPORTERS"), default="csv",
              show_default=True, help="parquet needs pyarrow, which a plain install leaves "
                                      "out: the parquet extra (pip install '.[parquet]').")
@click.option("--table", type=_Registry(".results.frames", "TABLES"), default="records",
              show_default=True)
@click.option("--nested", is_flag=True,
              help="Keep params, metrics and inventory as JSON objects, not flattened into "
                   "param.*, metric.*, inventory.* columns (csv, parquet).")
@click.option("-o", "--output", "out", type=click.Path(dir_okay=False), help="File (default stdout).")
@click.option("--run", "run_id", help="Only this run (default: every run in the directory).")
@click.option("--partition", is_flag=True,
              help="Parquet records as a dataset: -o DIR, a new directory of one file per run "
                   "and phase (DIR/RUN/phase-N.parquet) that pandas, DuckDB and "
                   "dask.dataframe.read_parquet read as one table.")
def export(directory: str, fmt: str, table: str, nested: bool, out: str | None,
           run_id: str | None, partition: bool) -> None:
    """Export a table, one row each: records (the contract's columns first), phases, samples,
    telemetry, nodes or series (docs/results-api.md). Records are read and written a phase
    at a time: memory does not grow with them."""
    from .results.export_cli import export_table
    with errs.reading_results(directory, run_id), _open_results(directory) as store:
        errs.check_run(store, run_id)
        if out and not partition:    # unopenable: exit 2 naming -o before anything is written
            errs.output_file(out)
        with errs.writing(out or "stdout"):
            msg = export_table(store, table, fmt, out, run_id, nested, partition)
    if msg:
        raise _fail(msg)


@main.command()
@click.argument("directories", nargs=-1, required=True, metavar="DIR [DIR ...]")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def history(directories: tuple[str, ...], as_json: bool) -> None:
    """Runs over time across results directories: runs per month, failures, and per point
    (the same task, parameters, workers, placement, variant and hosts) its headline figure
    in each run, with the latest, mean, min and max over runs."""
    import json
    from .analysis.history import history as gather
    from .report import history as hrep
    missing = [d for d in directories if not os.path.isfile(os.path.join(d, "results.db"))]
    if missing:
        raise _fail(f"no results.db in {', '.join(missing)}")
    with errs.reading_runs(list(directories)):
        h = gather(directories)
    if as_json:
        echo(json.dumps(hrep.as_json(h), indent=2))
    else:
        hrep.render(h)


@main.command()
@click.argument("run_a")
@click.argument("run_b")
@click.option("--all", "show_all", is_flag=True,
              help="Also keys that differ in every run (times, pids, boot ids, clock offsets).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def diff(run_a: str, run_b: str, show_all: bool, as_json: bool) -> None:
    """What changed between two runs' environments (RUN: a results directory, its latest
    run, or DIR:RUN_ID). Exit status 0 when they are the same, 1 when they differ."""
    import json
    from .results import diff as rdiff
    try:
        with errs.reading_runs([run_a, run_b]):
            d = rdiff.diff_runs(run_a, run_b, show_all)
    except rdiff.DiffError as e:
        raise _fail(str(e))
    echo(json.dumps(rdiff.as_json(d), indent=2, default=str) if as_json
               else rdiff.render(d, show_all), nl=as_json)
    raise click.exceptions.Exit(1 if d.differs else 0)


@main.command()
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
    import json
    from .analysis import compare as cmp
    from .analysis.reference import evaluate, failures
    from .report.comparison import as_json as compare_json
    from .report.comparison import compare_view
    from .report.unpaired import PointWords
    from .report.terminal import render_view
    try:
        with errs.reading_runs(list(runs)):
            loaded = cmp.open_runs(list(runs))
            cmp.check_ignore(loaded, ignore)
            tcs = cmp.across_runs(loaded, ignore)
            cmp.check_common(loaded, tcs, PointWords(loaded).why(loaded, ignore))
    except cmp.CompareError as e:
        raise _fail(str(e))
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


@main.command()
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False),
              help="Show the peaks with this plan's [peaks] applied.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def info(plan_path: str | None, as_json: bool) -> None:
    """This node's inventory (CPU, NUMA, memory, SIMD, FMA, clocks) and theoretical peaks."""
    import json
    from .inventory import environment, peaks
    from .inventory.info import info_text
    plan_peaks = {}
    if plan_path is not None:
        if not os.path.isfile(plan_path):
            raise _fail(f"plan file not found: {plan_path}")
        plan, _ = _load(plan_path, None, (), None)
        plan_peaks = plan.peaks
    env = environment.collect()
    env["peaks"] = peaks.for_run(env, plan_peaks).as_dict()
    from .inventory import noise        # the node's noise floor, as a run measures it
    from .inventory.topology import topology
    env["noise"] = noise.measure([c.id for c in topology()],
                                 plan.noise if plan_path is not None else noise.DEFAULT_S)
    echo(json.dumps(env, indent=2, default=str) if as_json else
               info_text(env), nl=as_json)


@main.command("mpi-build")
@click.option("--family", type=_Registry(".kernels.mpi_program", "COMPILERS"), default="auto",
              show_default=True, help="Whose compiler wrapper: mpicc.openmpi, mpicc.mpich, "
                                      "or the mpicc on PATH.")
@click.option("--mpicc", help="The compiler wrapper to use instead (a name on PATH or a path).")
@click.option("--force", is_flag=True, help="Build again even when a cached build exists.")
@click.option("--program", type=_Registry(".kernels.mpi_program", "PROGRAMS"), default="mbmpi",
              show_default=True, help="mbmpi (ping-pong, bandwidth, collectives) or mbhimeno "
                                      "(Himeno with MPI ranks and OpenMP threads).")
@click.option("--image", type=click.Path(file_okay=False),
              help="Also make this directory a container image (ch-run, Apptainer sandbox) "
                   "holding the program and a copy of this machine's MPI; print the "
                   "program's path inside it.")
@click.option("--add", "add", multiple=True, metavar="PROGRAM",
              type=click.Path(exists=True, dir_okay=False),
              help="Put this program in the image too (/usr/local/bin), with every library "
                   "it loads (a C++ program's libstdc++ ...); may be given again.")
def mpi_build(family: str, mpicc: str | None, force: bool, program: str,
              image: str | None, add: tuple[str, ...]) -> None:
    """Build mbmpi, the project's MPI test program (ping-pong, bandwidth, collectives over
    message sizes; `parse = "osu"` reads its output), or mbhimeno, and print its path
    (docs/mpi.md)."""
    from .kernels.mpi_image import ImageError, build_image
    from .kernels.mpi_program import MpiBuildError, build
    if add and not image:
        raise click.UsageError("--add puts programs in an image: give --image DIR with it")
    try:
        exe = build(family, mpicc, force, program)
        echo(build_image(image, exe, family, add) if image else exe)
    except (MpiBuildError, ImageError) as e:
        raise _fail(str(e))
    except OSError as e:
        raise _fail(f"--image {image}: {e.strerror or e}")


@main.command()
@click.argument("name", required=False)
def kernels(name: str | None) -> None:
    """List the built-in kernels, or one kernel's parameters."""
    from .kernels import KERNELS
    if name is not None and name not in KERNELS:
        raise _fail(f"unknown kernel {name!r} (known: {', '.join(KERNELS)})")
    for k in ([KERNELS[name]] if name else KERNELS.values()):
        click.echo(click.style(k.name, bold=True))
        click.echo(click.wrap_text(k.doc, initial_indent="  ", subsequent_indent="  "))
        if not name:
            continue
        for pname, p in k.params.items():
            click.echo(f"  {pname:<12} {p.describe()}")
            click.echo(click.wrap_text(p.doc, initial_indent=" " * 15, subsequent_indent=" " * 15))
        click.echo()


@main.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--source", type=click.Path(file_okay=False), help="manybench's source tree "
              "(default: the one this manybench runs from).")
@click.option("--python-version", metavar="X.Y", help="Target Python (default: this one).")
@click.option("--platform", metavar="TAG", help="Target platform tag, e.g. manylinux2014_x86_64.")
@click.option("--extra", "extras", multiple=True, help="Also bundle an extra (e.g. parquet, test).")
@click.option("--native", is_flag=True, help="Build the C kernels for this processor "
              "(-march=native), not portable (the default).")
def bundle(directory: str, source: str | None, python_version: str | None,
           platform: str | None, extras: tuple[str, ...], native: bool) -> None:
    """Write wheels of manybench and every dependency into DIRECTORY, for
    `pip install --no-index --find-links DIRECTORY manybench` with no network."""
    from .bundle import BundleError, build_note, bundle as write_bundle
    try:
        files = write_bundle(directory, source, python_version, platform, extras, native)
    except BundleError as e:
        raise _fail(str(e)) from None
    except OSError as e:      # DIRECTORY cannot be made or written (a read-only mount)
        raise _fail(f"{directory}: cannot write: {e.strerror or e}") from None
    echo(build_note(native))
    req = f"'manybench[{','.join(extras)}]'" if extras else "manybench"
    echo(f"{len(files)} files in {directory}; install with:\n"
         f"  pip install --no-index --find-links {directory} {req}")


# the cluster's own commands, started by hand (cli_cluster.py)
from .cli_cluster import COMMANDS as _CLUSTER_COMMANDS  # noqa: E402
for _command in _CLUSTER_COMMANDS:
    main.add_command(_command)

if __name__ == "__main__":
    main()
