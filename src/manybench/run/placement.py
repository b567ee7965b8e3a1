"""Which cpu each slot of a node runs on, for a phase's order and pin settings.

Slots are persistent and numbered 0..n-1 on a node; a phase with `workers = k` on one node
uses slots 0..k-1, and slot i sits on the i-th cpu of the node's placement order:
  spread: across NUMA nodes first, one cpu per physical core before any SMT sibling;
  pack:   fill NUMA node 0 (physical cores, then siblings) before the next.
More slots than cpus wrap around: oversubscription, allowed and reported.
"""
from __future__ import annotations

from ..inventory.topology import Cpu, topology
from ..node.protocol import Assignment, SlotPlace


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


def place(workers: int, order: str, pin: str, cpus: tuple[Cpu, ...] | None = None,
          load: int | None = None) -> list[SlotPlace]:
    """Slots 0..workers-1 of one node with their cpu, affinity and spin right for one phase.

    load: the phase's slots on this node's machine in all (several nodes may be namespaces
    or containers of one machine); the node's own workers when not given.
    """
    cpus = topology() if cpus is None else cpus
    seq = cpu_order(order, cpus)
    load = max(load or workers, workers)
    own_core = load <= len(seq)
    sharing = -(-load // len(seq))             # slots per cpu, rounded up
    settle = 0 if own_core else min(SETTLE_MAX_NS, SETTLE_PER_SLOT_NS * sharing)
    everything = tuple(sorted(c.id for c in cpus))
    out = []
    for i in range(workers):
        c = seq[i % len(seq)]
        if pin == "core":
            out.append(SlotPlace(i, c.id, (c.id,), own_core, settle))
        elif pin == "numa":
            numa = tuple(sorted(x.id for x in cpus if x.numa == c.numa))
            out.append(SlotPlace(i, -1, numa, own_core and len(numa) == 1, settle))
        else:
            # unpinned slots may share a core with anything: spinning would steal it
            out.append(SlotPlace(i, -1, everything, False, settle))
    return out


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
           machines: dict[str, str] | None = None) -> dict[str, list[Assignment]]:
    """Each node's slot assignments (place and rank) for one phase; ranks are 0..workers-1 overall,
    given in the order workers were handed out (spread interleaves the nodes). machines:
    node -> machine id, so nodes sharing a machine share its cpus when deciding to spin."""
    counts = spread_counts(workers, order, capacity)
    machines = machines or {}
    load: dict[str, int] = {}
    for n, k in counts.items():
        m = machines.get(n) or n
        load[m] = load.get(m, 0) + k
    places = {n: place(k, order, pin, (cpus or {}).get(n), load[machines.get(n) or n])
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
