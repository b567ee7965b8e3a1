"""How the coordinator reaches node agents. One table: adding an engine is adding a module
with a `make(plan, where, config)` and a row of ENGINES."""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..model import Plan
from .base import Engine, EngineConfig
from .local import LocalEngine


@dataclass(frozen=True)
class Where:
    """Where a run's nodes are and how they are reached, as the command line names them (at
    most one of scheduler, hosts, cluster, simulate; none: this machine)."""
    scheduler: str | None = None    # an existing Dask scheduler's address
    hosts: str | None = None        # a hostfile: Dask started over SSH
    cluster: str | None = None      # a batch system (clusters.CLUSTERS)
    simulate: str | None = None     # simulated nodes (simulated.parse_spec)
    slots: int | None = None        # per node
    credentials: str | None = None  # the cluster's (engines/access.py)
    insecure: bool = False


# name -> (the module whose make() makes it, relative to this package, and the fields of
# Where that choose it), in the order they are tried; the last chooses itself
ENGINES: dict[str, tuple[str, tuple[str, ...]]] = {
    "simulated": (".simulated", ("simulate",)),
    "dask": (".clusters", ("scheduler", "hosts", "cluster")),
    "local": (".local", ()),
}


def chosen(where: Where) -> str:
    """The name of the engine `where` asks for."""
    return next(name for name, (_, fields) in ENGINES.items()
                if not fields or any(getattr(where, f) for f in fields))


def make_engine(plan: Plan, where: Where, config: EngineConfig = EngineConfig()) -> Engine:
    """The engine `where` asks for, for this plan (imported only then: Dask's is heavy).
    EngineError (clusters.HostfileError: a hostfile's problems) when it cannot be made."""
    module, _ = ENGINES[chosen(where)]
    return importlib.import_module(module, __package__).make(plan, where, config)


__all__ = ["ENGINES", "Engine", "EngineConfig", "LocalEngine", "Where", "chosen",
           "make_engine"]
