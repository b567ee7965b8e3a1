"""The embedded default: one agent for this machine, in the coordinator's process tree."""
from __future__ import annotations

import socket
import time
from typing import Callable

from .. import timebase
from ..build_isa import CpuMismatch
from ..config import timing
from ..inventory import noise
from ..inventory.environment import collect
from ..inventory.topology import topology
from ..model import Plan
from ..node.agent import Agent
from ..node.protocol import (CommandsDone, Connect, Prepare, ProtocolMismatch, RunCommands,
                             Start, WirePhase)
from ..security import auth
from .base import Engine, EngineConfig, EngineError, Node, Results, Work, with_go

LOOPBACK = "127.0.0.1"    # this machine's only node: its slots reach each other here


def make(plan: Plan, where: object, config: EngineConfig) -> LocalEngine:
    """The engine registry's maker (engines/__init__.py): this machine."""
    return LocalEngine(config)


class LocalEngine(Engine):
    def __init__(self, config: EngineConfig = EngineConfig()) -> None:
        super().__init__(config)
        self.agent: Agent | None = None
        self.light: Prepare | None = None    # the phase under way, when its prepare is light

    def start(self, run: str, slots: int | None, default_dir: str, keep: bool,
              largest: int = 1) -> list[Node]:
        n = slots or largest     # this machine: as many slots as the largest phase needs
        node = socket.gethostname().split(".")[0]
        try:      # the same check as a Dask node's agent, before anything else
            # the run's secret: what its slots derive a parallel task's job secrets from
            agent = Agent.of(Start(run, node, n, default_dir, keep, self.config.telemetry_s,
                                   secret=auth.new_secret(), host=LOOPBACK,
                                   kill_grace_s=timing("node.kill_grace")))
        except (ProtocolMismatch, CpuMismatch) as e:
            raise EngineError(f"the local agent: {e}") from None
        cpus = topology()
        inventory = collect()    # before the slots fork: nothing of theirs in the figures
        inventory["noise"] = noise.measure([c.id for c in cpus], self.config.noise_s)
        self.agent = agent
        self.dispatch_hint_ns = self.agent.start()
        self.nodes = [Node(node, n, cpus, host=LOOPBACK, inventory=inventory)]
        self.sync_clocks()
        return self.nodes

    def sync_clocks(self) -> None:
        """This machine's wall clock is the node's: its offset from the coordinator's clock is
        what the wall clock stepped since the run began (timebase.py), 0 until it does."""
        if self.nodes:
            self.nodes[0].offset_ns = timebase.stepped_ns()

    def _prepare(self, phase: WirePhase, work: Work, tick: Callable[[], None]
                 ) -> dict[str, dict[int, dict]]:
        node = self.nodes[0].name
        req = Prepare(phase, work.get(node, []))
        self.light = req if with_go(phase) else None
        if self.light is not None:     # it travels with the go: one round trip, not two
            return {node: {}}
        began = time.monotonic()
        prepared = self.agent.prepare(req, tick)
        self.waited[node] = time.monotonic() - began
        self.notices += prepared.notices
        return {node: prepared.published}

    def _connect(self, peers: dict[int, dict], tick: Callable[[], None]) -> None:
        began = time.monotonic()
        self.agent.connect(Connect(peers), tick)
        node = self.nodes[0].name
        self.waited[node] = self.waited.get(node, 0.0) + time.monotonic() - began

    def _go(self, t0_by_node: dict[str, int]) -> None:
        self.agent.go(t0_by_node[self.nodes[0].name], self.light)

    def poll(self, timeout: float) -> bool:
        done = self.agent.poll(timeout)
        if done:      # when the node's results came in (run/gaps.py)
            self.answered.setdefault(self.nodes[0].name, timebase.now_ns())
        return done

    def _results(self) -> Results:
        self.notices += self.agent.take_notices()   # slots replaced at a light phase's go
        return {self.nodes[0].name: self.agent.results()}

    def _telemetry(self) -> dict[str, list]:
        return {self.nodes[0].name: self.agent.telemetry.drain()} if self.agent else {}

    def _run_commands(self, req: RunCommands) -> dict[str, CommandsDone]:
        if self.agent is None:
            raise RuntimeError("the local engine is not started")
        return {self.nodes[0].name: self.agent.run_commands(req)}

    def _snapshot(self, dirs: list[str] | dict[str, str], programs: list[str]
                  ) -> dict[str, dict]:
        from ..inventory.provenance import snapshot   # noqa: PLC0415 (only runs need it)
        name = self.nodes[0].name if self.nodes else socket.gethostname().split(".")[0]
        return {name: snapshot(dirs, programs)}

    def close(self) -> None:
        if self.agent:
            self.agent.close()

    def abort(self) -> None:
        if self.agent:
            self.agent.abort()
