#!/usr/bin/env python3
"""The coordinator's record path, alone, as the tree on PYTHONPATH has it (bench_node_phase.py
runs it under this tree and under the tree before the change).

  python benchmarks/records_path.py NODES SLOTS PHASES     # prints one JSON object

Per phase: every node's reply to Run as it comes off the wire (protocol.encode'd Finished,
built once: null results with the metrics a slot reads back) is decoded, its stamps moved
into the coordinator's clock (engines/base.py Engine.results), made records (run/outcome
collect), judged for stalls, and the phase committed to a fresh results.db (Store.write_phase,
one transaction) during the next phase, with the cyclic collector around them as the
coordinator's phase loop has it (gc_pause.PhaseCollector, where the tree has one: off from the
go, the records frozen until their commit; run.gc_pause false: untouched). CPU of this
process (getrusage) over the phases after 20 warm-up ones; per record and per phase; and the
cyclic collections that ran meanwhile (gc.get_stats). Only the tree's public names are used,
so either tree runs it.
"""
from __future__ import annotations

import gc
import json
import resource
import shutil
import sys
import tempfile

from manybench.engines.base import Engine, Node
from manybench.kernels import Result
from manybench.model import Phase, Plan, TaskSpec
from manybench.node import protocol as P
from manybench.results.store import Store
from manybench.run.outcome import collect
from manybench.run.stalls import flag_stalls

T = 1_700_000_000_000_000_000
WARM = 20


def replies(nodes: int, slots: int) -> dict[str, bytes]:
    """Each node's Finished as encoded on the wire (this tree's form of it)."""
    out = {}
    for n in range(nodes):
        res = {s: Result(start_ns=T + 100 + s, end_ns=T + 900 + s, elapsed_ns=800,
                         armed_ns=T - 5_000, ops=1,
                         metrics={"cpus_allowed": str(s), "mems_allowed": "0",
                                  "mempolicy": "default"}) for s in range(slots)}
        try:        # this tree's replies carry a node's results as arrays
            from manybench.node.arrays import SlotResults
            got: object = SlotResults.of(res)
        except ImportError:
            got = res
        out[f"n{n:04d}"] = P.encode(P.Finished(got))
    return out


class Replies(Engine):
    """An engine whose nodes have answered: their replies decoded as the engine does."""

    def __init__(self, nodes: list[Node], wire: dict[str, bytes]) -> None:
        self.nodes, self.wire = nodes, wire

    def start(self, *a, **k):
        return self.nodes

    def _prepare(self, phase, work, tick):
        return {}

    def _go(self, t0_by_node):
        pass

    def poll(self, timeout):
        return True

    def _results(self):
        return {name: P.decode(data, name).results for name, data in self.wire.items()}

    def close(self):
        pass

    def abort(self):
        pass


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def collections() -> int:
    """Cyclic collections run so far in this process, every generation."""
    return sum(g["collections"] for g in gc.get_stats())


def main() -> None:
    nodes, slots, phases = (int(a) for a in sys.argv[1:4])
    names = [f"n{n:04d}" for n in range(nodes)]
    nodelist = [Node(name, slots, (), offset_ns=1_000 + i, error_ns=50)
                for i, name in enumerate(names)]
    work = {name: [P.Assignment(P.SlotPlace(s, s, (s,), True), i * slots + s)
                   for s in range(slots)] for i, name in enumerate(names)}
    engine = Replies(nodelist, replies(nodes, slots))
    spec = TaskSpec("sync", "null", {})
    where = tempfile.mkdtemp(prefix="mb-records-")
    try:        # the results.db is the run's only product here: none left behind
        store = Store(where)
        store.begin_run("r", Plan(name="p", tasks=[spec], source="", raw={}), [], {})
        try:
            from manybench.gc_pause import PhaseCollector
            collector = PhaseCollector()
        except ImportError:           # a tree from before the phase loop's collector
            collector = None
        c0, n0 = 0.0, 0
        unsaved = None
        for k in range(WARM + phases):
            if k == WARM:
                c0, n0 = cpu(), collections()
            phase = Phase(k, spec, "null", "", k, nodes * slots, "spread", "core", {}, "p")
            if collector is not None:
                collector.pause(1e-3)
            try:
                if unsaved is not None:     # the previous phase, committed once this one's go
                    unsaved_phase, unsaved_done = unsaved
                    store.write_phase("r", unsaved_phase, T, unsaved_done.records,
                                      samples=unsaved_done.samples, go_ns=T - 1_000_000)
                    if collector is not None:
                        collector.unfreeze()
                done = collect("r", phase, nodelist, work, T, engine.results(),
                               go_ns=T - 1_000_000)
                if collector is not None:
                    collector.freeze()
            finally:
                if collector is not None:
                    collector.resume()
            flag_stalls(done.records)
            unsaved = (phase, done)
        spent, ran = cpu() - c0, collections() - n0
        store.close()
    finally:
        shutil.rmtree(where, ignore_errors=True)
    print(json.dumps({"us_per_record": spent / phases / (nodes * slots) * 1e6,
                      "ms_per_phase": spent / phases * 1e3, "collections": ran}))


if __name__ == "__main__":
    main()
