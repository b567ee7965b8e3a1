"""Which cpus each slot of a node runs on, for a phase's order, pin, cpus and bind settings.

Slots are persistent and numbered 0..n-1 on a node; a phase with `workers = k` on one node
uses slots 0..k-1, and slot i sits on the i-th cpu of the node's placement order:
  spread: across NUMA nodes first, one cpu per physical core before any SMT sibling;
  pack:   fill NUMA node 0 (physical cores, then siblings) before the next.
With `cpus = N` each slot owns N cpus of one NUMA node (physical cores first), with
"numa" a whole NUMA node; the sets are handed out in the same spread / pack order. A `bind`
(plan/binding.py) overrides the cpus pin gives and adds the memory nodes.
More slots than cpus wrap around: oversubscription, allowed and reported.
"""
from __future__ import annotations

from typing import Any

from ..inventory.topology import topology
from ..node.protocol import Assignment, SlotPlace
from ..node.wire_types import Cpu
from ..plan.binding import explicit_sets


def cpu_order(order: str, cpus: tuple[Cpu, ...] | None = None) -> list[Cpu]:
    """The node's cpus in the order slots take them."""
    cpus = topology() if cpus is None else cpus
    # thread index within a physical core: siblings come after every first thread
    seen: dict[tuple[int, int], int] = {}
    thread: dict[int, int] = {}
    for c in sorted(cpus, key=lambda c: c.id):
        key = (c.package, c.core)
        thread[c.id] = seen.get(key, 0)
        seen[key] = thread[c.id] + 1
    if order == "pack":
        return sorted(cpus, key=lambda c: (c.numa, thread[c.id], c.package, c.core, c.id))
    # spread: round-robin over NUMA nodes, each taking its next cpu in pack order, one
    # thread level at a time: nodes of unequal size (an uneven cpuset) must not hand out a
    # sibling while another node still has an idle core
    levels: dict[int, dict[int, list[Cpu]]] = {}
    for c in sorted(cpus, key=lambda c: (c.package, c.core, c.id)):
        levels.setdefault(thread[c.id], {}).setdefault(c.numa, []).append(c)
    out: list[Cpu] = []
    for t in sorted(levels):
        queues = [levels[t][n] for n in sorted(levels[t])]
        while any(queues):
            for q in queues:
                if q:
                    out.append(q.pop(0))
    return out


SETTLE_PER_SLOT_NS = 40_000   # a wake-up and two stamps take a few us; this leaves room
SETTLE_MAX_NS = 10_000_000


def cpu_groups(order: str, per_slot: int | str, cpus: tuple[Cpu, ...]) -> list[tuple[Cpu, ...]]:
    """The cpu sets slots take in turn: one cpu each (cpu_order), `per_slot` cpus of one NUMA
    node each (physical cores before siblings), or a whole NUMA node each ("numa")."""
    if per_slot == 1:
        return [(c,) for c in cpu_order(order, cpus)]
    nodes: dict[int, list[Cpu]] = {}
    for c in cpu_order("pack", cpus):
        nodes.setdefault(c.numa, []).append(c)
    if per_slot == "numa":
        groups = [tuple(cs) for _, cs in sorted(nodes.items())]
        return groups
    n = int(per_slot)
    by_node = [[tuple(cs[i:i + n]) for i in range(0, len(cs) - n + 1, n)]
               for _, cs in sorted(nodes.items())]
    if not any(by_node):   # no NUMA node holds n cpus: take them in pack order across nodes
        seq = cpu_order("pack", cpus)
        return [tuple(seq[i:i + n]) for i in range(0, max(1, len(seq) - n + 1), n)] or \
            [tuple(seq)]
    if order == "pack":
        return [g for gs in by_node for g in gs]
    out: list[tuple[Cpu, ...]] = []   # spread: round-robin over NUMA nodes
    while any(by_node):
        for gs in by_node:
            if gs:
                out.append(gs.pop(0))
    return out


