"""Warnings are data: each is stored with the run as it happens (and shown by `report`), and
told once on stderr while the run goes. The checks that find them at the start of a run live
here too; those found mid-run (clocks, lost nodes, missing metrics) come from the coordinator.
"""
from __future__ import annotations

import sys
from typing import Callable, Iterable

from ..engines.base import Node
from ..inventory import noise
from ..model import Phase
from ..printable import printable
from ..plan.expand import distinct
from ..plan.tasks import PARALLEL_KERNEL
from ..results.contract import Warning, WarningKind, warning_text
from ..results.store import Store
from ..timebase import now_ns
from .placement import assign, oversubscribed


class Warnings:
    """The run's warnings: each distinct one stored once and echoed once."""

    def __init__(self, store: Store, run_id: str,
                 echo: Callable[[str], None] | None = None) -> None:
        self.store, self.run_id = store, run_id
        # a warning may quote a node or a command: told on stderr as text (printable.py)
        self.echo = echo or (lambda text: print(printable(text), file=sys.stderr))
        self.seen: set[tuple] = set()

    def add(self, kind: str, message: str, node: str = "", task: str = "",
            phase: int | None = None, key: tuple | None = None) -> None:
        """Store and tell a warning, unless one with the same key was already given (key:
        what makes it the same warning; default kind, node, task and message). A kind that is
        not a WarningKind is refused: a reader could not tell what it warns of."""
        w = Warning(kind=known_kind(kind), message=message, node=node, task=task, phase=phase,
                    time_ns=now_ns(), run=self.run_id)
        k = key or w.key()
        if k in self.seen:
            return
        self.seen.add(k)
        self.store.add_warning(self.run_id, w)
        self.echo(warning_text(kind, message))


def known_kind(kind: str) -> WarningKind:
    """The member of a kind given as it or as its text; ValueError naming the known ones."""
    try:
        return WarningKind(kind)
    except ValueError:
        raise ValueError(f"unknown warning kind {kind!r}: one of "
                         f"{', '.join(WarningKind)} (results/contract.py)") from None


def shared_machines(nodes: list[Node]) -> list[tuple[str, str, str]]:
    """Nodes with one boot id run on one machine: its cpus are counted once, not per node."""
    by: dict[str, list[Node]] = {}
    for n in nodes:
        if n.machine:
            by.setdefault(n.machine, []).append(n)
    out = []
    for same in by.values():
        if len(same) > 1:
            ids = sorted({c.id for n in same for c in n.cpus})
            out.append((WarningKind.SHARED_MACHINE, "", f"nodes {', '.join(n.name for n in same)} run on "
                        f"one machine (boot id {same[0].machine[:8]}): they share its "
                        f"{len(ids)} cpus ({cpu_list(ids)}), so their slots compete for them "
                        "and count as one machine's, not as separate nodes'"))
    return out


