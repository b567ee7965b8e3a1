"""`info` and `kernels`: this machine's inventory and peaks, and the built-in kernels."""
from __future__ import annotations

import json
import os

import click

from ..printable import echo
from .errors import fail


@click.command()
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False),
              help="Show the peaks with this plan's [peaks] applied.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def info(plan_path: str | None, as_json: bool) -> None:
    """This node's inventory (CPU, NUMA, memory, SIMD, FMA, clocks) and theoretical peaks."""
    from ..inventory import environment, peaks
    from ..inventory.info import info_text
    plan_peaks = {}
    if plan_path is not None:
        if not os.path.isfile(plan_path):
            raise fail(f"plan file not found: {plan_path}")
        from .launch import load
        plan, _ = load(plan_path, None, (), None)
        plan_peaks = plan.peaks
    env = environment.collect()
    env["peaks"] = peaks.for_run(env, plan_peaks).as_dict()
    from ..inventory import noise        # the node's noise floor, as a run measures it
    from ..inventory.topology import topology
    env["noise"] = noise.measure([c.id for c in topology()],
                                 plan.noise if plan_path is not None else noise.DEFAULT_S)
    echo(json.dumps(env, indent=2, default=str) if as_json else
               info_text(env), nl=as_json)


@click.command()
@click.argument("name", required=False)
def kernels(name: str | None) -> None:
    """List the built-in kernels, or one kernel's parameters."""
    from ..kernels import KERNELS
    if name is not None and name not in KERNELS:
        raise fail(f"unknown kernel {name!r} (known: {', '.join(KERNELS)})")
    for k in ([KERNELS[name]] if name else KERNELS.values()):
        click.echo(click.style(k.name, bold=True))
        click.echo(click.wrap_text(k.doc, initial_indent="  ", subsequent_indent="  "))
        if not name:
            continue
        for pname, p in k.params.items():
            click.echo(f"  {pname:<12} {p.describe()}")
            click.echo(click.wrap_text(p.doc, initial_indent=" " * 15, subsequent_indent=" " * 15))
        click.echo()


COMMANDS = (info, kernels)
