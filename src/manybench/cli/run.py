"""`run` and `demo`: the commands that run a plan (what they do: launch.py)."""
from __future__ import annotations

import os
from importlib import resources

import click

from . import errors as errs
from .params import Fanout, Registry


@click.command()
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
@click.option("--cluster", type=Registry(".engines.clusters", "CLUSTERS"),
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
@click.option("--fanout", type=Fanout(), default=None,
              help="On a cluster: relays, nodes that carry each phase to a group of nodes "
                   "(docs/scale.md). auto (default): above 128 nodes, sqrt(N) per relay; off: "
                   "none; N: N nodes per relay.")
def run(**options: object) -> None:
    """Run a plan."""
    from .launch import start
    from .run_options import RunOptions
    start(RunOptions(**options))


@click.command()
@click.option("-o", "--output", "outdir", default=os.path.join("manybench-results", "demo"),
              show_default=True, help="Results directory.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a demo plan field.")
def demo(outdir: str, overrides: tuple[str, ...]) -> None:
    """Run a small built-in plan on this machine and print its report."""
    from .launch import load, run as run_plan
    from .run_options import RunOptions
    text = resources.files("manybench").joinpath("demo.toml").read_text()
    plan, phases = load(None, text, overrides, None)
    errs.writable_results_dir(outdir)
    with errs.storing_results(outdir):
        run_plan(plan, phases, outdir, RunOptions(outdir=outdir, overrides=overrides))


COMMANDS = (run, demo)
