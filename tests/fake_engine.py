"""The suite's one fake engine: nodes that run nothing and answer every phase at once, in their
own clocks, recording what crossed (the tests of the coordinator, the store and the protocol's
clock conversions all drive this one, subclassing it where a test needs a node to misbehave)."""
from __future__ import annotations

from typing import Callable

from manybench.engines.base import Engine, EngineConfig, Node
from manybench.inventory.topology import topology
from manybench.kernels import Result


class FakeEngine(Engine):
    """nodes: by default this machine as one node "a" of 2 slots. What crossed: `index` and
    `work` (the last phase prepared), `sent` (each node's T0, in its own clock), `t0` (the first
    node's), `peers` (given to _connect). answer(engine): each node's results (by default every
    assigned slot armed 1 ns before its node's T0, started 1 ns after it, ended 1 ns later);
    endpoints(work): what the slots publish at prepare (nothing by default); interrupt_at: Ctrl-C
    while that phase runs; warnings: what take_warnings() gives at the end (as a Dask node that
    did not confirm the run's end)."""

    def __init__(self, outdir: str = "", interrupt_at: int | None = None,
                 warnings: list | None = None, *, nodes: list[Node] | None = None,
                 answer: Callable[[FakeEngine], dict] | None = None,
                 endpoints: Callable[[dict], dict] | None = None,
                 config: EngineConfig = EngineConfig()) -> None:
        super().__init__(config)
        self.outdir, self.interrupt_at = outdir, interrupt_at
        self.nodes = nodes if nodes is not None else [Node("a", 2, topology())]
        self.answer, self.endpoints = answer, endpoints
        self.index, self.work, self.t0 = -1, {}, 0
        self.sent: dict[str, int] = {}
        self.peers: dict | None = None
        self.ending = list(warnings or [])

    def start(self, *a, **k):
        return self.nodes

    def _prepare(self, phase, work, tick):
        self.index, self.work = phase.index, work
        return self.endpoints(work) if self.endpoints else {}

    def _connect(self, peers, tick):
        self.peers = peers

    def _go(self, t0_by_node):
        self.sent = t0_by_node
        self.t0 = t0_by_node[self.nodes[0].name]

    def poll(self, timeout):
        if self.index == self.interrupt_at:
            raise KeyboardInterrupt
        return True

    def _results(self):
        if self.answer:
            return self.answer(self)
        return {n: {a.place.slot: Result(start_ns=self.sent[n] + 1, end_ns=self.sent[n] + 2,
                                         armed_ns=self.sent[n] - 1) for a in assigned}
                for n, assigned in self.work.items()}

    def _snapshot(self, dirs, programs):
        return {n.name: {} for n in self.nodes}

    def take_warnings(self):
        out, self.ending = self.ending, []
        return out + super().take_warnings()

    def close(self):
        pass

    def abort(self):
        pass
