"""`run --dry-run`: the expanded phases and their placement, on this machine or on the
cluster the options name (run/dry_run.py); nothing runs."""
from __future__ import annotations

from typing import Any, Callable

import click

from ..printable import echo
from ..units import plural
from .errors import EXIT_USAGE, fail
from .run_options import RunOptions


def dry_run(plan, phases, opts: RunOptions, engine: Callable[..., Any]) -> None:
    """engine(plan, opts): the engine the options name (launch.py's, passed in: it launches
    this module)."""
    if opts.place:     # the cluster's nodes and placement
        return _on_cluster(plan, phases, opts.slots, engine(plan, opts))
    _here(plan, phases, opts.slots)


def _on_cluster(plan, phases, slots: int | None, engine) -> None:
    from ..engines.base import EngineError
    from ..plan.expand import describe
    from ..run.dry_run import on_cluster
    try:
        lines, problems = on_cluster(plan, phases, engine, slots)
    except EngineError as e:
        raise fail(str(e))
    echo("\n".join([lines[0], describe(phases), *lines[1:]]))
    for problem in problems:
        echo(problem, err=True)
    if problems:
        raise click.exceptions.Exit(EXIT_USAGE)


def _here(plan, phases, slots: int | None) -> None:
    from ..inventory.topology import topology
    from ..plan.expand import describe, distinct
    from ..run.placement import oversubscribed, place
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
