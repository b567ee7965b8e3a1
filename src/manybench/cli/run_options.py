"""`run`'s options as one object: the checks between them, and a resume's options made from
the stored run's (its --set, --slots and where it ran, as parsed when it started: stored in
the run's row; a run stored before results schema 10 has its command line parsed again by
click, the same parser)."""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import click

from ..printable import echo
from .errors import fail

# the options naming where a run's nodes are (one at most), and how they are reached
PLACES = ("scheduler", "hosts", "cluster", "simulate")


@dataclass(frozen=True)
class RunOptions:
    """`manybench run`'s options, as click parsed them (the fields are its parameters)."""
    plan: str | None = None
    outdir: str | None = None
    resume_dir: str | None = None
    overrides: tuple[str, ...] = ()
    slots: int | None = None
    dry_run: bool = False
    quiet: bool = False
    scheduler: str | None = None
    hosts: str | None = None
    cluster: str | None = None
    simulate: str | None = None
    credentials: str | None = None
    insecure: bool = False
    fanout: int | None = None

    @classmethod
    def of(cls, params: dict) -> RunOptions:
        """From parsed parameters (stored JSON too: lists back to tuples); names this version
        does not know are left out."""
        known = {f.name for f in dataclasses.fields(cls)}
        given = {k: v for k, v in params.items() if k in known}
        if given.get("overrides") is not None:
            given["overrides"] = tuple(given["overrides"])
        return cls(**given)

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "overrides": list(self.overrides)}

    @property
    def place(self) -> str | None:
        """The option naming where the nodes are, None on this machine."""
        return next((p for p in PLACES if getattr(self, p)), None)

    @property
    def on_cluster(self) -> bool:
        """Nodes reached over the network (--simulate's are not)."""
        return bool(self.scheduler or self.hosts or self.cluster)

    @property
    def plan_slots(self) -> int | None:
        """--slots as the plan takes it: on a cluster it is per node, and worker counts are
        checked against the nodes found."""
        return None if self.place else self.slots

    def check(self) -> None:
        """The options' combinations (exit 2 naming them), before anything is read."""
        if self.resume_dir is not None and (self.outdir is not None or self.dry_run):
            raise fail("--resume DIR continues DIR: give neither -o nor --dry-run with it")
        if self.plan is None and self.resume_dir is None:
            raise fail("give a PLAN to run (or --resume DIR)")
        if self.plan is not None and not os.path.isfile(self.plan):
            raise fail(f"plan file not found: {self.plan}")

    def check_place(self) -> None:
        """Where the nodes are, told once (exit 2 naming the options)."""
        if sum(getattr(self, p) is not None for p in PLACES) > 1:
            raise fail("give at most one of --scheduler, --hosts, --cluster, --simulate")
        if (self.credentials or self.insecure) and not self.on_cluster:
            raise fail("--credentials and --insecure are for a cluster (--scheduler, --hosts, "
                       "--cluster): this machine's slots need no network")
        if self.fanout is not None and not self.place:
            raise fail("--fanout needs a cluster (--scheduler, --hosts, --cluster or "
                       "--simulate): this machine's slots need no relay")


def stored(info) -> RunOptions:
    """The options a stored run (results/contract.RunInfo) was started with: as stored, or
    its command line parsed by the `run` command (a run stored before schema 10)."""
    if info.options is not None:
        return RunOptions.of(info.options)
    return RunOptions.of(from_argv(info.argv))


def from_argv(argv: list[str]) -> dict:
    """A stored command line's `run` options, parsed by the `run` command itself ({} when
    it is no `manybench run`: a run started from Python)."""
    from .group import main      # the group the commands joined (cli/__init__.py): no cycle
    run = main.commands["run"]   # through run.py, which launches what this module defines
    if argv[1:2] != ["run"]:      # the group takes no option a run would be started with
        return {}
    args = list(argv[2:])
    try:     # resilient: a value click refuses is left out, as a missing PLAN is
        with run.make_context("run", args, resilient_parsing=True) as ctx:
            return dict(ctx.params)
    except click.ClickException:
        return {}


def _fanout_text(n: int | None) -> str | None:
    return None if n is None else "off" if n == 0 else str(n)


def where_it_ran(given: RunOptions, before: RunOptions) -> RunOptions:
    """A resume that names no place runs where the stored run ran (resumed elsewhere, its
    phases would differ), with its --fanout unless this one gives one, and reached as it was
    unless this one says how; told on stderr when it ran on a cluster."""
    if given.place:
        return given
    fanout = given.fanout if given.fanout is not None else before.fanout
    if before.place:
        shown = {**{p: getattr(before, p) for p in PLACES}, "fanout": _fanout_text(before.fanout),
                 "credentials": before.credentials}
        echo("resuming where the run ran: " + " ".join(
            f"--{n} {v}" for n, v in shown.items() if v)
            + (" --insecure" if before.insecure else "")
            + " (name one of them to resume elsewhere)", err=True)
    reached = {} if (given.credentials or given.insecure) else \
        {"credentials": before.credentials, "insecure": before.insecure}
    return dataclasses.replace(given, **{p: getattr(before, p) for p in PLACES},
                               fanout=fanout, **reached)
