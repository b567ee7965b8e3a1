"""The interface every engine gives the coordinator: nodes, and one phase in three steps."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable

from ..kernels import Result
from ..model import Phase
from ..placement import Cpu, SlotPlace


class EngineError(Exception):
    """The cluster cannot be reached or started; the message says why (exit code 2)."""


@dataclass
class Node:
    name: str
    slots: int
    cpus: tuple[Cpu, ...]
    offset_ns: int = 0     # node clock minus coordinator clock (Cristian), 0 on this machine
    error_ns: int = 0      # bound on that estimate
    machine: str = ""      # boot id: nodes on one machine (namespaces, containers) share cpus
    host: str = "127.0.0.1"   # where other nodes' slots reach this node's slots


class Engine(ABC):
    nodes: list[Node]
    dispatch_hint_ns: int = 0   # a round trip to every slot, measured at start: the first lead

    @abstractmethod
    def start(self, run: str, slots: int | None, default_dir: str, keep: bool,
              largest: int = 1) -> list[Node]:
        """Bring up one agent per node with its slot pool. slots: fixed per node (--slots or
        the plan's), else the engine's default; largest: the plan's largest worker count;
        keep: leave scratch at the end."""

    def sync_clocks(self) -> None:
        """Re-estimate node clock offsets (between sweep points). Nothing to do locally."""

    def lost_nodes(self) -> dict[str, str]:
        """Nodes lost so far, with why."""
        return {}

    @abstractmethod
    def prepare(self, phase: Phase, work: dict[str, list[tuple[SlotPlace, int]]],
                tick: Callable[[], None]) -> dict[str, dict[int, Result]]:
        """Prepare the phase on every node; returns the slots whose prepare failed."""

    def ready_info(self) -> dict[str, dict[int, dict]]:
        """What each prepared slot published for its peers, per node (net kernels)."""
        return {}

    def connect(self, peers: dict[int, dict], tick: Callable[[], None]) -> dict[str, dict[int, Result]]:
        """Give slots that talk to each other their peers ({rank: published info + host})
        before T0 is chosen; returns the slots that failed so far (prepare or connect)."""
        return {}

    @abstractmethod
    def go(self, t0_ns: int) -> None:
        """Release the prepared slots at T0 (coordinator clock; shifted per node by offset)."""

    @abstractmethod
    def poll(self, timeout: float) -> bool:
        """True once every slot of the phase has a result."""

    @abstractmethod
    def results(self) -> dict[str, dict[int, Result]]:
        """Per node, per slot, in the coordinator's timebase."""

    @abstractmethod
    def close(self, keep: bool) -> None:
        """End the run: stop slots, remove scratch unless keep."""

    @abstractmethod
    def abort(self, keep: bool) -> None:
        """Stop everything now (Ctrl-C, fatal error)."""
