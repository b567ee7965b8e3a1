"""Placement on synthetic topologies: which cpu each slot takes, with what affinity and spin.

The machine: 2 sockets x 2 NUMA nodes per socket x 8 cores = 32 cores, numbered the Linux way:
cpus 0-31 are the first thread of each core (NUMA node = cpu // 8, package = cpu // 16, core id
within the package = cpu % 16); with SMT, cpu N + 32 is the sibling of cpu N.
"""
from __future__ import annotations

import pytest

from manybench.inventory.topology import Cpu
from manybench.run.placement import (SETTLE_PER_SLOT_NS, assign, cpu_order, oversubscribed,
                                     place, spread_counts)


def machine(smt: bool) -> tuple[Cpu, ...]:
    first = [Cpu(c, c % 16, c // 16, c // 8) for c in range(32)]
    second = [Cpu(c + 32, c % 16, c // 16, c // 8) for c in range(32)] if smt else []
    return tuple(first + second)


NUMA = {n: list(range(8 * n, 8 * n + 8)) for n in range(4)}   # first threads per NUMA node


def test_spread_takes_one_core_per_numa_node_in_turn_then_siblings():
    order = [c.id for c in cpu_order("spread", machine(smt=True))]
    firsts = [NUMA[n][i] for i in range(8) for n in range(4)]   # 0, 8, 16, 24, 1, 9, ...
    assert order[:8] == [0, 8, 16, 24, 1, 9, 17, 25]
    assert order == firsts + [c + 32 for c in firsts]
    assert [c.id for c in cpu_order("spread", machine(smt=False))] == firsts


def test_pack_fills_a_numa_node_cores_then_siblings_before_the_next():
    order = [c.id for c in cpu_order("pack", machine(smt=True))]
    want = [c for n in range(4) for c in NUMA[n] + [x + 32 for x in NUMA[n]]]
    assert order[:16] == list(range(8)) + list(range(32, 40))
    assert order == want
    assert [c.id for c in cpu_order("pack", machine(smt=False))] == list(range(32))


@pytest.mark.parametrize("smt", [True, False])
def test_pin_core_gives_each_slot_its_cpu_and_spin_while_they_fit(smt):
    cpus = machine(smt)
    slots = place(4, "spread", "core", cpus)
    assert [(s.slot, s.cpu, s.affinity) for s in slots] == [
        (0, 0, (0,)), (1, 8, (8,)), (2, 16, (16,)), (3, 24, (24,))]
    assert all(s.spin and s.settle_ns == 0 for s in slots)
    full = place(len(cpus), "pack", "core", cpus)
    assert len({s.cpu for s in full}) == len(cpus) and all(s.spin for s in full)


def test_pin_numa_gives_the_nodes_cpus_and_never_spins_there():
    slots = place(5, "spread", "numa", machine(smt=True))
    node0 = tuple(sorted(NUMA[0] + [c + 32 for c in NUMA[0]]))
    node1 = tuple(sorted(NUMA[1] + [c + 32 for c in NUMA[1]]))
    assert [s.affinity for s in slots] == [node0, node1,
                                           tuple(sorted(NUMA[2] + [c + 32 for c in NUMA[2]])),
                                           tuple(sorted(NUMA[3] + [c + 32 for c in NUMA[3]])),
                                           node0]        # the fifth is back on node 0
    assert all(s.cpu == -1 and not s.spin for s in slots)   # 16 cpus each: others may run


def test_pin_none_lets_every_slot_run_anywhere_without_spinning():
    cpus = machine(smt=False)
    slots = place(3, "spread", "none", cpus)
    assert all(s.cpu == -1 and s.affinity == tuple(range(32)) and not s.spin for s in slots)


@pytest.mark.parametrize("smt,n", [(True, 64), (False, 32)])
def test_oversubscription_wraps_and_settles_instead_of_spinning(smt, n):
    cpus = machine(smt)
    assert not oversubscribed(n, cpus) and oversubscribed(n + 1, cpus)
    slots = place(n + 6, "pack", "core", cpus)
    first = [c.id for c in cpu_order("pack", cpus)]
    assert [s.cpu for s in slots] == first + first[:6]        # wrapped around
    assert not any(s.spin for s in slots)
    assert all(s.settle_ns == 2 * SETTLE_PER_SLOT_NS for s in slots)   # 2 slots per cpu at most


def test_spread_counts_hand_out_one_per_node_in_turn_and_pack_fills():
    cap = {"a": 2, "b": 2, "c": 2}
    assert spread_counts(5, "spread", cap) == {"a": 2, "b": 2, "c": 1}
    assert spread_counts(4, "spread", cap) == {"a": 2, "b": 1, "c": 1}
    assert spread_counts(4, "pack", cap) == {"a": 2, "b": 2, "c": 0}
    assert spread_counts(7, "spread", {"a": 1, "b": 6}) == {"a": 1, "b": 6}
    with pytest.raises(ValueError, match="7 workers but only 6 slots"):
        spread_counts(7, "pack", cap)


def test_assign_numbers_ranks_in_hand_out_order():
    cpus = machine(smt=False)
    cap = {"a": 2, "b": 2, "c": 2}
    by = {n: cpus for n in cap}
    spread = assign(5, "spread", "core", cap, by)
    assert {n: [(x.place.slot, x.rank) for x in xs] for n, xs in spread.items()} == {
        "a": [(0, 0), (1, 3)], "b": [(0, 1), (1, 4)], "c": [(0, 2)]}
    pack = assign(5, "pack", "core", cap, by)
    assert {n: [(x.place.slot, x.rank) for x in xs] for n, xs in pack.items()} == {
        "a": [(0, 0), (1, 1)], "b": [(0, 2), (1, 3)], "c": [(0, 4)]}
    assert [x.place.cpu for x in spread["a"]] == [0, 8]      # each node's own spread order


def test_nodes_on_one_machine_share_its_cpus_when_deciding_to_spin():
    two = (Cpu(0, 0, 0, 0), Cpu(1, 1, 0, 0))                 # a 2-cpu box
    cap = {"a": 2, "b": 2}
    apart = assign(4, "spread", "core", cap, {"a": two, "b": two}, {"a": "m1", "b": "m2"})
    assert all(x.place.spin and x.place.settle_ns == 0 for xs in apart.values() for x in xs)
    # the same two nodes as namespaces of one machine: 4 slots on its 2 cpus
    shared = assign(4, "spread", "core", cap, {"a": two, "b": two}, {"a": "m", "b": "m"})
    assert not any(x.place.spin for xs in shared.values() for x in xs)
    assert all(x.place.settle_ns == 2 * SETTLE_PER_SLOT_NS for xs in shared.values() for x in xs)


def test_spread_uses_every_core_before_a_sibling_when_numa_nodes_differ_in_size():
    # the cpus this process may use (a cpuset, a batch allocation) need not split evenly:
    # 2 cores of node 0 and 4 of node 1 allowed, with their siblings
    cpus = tuple(Cpu(c, c % 16, 0, c // 8) for c in (0, 1, 8, 9, 10, 11)) + \
        tuple(Cpu(c + 32, c % 16, 0, c // 8) for c in (0, 1, 8, 9, 10, 11))
    order = [c.id for c in cpu_order("spread", cpus)]
    # node 0's cores run out first; its siblings wait until node 1's cores are taken too
    assert order == [0, 8, 1, 9, 10, 11, 32, 40, 33, 41, 42, 43]
    assert [c.id for c in cpu_order("pack", cpus)] == [0, 1, 32, 33, 8, 9, 10, 11,
                                                        40, 41, 42, 43]


def test_pin_numa_spins_only_where_a_node_is_a_single_cpu():
    one_each = tuple(Cpu(c, c, 0, c) for c in range(4))      # 4 NUMA nodes of one cpu
    slots = place(4, "spread", "numa", one_each)
    # a slot whose node is one cpu is on that cpu, and records say which
    assert [(s.cpu, s.affinity, s.spin) for s in slots] == [
        (0, (0,), True), (1, (1,), True), (2, (2,), True), (3, (3,), True)]
    assert not any(s.spin for s in place(5, "spread", "numa", one_each))   # shared: no
