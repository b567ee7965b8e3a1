"""What `run` and `demo` do once their options are checked: load the plan (or the stored run
a resume continues), make the engine the options name (engines.ENGINES), run the
coordinator, and map its outcome to the exit code (README.md: 0 all phases succeeded, 1 some
tasks failed, 2 invalid plan or arguments, nothing run, 130 interrupted with every finished
phase kept)."""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from ..printable import echo
from ..units import plural
from . import errors as errs
from .errors import fail
from .run_options import RunOptions, stored, where_it_ran

if TYPE_CHECKING:      # the engines import the native build: only when a run starts
    from ..engines import Engine, EngineConfig


def load(plan_path: str | None, text: str | None, overrides: tuple[str, ...],
         slots: int | None):
    """A plan (its file, or TOML text) and its phases; exit 2 with its problems."""
    from ..plan import PlanError, load_plan, parse_plan
    from ..plan.expand import expand
    try:
        plan = (load_plan(plan_path, overrides, slots=slots) if text is None
                else parse_plan(text, "demo.toml", overrides, slots=slots))
        return plan, expand(plan)
    except PlanError as e:
        raise errs.problems(e)


def engine(plan, opts: RunOptions, config: EngineConfig | None = None) -> Engine:
    """The engine the options name (engines.ENGINES: this machine, a Dask cluster secured
    unless --insecure, or simulated nodes), configured for this run."""
    from ..engines import EngineConfig, Where, make_engine
    from ..engines.base import EngineError
    from ..engines.hostfile import HostfileError
    where = Where(opts.scheduler, opts.hosts, opts.cluster, opts.simulate, opts.slots,
                  opts.credentials, opts.insecure)
    try:
        return make_engine(plan, where, config or EngineConfig())
    except HostfileError as e:
        raise errs.problems(e)
    except EngineError as e:
        raise fail(str(e))


def start(opts: RunOptions) -> None:
    """`manybench run`: a new run, or a resume of a stored one, or a dry run."""
    from ..engines import EngineConfig
    opts.check()
    kept = None
    if opts.resume_dir is not None and not opts.place:
        kept = _latest(opts.resume_dir)
        opts = where_it_ran(opts, stored(kept.info))
    opts.check_place()
    # a resume only decides which phases remain and the run they go into; from here on it
    # is a run: the same checks, the same start, the same handling of a failing disk
    if opts.resume_dir is None:
        (plan, phases), resume = load(opts.plan, None, opts.overrides, opts.plan_slots), None
    else:
        plan, phases, resume = _resumed(opts, kept or _latest(opts.resume_dir))
    errs.preflight(plan, phases, bool(opts.place))
    if opts.dry_run:
        from .dry_run import dry_run
        return dry_run(plan, phases, opts, engine)
    outdir = opts.resume_dir or opts.outdir or os.path.join("manybench-results", plan.name)
    option = "-o" if resume is None else "--resume"
    errs.writable_results_dir(outdir, option)      # before any node or slot starts
    errs.own_results(outdir)         # locked by another process: exit 2, nothing started
    the_engine = engine(plan, opts, EngineConfig.of(plan, opts.fanout))
    with errs.storing_results(outdir):
        run(plan, phases, outdir, opts, the_engine, resume)


def _latest(directory: str):
    """The directory's latest run, to resume (exit 2 with why it cannot be)."""
    from ..run.resume import ResumeError, latest_run
    try:
        return latest_run(directory)[1]
    except ResumeError as e:
        raise fail(str(e))


def _resumed(opts: RunOptions, kept):
    """The stored run to continue: its plan with its own --set and --slots unless these
    options give some, the phases left, and the run (exit 2 with the reason when it cannot
    be resumed)."""
    from ..plan import PlanError
    from ..run.resume import ResumeError, load as load_resume
    before = stored(kept.info)
    slots = opts.plan_slots if opts.plan_slots is not None else before.slots
    try:
        return load_resume(kept, opts.resume_dir, opts.plan, opts.overrides or before.overrides,
                           slots)
    except ResumeError as e:
        raise fail(str(e))
    except PlanError as e:
        raise errs.problems(e)


def run(plan, phases, outdir: str, opts: RunOptions, engine=None, resume=None) -> None:
    """Run the coordinator (the options stored with the run) and exit with its outcome's
    code; engine: this machine's unless given."""
    from ..engines import EngineConfig, LocalEngine
    from ..engines.base import EngineError
    from ..plan import PlanError
    from ..results.contract import RunStatus
    from ..run.coordinator import Coordinator
    engine = engine or LocalEngine(EngineConfig.of(plan))
    try:
        outcome = Coordinator(plan, phases, outdir, engine, sys.argv, opts.slots,
                              progress=False if opts.quiet else None, resume=resume,
                              options=opts.to_json()).run()
    except PlanError as e:        # the plan does not fit the nodes found: nothing was run
        raise errs.problems(e)
    except EngineError as e:
        raise fail(str(e))
    except KeyboardInterrupt:    # before the first phase: nothing measured, nothing to keep
        from ..run.interrupts import signals_ignored
        with signals_ignored():          # a second Ctrl-C must not cut the abort short
            engine.abort()
            echo("interrupted before the first phase", err=True)
            raise click.exceptions.Exit(130) from None
    except OSError as e:   # not left to click, which takes a BrokenPipeError for its stdout
        echo(f"manybench: the run stopped: {type(e).__name__}: {e} (any phase it "
             f"finished is kept in {outdir})", err=True)
        raise click.exceptions.Exit(1)
    if not opts.quiet:
        from ..report.terminal import render
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
    if plan.reference and outcome.status != RunStatus.INTERRUPTED:    # a CI gate: 0 -> 1
        code = _reference_exit(outdir, outcome.run_id, code)
    raise click.exceptions.Exit(code)


def _reference_exit(directory: str, run_id: str, code: int) -> int:
    """Tell each failed [reference] on stderr; exit status 1 if one failed and all else passed."""
    from ..analysis.reference import check_directory, failures
    failed = failures(check_directory(directory, run_id))
    for c in failed:
        echo(f"reference failed: {c.line()}", err=True)
    return 1 if failed and code == 0 else code

