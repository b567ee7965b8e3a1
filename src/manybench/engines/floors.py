"""Which nodes measure their noise floor (inventory/noise.py) at a run's start, and when.

Nodes of one machine (one boot id: namespaces, containers) that may use the same cpus would
measure the same thing: one of them measures (the first; the next if that one fails), the
others take its floor, which says so (`measured_by`, `machine`, `nodes`): a reader never
takes it for a measurement of their own.
64 namespace nodes of one machine spent 64 x 0.4 s measuring the same two cpus.

Groups of one machine whose cpus overlap measure one after another: the probe pins a thread
on each cpu, and two on one cpu would share it and see each other's time slices as stalls.
Groups whose cpus are disjoint (a node pinned to cpus 0-15, another to 16-31) measure at
once, as separate machines do: neither takes the other's cpus, and what they share (the
memory bus, the last-level cache, interrupts routed to either) is shared the same way while
the run's slots go on both at once: measured one after another, each would see a quieter
machine than its slots will.
"""
from __future__ import annotations

from typing import Any

from .base import Node

Group = list[Node]        # one machine, the same cpus: one node measures for all


def _cpus(n: Node) -> frozenset[int]:
    return frozenset(c.id for c in n.cpus)


def _overlap(a: frozenset[int], b: frozenset[int]) -> bool:
    return not a or not b or bool(a & b)     # cpus unknown: as if shared


def chains(nodes: list[Node]) -> list[list[Group]]:
    """The nodes' measurements: each chain's groups one after another, the chains at once.
    A node with no boot id is a machine of its own."""
    groups: dict[tuple[str, frozenset[int]], Group] = {}
    for n in nodes:
        groups.setdefault((n.machine or f"node {n.name}", _cpus(n)), []).append(n)
    by_machine: dict[str, list[list[tuple[frozenset[int], Group]]]] = {}
    for (machine, cpus), group in groups.items():
        mine = by_machine.setdefault(machine, [])
        touching = [c for c in mine if any(_overlap(cpus, o) for o, _ in c)]
        # this group joins every chain it overlaps into one
        mine[:] = [c for c in mine if not any(c is t for t in touching)]
        mine.append([g for c in touching for g in c] + [(cpus, group)])
    return [[g for _, g in chain] for mine in by_machine.values() for chain in mine]


def shared(floor: dict[str, Any] | None, group: Group, by: Node) -> dict[str, Any] | None:
    """The floor as each node of the group stores it: one measurement, by `by` (one of
    them), named as its machine's when others take it too."""
    if floor is None or len(group) == 1:
        return floor
    return {**floor, "measured_by": by.name, "machine": by.machine, "nodes": len(group)}
