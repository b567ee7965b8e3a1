"""The embedded default: one agent for this machine, in the coordinator's process tree."""
from __future__ import annotations

import socket
from typing import Callable

from ..agent import Agent
from ..kernels import Result
from ..model import Phase
from ..placement import SlotPlace, topology
from .base import Engine, Node


class LocalEngine(Engine):
    def __init__(self) -> None:
        self.agent: Agent | None = None
        self.nodes: list[Node] = []

    def start(self, run: str, slots: int | None, default_dir: str, keep: bool,
              largest: int = 1) -> list[Node]:
        cpus = topology()
        n = slots or largest     # this machine: as many slots as the largest phase needs
        node = socket.gethostname().split(".")[0]
        self.agent = Agent(node, run, n, default_dir)
        self.dispatch_hint_ns = self.agent.start()
        self.nodes = [Node(node, n, cpus)]
        return self.nodes

    def prepare(self, phase: Phase, work: dict[str, list[tuple[SlotPlace, int]]],
                tick: Callable[[], None]) -> dict[str, dict[int, Result]]:
        node = self.nodes[0].name
        pairs = work.get(node, [])
        self.agent.prepare(phase, [p for p, _ in pairs], [r for _, r in pairs], tick)
        return {node: self.agent.results()}

    def ready_info(self) -> dict[str, dict[int, dict]]:
        return {self.nodes[0].name: self.agent.ready_info()}

    def connect(self, peers: dict[int, dict], tick: Callable[[], None]) -> dict[str, dict[int, Result]]:
        self.agent.connect(peers, tick)
        return {self.nodes[0].name: self.agent.results()}

    def go(self, t0_ns: int) -> None:
        self.agent.go(t0_ns)

    def poll(self, timeout: float) -> bool:
        return self.agent.poll(timeout)

    def results(self) -> dict[str, dict[int, Result]]:
        return {self.nodes[0].name: self.agent.results()}

    def close(self, keep: bool) -> None:
        if self.agent:
            self.agent.close(keep)

    def abort(self, keep: bool) -> None:
        if self.agent:
            self.agent.abort(keep)
