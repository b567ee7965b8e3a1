"""The noise floor at a run's start (issue 30, item 5): nodes of one machine on the same cpus
take one measurement, which names its machine and the node that took it; groups of one
machine on disjoint cpus and separate machines measure at once, groups whose cpus overlap one
after another (engines/floors.py). 64 namespace nodes of one machine spent 64 x 0.4 s."""
from __future__ import annotations

import asyncio

from manybench.engines import floors
from manybench.engines.base import EngineConfig, Node
from manybench.engines.dask import DaskEngine
from manybench.engines.direct import NodeLost
from manybench.inventory.topology import Cpu
from manybench.node.protocol import MeasureNoise, NoiseFloor
from manybench.report.header import notes
from manybench.results.contract import RunInfo, RunNotes, StoredNode
from manybench.run.warnings import start_warnings

MS = 1_000_000
FLOOR = {"seconds": 0.4, "cpus": 2, "method": "m", "stall_ns": 3 * MS, "gaps_100us": 5,
         "gaps_1ms": 1, "lost_share": 0.01, "wake_p50_ns": 5_000, "wake_p99_ns": 20_000,
         "wake_max_ns": 3 * MS, "per_cpu": []}


def _cpus(*ids: int) -> tuple[Cpu, ...]:
    return tuple(Cpu(i, i, 0, 0) for i in ids)


def _names(chains) -> list[list[list[str]]]:
    return [[[n.name for n in g] for g in c] for c in chains]


def test_one_machines_nodes_on_the_same_cpus_are_one_group_and_machines_go_at_once():
    two = _cpus(0, 1)
    nodes = [Node(f"n{i}", 1, two, machine="boot-a") for i in range(1, 5)]
    nodes += [Node("m1", 1, two, machine="boot-b"), Node("x", 1, two), Node("y", 1, two)]
    assert _names(floors.chains(nodes)) == [[["n1", "n2", "n3", "n4"]], [["m1"]], [["x"]],
                                            [["y"]]]      # no boot id: a machine of its own


def test_disjoint_cpus_of_one_machine_go_at_once_and_overlapping_ones_in_turn():
    nodes = [Node("lo", 1, _cpus(*range(16)), machine="b"),
             Node("hi", 1, _cpus(*range(16, 32)), machine="b"),
             Node("lo2", 1, _cpus(*range(16)), machine="b")]
    assert _names(floors.chains(nodes)) == [[["lo", "lo2"]], [["hi"]]]
    # a node on cpus 8-23 shares cpus with both: all three groups one after another
    bridge = Node("mid", 1, _cpus(*range(8, 24)), machine="b")
    assert _names(floors.chains(nodes + [bridge])) == [[["lo", "lo2"], ["hi"], ["mid"]]]


class _Probes:
    """MeasureNoise answered by node name; `together` of them must be under way at once
    before any answers (the test hangs into its timeout if they are asked in turn); the
    nodes in `lost` fail as a lost node does."""

    def __init__(self, together: int = 1, lost: tuple[str, ...] = ()) -> None:
        self.asked: list[str] = []
        self.together, self.lost = together, lost

    async def call(self, node: str, req: object) -> NoiseFloor:
        assert isinstance(req, MeasureNoise)
        self.asked.append(node)
        if node in self.lost:
            raise NodeLost(f"node {node} lost")
        while len(self.asked) < self.together:
            await asyncio.sleep(0.001)
        return NoiseFloor({**FLOOR, "stall_ns": FLOOR["stall_ns"] + len(self.asked)})


def _engine(nodes: list[Node], probes: _Probes) -> DaskEngine:
    engine = DaskEngine(object(), config=EngineConfig(noise_s=0.4))
    engine.nodes, engine._call = nodes, probes.call
    return engine


def test_four_nodes_of_one_machine_spend_one_measurement_named_as_the_machines():
    nodes = [Node(f"n{i}", 1, _cpus(0, 1), machine="boot-a") for i in range(1, 5)]
    probes = _Probes()
    asyncio.run(asyncio.wait_for(_engine(nodes, probes)._noise(), 10))
    assert probes.asked == ["n1"]            # int31: n1, n2, n3, n4, one after another
    got = [n.inventory["noise"] for n in nodes]
    assert all(f == got[0] for f in got)
    assert got[0]["measured_by"] == "n1" and got[0]["machine"] == "boot-a"
    assert got[0]["nodes"] == 4 and got[0]["stall_ns"] == FLOOR["stall_ns"] + 1
    # the node that measures is lost: the next one measures for the machine
    probes = _Probes(lost=("n1",))
    asyncio.run(asyncio.wait_for(_engine(nodes, probes)._noise(), 10))
    assert probes.asked == ["n1", "n2"]
    assert all(n.inventory["noise"]["measured_by"] == "n2" for n in nodes)


def test_separate_machines_and_disjoint_cpus_measure_at_once_each_its_own():
    nodes = [Node("a", 1, _cpus(0), machine="boot-a"), Node("b", 1, _cpus(1), machine="boot-a"),
             Node("c", 1, _cpus(0), machine="boot-c")]
    probes = _Probes(together=3)
    asyncio.run(asyncio.wait_for(_engine(nodes, probes)._noise(), 10))
    assert sorted(probes.asked) == ["a", "b", "c"]
    assert all("measured_by" not in n.inventory["noise"] for n in nodes)   # each its own


def test_a_shared_floor_is_one_stalls_warning_and_one_header_line_naming_who_measured():
    names = ("n1", "n2", "n3")
    group = [Node(n, 1, _cpus(0, 1), machine="bootabcdef") for n in names]
    floor = floors.shared(FLOOR, group, group[0])
    nodes = [Node(n, 1, _cpus(0, 1), machine="bootabcdef", inventory={"noise": floor})
             for n in names]
    stalls = [w for w in start_warnings([], nodes) if w[0] == "noise-floor"]
    assert [w[1] for w in stalls] == ["n1"], stalls
    assert "measured once by node n1 for its 3 nodes on the same cpus" in stalls[0][2]
    run = RunInfo(run_id="r", name="r", status="finished", started_ns=1, ended_ns=2,
                  plan_source="", plan_raw={}, argv=[], environment={},
                  notes=RunNotes(slots=3, cpus=2))
    stored = [StoredNode("r", n, "h", 1, 2, machine="bootabcdef", inventory={"noise": floor})
              for n in names]
    lines = [ln for ln in notes(run, stored) if ln.startswith("noise floor")]
    assert lines == ["noise floor n1, n2, n3: one machine's floor, boot id bootabcd, measured "
                     "once by node n1 for its 3 nodes on the same cpus: stalls up to 3 ms"
                     + lines[0].split("stalls up to 3 ms", 1)[1]], lines
    twelve = {**floor, "nodes": 12, "measured_by": "n00"}
    many = [StoredNode("r", f"n{i:02d}", "h", 1, 2, machine="bootabcdef",
                       inventory={"noise": twelve}) for i in range(12)]
    line = next(ln for ln in notes(run, many) if ln.startswith("noise floor"))
    assert line.startswith("noise floor of 12 nodes (1 measurement), the worst n00 (one "
                           "machine's floor, boot id bootabcd, measured once by node n00"), line