def place(workers: int, order: str, pin: str, cpus: tuple[Cpu, ...] | None = None,
          load: int | None = None, per_slot: int | str = 1, bind: Any = None
          ) -> list[SlotPlace]:
    """Slots 0..workers-1 of one node with their cpus, memory nodes and spin right for one
    phase.

    load: the phase's slots on this node's machine in all (several nodes may be namespaces
    or containers of one machine); the node's own workers when not given. per_slot: cpus
    each slot owns (the plan's `cpus`). bind: plan/binding.py's binding, else None (pin
    alone decides the cpus and the memory policy is the default).
    """
    cpus = topology() if cpus is None else cpus
    groups = cpu_groups(order, per_slot, cpus)
    load = max(load or workers, workers)
    own_core = load <= len(groups)
    sharing = -(-load // len(groups))          # slots per cpu set, rounded up
    settle = 0 if own_core else min(SETTLE_MAX_NS, SETTLE_PER_SLOT_NS * sharing)
    everything = tuple(sorted(c.id for c in cpus))
    numa_of = {c.id: c.numa for c in cpus}
    out = []
    for i in range(workers):
        group = groups[i % len(groups)]
        own = tuple(sorted(c.id for c in group))
        if pin == "core":
            affinity = own
        elif pin == "numa":
            affinity = tuple(sorted(x.id for x in cpus if x.numa in {c.numa for c in group}))
        else:
            affinity = everything
        affinity, mems = _bound(bind, i, own, affinity, cpus, numa_of, everything)
        cpu = affinity[0] if len(affinity) == 1 else -1
        # spin the last stretch only on cpus no other slot of the phase may use
        spin = own_core and affinity == own and (pin != "none" or bind is not None)
        out.append(SlotPlace(i, cpu, affinity, spin and len(affinity) == len(own), settle,
                             mems))
    return out


def _bound(bind: Any, i: int, own: tuple[int, ...], affinity: tuple[int, ...],
           cpus: tuple[Cpu, ...], numa_of: dict[int, int], everything: tuple[int, ...]
           ) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """A slot's cpus and memory nodes under a binding (plan/binding.py)."""
    if bind is None:
        return affinity, None
    if bind == "none":
        return everything, None
    nodes = tuple(sorted({numa_of[c] for c in own if c in numa_of}))
    if bind == "core":
        return own, nodes
    if bind == "numa":
        return tuple(sorted(c.id for c in cpus if c.numa in nodes)), nodes
    sets = explicit_sets(bind.get("cpus"))
    mems = explicit_sets(bind.get("mems"))
    return (tuple(sets[i % len(sets)]) if sets else affinity,
            tuple(mems[i % len(mems)]) if mems else None)


def oversubscribed(slots: int, cpus: tuple[Cpu, ...] | None = None) -> bool:
    return slots > len(topology() if cpus is None else cpus)


def spread_counts(workers: int, order: str, capacity: dict[str, int]) -> dict[str, int]:
    """How many of a phase's workers each node gets.

    spread: one per node in turn (SMTEF's 7 nodes: 2..7 workers, then 14, 21 ...);
    pack: fill the first node before the next. Nodes keep their listed order.
    """
    counts = {n: 0 for n in capacity}
    names = list(capacity)
    if order == "pack":
        left = workers
        for n in names:
            counts[n] = min(capacity[n], left)
            left -= counts[n]
    else:
        left = workers
        while left > 0 and any(counts[n] < capacity[n] for n in names):
            for n in names:
                if left and counts[n] < capacity[n]:
                    counts[n] += 1
                    left -= 1
    if sum(counts.values()) < workers:
        raise ValueError(f"{workers} workers but only {sum(capacity.values())} slots")
    return counts


def assign(workers: int, order: str, pin: str, capacity: dict[str, int],
           cpus: dict[str, tuple[Cpu, ...]] | None = None,
           machines: dict[str, str] | None = None, per_slot: int | str = 1,
           bind: Any = None) -> dict[str, list[Assignment]]:
    """Each node's slot assignments (place and rank) for one phase; ranks are 0..workers-1 overall,
    given in the order workers were handed out (spread interleaves the nodes). machines:
    node -> machine id, so nodes sharing a machine share its cpus when deciding to spin."""
    counts = spread_counts(workers, order, capacity)
    machines = machines or {}
    load: dict[str, int] = {}
    for n, k in counts.items():
        m = machines.get(n) or n
        load[m] = load.get(m, 0) + k
    places = {n: place(k, order, pin, (cpus or {}).get(n), load[machines.get(n) or n],
                       per_slot, bind)
              for n, k in counts.items() if k}
    out: dict[str, list[Assignment]] = {n: [] for n in places}
    taken = {n: 0 for n in places}
    rank = 0
    names = list(places)
    while rank < workers:   # replay the hand-out order to number the ranks
        for n in names:
            if order == "pack":
                while taken[n] < counts[n]:
                    out[n].append(Assignment(places[n][taken[n]], rank))
                    taken[n] += 1
                    rank += 1
            elif taken[n] < counts[n]:
                out[n].append(Assignment(places[n][taken[n]], rank))
                taken[n] += 1
                rank += 1
    return out