def cpu_list(ids: list[int]) -> str:
    """"cpus 0-3,6" from [0, 1, 2, 3, 6]."""
    runs: list[list[int]] = []
    for i in ids:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return "cpus " + ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def start_warnings(phases: Iterable[Phase], nodes: list[Node]) -> list[tuple[str, str, str]]:
    """(kind, node, message) of what the placement cannot give as asked: more slots than cpus,
    slots sharing cpus under pin = core, pin = numa on a node with one NUMA node, and cpus
    withheld from manybench by a cpuset or taskset."""
    out: list[tuple[str, str, str]] = shared_machines(nodes)
    for n in nodes:
        text = noise.stalls(n.name, (n.inventory or {}).get("noise"))
        if text:
            out.append((WarningKind.NOISE_FLOOR, n.name, text))
        if oversubscribed(n.slots, n.cpus):
            out.append((WarningKind.OVERSUBSCRIBED, n.name, f"node {n.name}: {n.slots} slots on "
                        f"{len(n.cpus)} cpus: oversubscribed, slots sleep until T0 without "
                        "spinning (expect more lateness and skew)"))
        inv = n.inventory or {}
        usable, logical = inv.get("usable_cpus"), inv.get("logical_cpus")
        if isinstance(usable, int) and isinstance(logical, int) and usable < logical:
            out.append((WarningKind.PIN, n.name, f"node {n.name}: manybench may use {usable} of its "
                        f"{logical} cpus (a cpuset or taskset); slots are pinned within those"))
    seen: set[tuple] = set()
    capacity = {n.name: n.slots for n in nodes}
    cpus = {n.name: n.cpus for n in nodes}
    for p in distinct(phases):     # one phase per point
        key = (p.workers, p.order, p.pin, str(p.cpus), str(p.bind), tuple(p.task.nodes or ()))
        if key in seen:
            continue
        seen.add(key)
        cap = {name: capacity[name] for name in (p.task.nodes or capacity) if name in capacity}
        try:
            work = assign(p.workers, p.order, p.pin, cap, cpus, per_slot=p.cpus, bind=p.bind)
        except ValueError:
            continue     # more workers than slots: check_nodes reports it
        for name, assigned in work.items():
            out += _phase_warnings(p, name, cpus[name], [a.place for a in assigned])
        out += _one_machine_jobs(p, work, {n.name: n.machine for n in nodes})
    return list(dict.fromkeys(out))


def _one_machine_jobs(p: Phase, work: dict, machine: dict[str, str | None]
                      ) -> list[tuple[str, str, str]]:
    """A parallel job spanning nodes of one machine: its "cross-node" figures may be shared
    memory's (MPICH's 0.13 us ping-pong between namespace nodes), which nothing else says."""
    ranks = p.params.get("ranks")
    if p.kernel != PARALLEL_KERNEL or not isinstance(ranks, int) or ranks < 2:
        return []
    jobs: dict[int, set[str]] = {}
    for name, assigned in work.items():
        for a in assigned:
            jobs.setdefault(a.rank // ranks, set()).add(name)
    out = []
    for names in jobs.values():
        by: dict[str, list[str]] = {}
        for n in sorted(names):
            if machine.get(n):
                by.setdefault(machine[n], []).append(n)
        for m, same in by.items():
            if len(same) > 1:
                out.append((WarningKind.JOB_ONE_MACHINE, "", f"task {p.task.name}: a job's ranks are on "
                            f"nodes {', '.join(same)}, which run on one machine (boot id "
                            f"{m[:8]}): its MPI may carry their messages through shared "
                            "memory, not the network, so its figures between those nodes "
                            "are not the network's"))
    return out


def _phase_warnings(p: Phase, name: str, cpus: tuple, places: list) -> list[tuple[str, str, str]]:
    out = []
    ncpus = len(cpus)
    per_slot = 1 if p.cpus == "numa" else int(p.cpus)   # "numa" is checked just below
    if p.pin == "core" and p.bind is None and len(places) * per_slot > ncpus:
        out.append((WarningKind.PIN, name, f"pin = core, workers = {p.workers}"
                    + (f", cpus = {p.cpus}" if p.cpus != 1 else "")
                    + f": {len(places)} slots on node {name}'s {ncpus} cpus share cpus"))
    if p.cpus == "numa" and len(places) > len({c.numa for c in cpus}):
        out.append((WarningKind.PIN, name, f"cpus = \"numa\", workers = {p.workers}: more slots than "
                    f"node {name}'s NUMA nodes; slots share them"))
    if p.pin == "numa" and len({c.numa for c in cpus}) == 1:
        out.append((WarningKind.PIN, name, f"pin = numa on node {name}, which has one NUMA node: "
                    "its slots may run on any of its cpus, as with pin = none"))
    known = {c.id for c in cpus}
    for pl in places:
        stray = [c for c in pl.affinity if c not in known]
        if stray:
            out.append((WarningKind.PIN, name, f"bind: slot {pl.slot} on node {name} is bound to cpus "
                        f"{stray} it cannot use (usable: {min(known)}-{max(known)})"))
    return out
