"""The interface every engine gives the coordinator, and the one place clocks are converted.

The coordinator speaks only its own timebase (timebase.py: the wall clock at the run's start,
advanced by the monotonic clock): it hands an engine T0 in its clock and gets results whose
stamps are in its clock. Each node's clock differs by `offset_ns` (Cristian against the wall
clock, measured by the engine, plus timebase.stepped_ns()); `go` shifts T0 into each
node's clock and `results` shifts the stamps back, here, for every engine. An engine
implements the node-facing halves (`_prepare`, `_connect`, `_go`, `_results`), which speak
the node's clock.

Results come back as arrays per node (node/arrays.SlotResults): their stamps are moved a
column at a time (to_coordinator), once per phase.

The coordinator's Phase becomes what crosses to nodes here too (wire_phase), and here is
decided, for every engine, whether a phase's prepare may travel with its go (with_go).
"""
from __future__ import annotations

import dataclasses
import typing
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable

from ..gc_pause import gc_paused
from ..kernels import kernel
from ..model import Phase, Plan
from ..node.arrays import STAMPS, SlotResults
from ..node.protocol import Assignment, CommandsDone, RunCommands, WirePhase, WireTask
from ..results.contract import WarningKind
from ..node.wire_types import Cpu, Result, TelemetryRow

try:     # plan checks and dry runs work without the C extension (kernels/native.py)
    from .._native import shift_stamps as _shift_stamps
except ImportError:
    _shift_stamps = None

Work = dict[str, list[Assignment]]          # node -> its slots' assignments in one phase
Results = dict[str, SlotResults]            # node -> its slots' results, as arrays


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
    inventory: dict = field(default_factory=dict)   # environment.collect(), on the node


def wire_phase(phase: Phase) -> WirePhase:
    """What a node needs of a phase (node/wire_types.WirePhase), copied out of the model: the
    only place a Phase becomes what crosses to nodes."""
    return _copy(WirePhase, _PHASE_COPY, phase)


def _copy(wire: type, copiers: tuple, model: object) -> object:
    out = object.__new__(wire)     # frozen: its __init__ would set each field by a call
    out.__dict__.update({n: getattr(model, n) if c is None else c(getattr(model, n))
                         for n, c in copiers})
    return out


def _copier(hint: object) -> Callable | None:
    """How a model field's value becomes its wire copy's (wire_types._wire_type): a copy the
    model's later changes do not reach; None: the value itself (immutable)."""
    args = typing.get_args(hint)
    if type(None) in args:
        inner = _copier(next(a for a in args if a is not type(None)))
        return None if inner is None else (lambda v: None if v is None else inner(v))
    origin = typing.get_origin(hint) or hint
    if origin is tuple:
        return (lambda v: tuple(map(wire_phase, v))) if args[0] is WirePhase else tuple
    if origin is dict:
        return dict
    if hint is WireTask:
        return lambda task: _copy(WireTask, _TASK_COPY, task)
    return None


_TASK_COPY = tuple((n, _copier(h)) for n, h in typing.get_type_hints(WireTask).items())
_PHASE_COPY = tuple((n, _copier(h)) for n, h in typing.get_type_hints(WirePhase).items())


def with_go(phase: Phase | WirePhase) -> bool:
    """Whether a phase's prepare may travel with its go (one round trip to each slot, not
    two): only when its kernel's prepare touches nothing (trait light_prepare) and no wrap
    must start first (a wrap's launcher, a container, starts in prepare: before T0)."""
    return kernel(phase.kernel).light_prepare and phase.wrap is None


def to_node(t_ns: int, node: Node) -> int:
    """An instant in the coordinator's clock as the node's clock reads it."""
    return t_ns + node.offset_ns


def _shifted(stamps: list[int], off: int) -> list[int]:
    """[t - off if t else 0 for t in stamps], in C where the extension is built and every
    stamp is an int of 64 bits (a node's 64 slots' three stamps: ~3x faster)."""
    try:
        got = None if _shift_stamps is None else _shift_stamps(stamps, off)
    except OverflowError:        # an offset past 64 bits: the Python's arithmetic
        got = None
    return [t - off if t else 0 for t in stamps] if got is None else got


def to_coordinator(res: Result | SlotResults, node: Node) -> Result | SlotResults:
    """Results whose stamps the node took (one Result, or a node's arrays), with the stamps
    in the coordinator's clock; a stamp never taken (0: a slot that failed first) stays 0."""
    off = node.offset_ns
    if not off:
        return res
    if isinstance(res, SlotResults):
        moved: dict = {f: _shifted(getattr(res, f), off) for f in STAMPS}
        if res.samples:     # progress samples (node/sampler.py), stamped there too
            moved["samples"] = {i: [[t - off for t in ts], done]
                                for i, (ts, done) in res.samples.items()}
        return res.moved(**moved)
    moved = {f: getattr(res, f) - off for f in STAMPS if getattr(res, f)}
    if res.samples:
        moved["samples"] = [(t - off, done) for t, done in res.samples]
    return dataclasses.replace(res, **moved)


def commands_to_coordinator(done: CommandsDone, node: Node) -> CommandsDone:
    """A node's setup or teardown with its stamps (commands, snapshots) in the coordinator's
    clock."""
    off = node.offset_ns
    if not off:
        return done
    outs = [dataclasses.replace(o, started_ns=o.started_ns - off, ended_ns=o.ended_ns - off)
            for o in done.outputs]
    return CommandsDone(outs, snapshot_to_coordinator(done.before, node),
                        snapshot_to_coordinator(done.after, node))


def snapshot_to_coordinator(data: dict, node: Node) -> dict:
    """A snapshot (provenance.snapshot) with taken_ns in the coordinator's clock."""
    if not node.offset_ns or not isinstance(data.get("taken_ns"), int):
        return data
    return {**data, "taken_ns": data["taken_ns"] - node.offset_ns}


@dataclass(frozen=True)
class EngineConfig:
    """What an engine is given for a run, in its constructor; checked there."""
    telemetry_s: float = 0.0      # interval of each node's telemetry; 0: none
    noise_s: float = 0.0          # each node's noise floor measurement (inventory/noise.py) at
                                  # start, before its slots run; 0: none
    per_relay: int | None = None  # on a cluster, nodes per relay (engines/relays.py): None
                                  # automatic, 0 none

    def __post_init__(self) -> None:
        for name in ("telemetry_s", "noise_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"EngineConfig.{name}: seconds, 0 or more, not {value!r}")
        if self.per_relay is not None and (isinstance(self.per_relay, bool) or not
                                           isinstance(self.per_relay, int) or self.per_relay < 0):
            raise ValueError(f"EngineConfig.per_relay: None, 0 or a node count, not "
                             f"{self.per_relay!r}")

    @classmethod
    def of(cls, plan: Plan, per_relay: int | None = None) -> EngineConfig:
        """A run of this plan: its telemetry and noise floor (--fanout: per_relay)."""
        return cls(plan.telemetry, plan.noise, per_relay)


class Engine(ABC):
    def __init__(self, config: EngineConfig = EngineConfig()) -> None:
        self.config = config
        self.nodes: list[Node] = []
        self.dispatch_hint_ns = 0   # a round trip to every slot, measured at start: the first lead
        self.t0_ns = 0              # the phase under way's T0, coordinator's clock
        self.notices: list[str] = []    # what nodes said of their slots (take_notices)
        self.own_warnings: list[tuple[WarningKind, str, str]] = []   # its own warnings (add_warning)
        # what the coordinator waited on each node in the phase under way (run/gaps.py):
        # seconds in its prepare and connect rounds, and when its results came in
        # (coordinator's clock)
        self.waited: dict[str, float] = {}
        self.answered: dict[str, int] = {}

    @abstractmethod
    def start(self, run: str, slots: int | None, default_dir: str, keep: bool,
              largest: int = 1) -> list[Node]:
        """Bring up one agent per node with its slot pool. slots: fixed per node (--slots or
        the plan's), else the engine's default; largest: the plan's largest worker count;
        keep: leave scratch at the end."""

    def sync_clocks(self) -> None:
        """Re-estimate node clock offsets (between sweep points, and after the coordinator's
        wall clock stepped: run/clock_steps.py)."""

    def lost_nodes(self) -> dict[str, str]:
        """Nodes lost so far, with why."""
        return {}

    def take_notices(self) -> list[str]:
        """What nodes said of their slots since last asked (a slot replaced), for warnings."""
        out, self.notices = self.notices, []
        return out

    def add_warning(self, kind: WarningKind, node: str, text: str) -> None:
        """A warning of the engine's own, outside any record (run/warnings.py's kinds)."""
        self.own_warnings.append((kind, node, text))

    def take_warnings(self) -> list[tuple[WarningKind, str, str]]:
        """(kind, node, text) told since last asked: a node that did not confirm the run's
        end, say. Asked after close() and abort() too."""
        out, self.own_warnings = self.own_warnings, []
        return out

    # -- one phase, in the coordinator's terms -------------------------------------------------
    def prepare(self, phase: Phase, work: Work, tick: Callable[[], None]) -> None:
        """Prepare the phase on every node; for kernels whose slots talk to each other, hand
        each slot its peers. Slots that fail here report it in results()."""
        self.waited, self.answered = {}, {}
        published = self._prepare(wire_phase(phase), work, tick)
        if kernel(phase.kernel).wants_peers(phase.params):   # a group: none
            host = {n.name: n.host for n in self.nodes}
            peers = {a.rank: {"host": host[node], **published[node][a.place.slot]}
                     for node, assigned in work.items() for a in assigned
                     if a.place.slot in published.get(node, {})}
            self._connect(peers, tick)

    def go(self, t0_ns: int) -> None:
        """Release the prepared slots at T0, an instant in the coordinator's clock."""
        self.t0_ns = t0_ns
        self._go({n.name: to_node(t0_ns, n) for n in self.nodes})

    @gc_paused
    def results(self) -> Results:
        """Per node, its slots' results as arrays, stamps in the coordinator's clock."""
        by_name = {n.name: n for n in self.nodes}
        return {name: to_coordinator(got if isinstance(got, SlotResults)
                                     else SlotResults.of(got), by_name[name])
                for name, got in self._results().items()}

    def waits(self) -> tuple[dict[str, float], dict[str, int]]:
        """(waited, answered) of the phase under way: per node, the seconds its prepare and
        connect rounds took, and when its results came in (the coordinator's clock); a node
        the engine did not time is absent."""
        return self.waited, self.answered

    def telemetry(self) -> list[TelemetryRow]:
        """Every node's telemetry rows taken since the last call, t_ns in the coordinator's
        clock."""
        by_name = {n.name: n for n in self.nodes}
        return [dataclasses.replace(t, t_ns=t.t_ns - by_name[name].offset_ns)
                for name, rows in self._telemetry().items() if name in by_name for t in rows]

    def _telemetry(self) -> dict[str, list[TelemetryRow]]:
        """Per node, its telemetry rows taken since the last call (node clock)."""
        return {}

    # -- between phases: a variant's setup and teardown, provenance ---------------------------
    def run_commands(self, req: RunCommands) -> dict[str, CommandsDone]:
        """Run req's commands on every live node (all nodes at once, each node's commands in
        order), each node snapshotted before and after; per node, stamps in the
        coordinator's clock. A node that does not answer is lost (lost_nodes) and absent."""
        by_name = {n.name: n for n in self.nodes}
        return {name: commands_to_coordinator(done, by_name[name])
                for name, done in self._run_commands(req).items()}

    def snapshot(self, dirs: list[str] | dict[str, str], programs: list[str]
                 ) -> dict[str, dict]:
        """Every live node's provenance snapshot (inventory/provenance.snapshot: dirs are
        paths or {name: path}), per node, taken_ns in the coordinator's clock. A node that
        does not answer is lost and absent."""
        by_name = {n.name: n for n in self.nodes}
        return {name: snapshot_to_coordinator(data, by_name[name])
                for name, data in self._snapshot(dirs, programs).items()}

    def _run_commands(self, req: RunCommands) -> dict[str, CommandsDone]:
        """Per node, what node/commands.run_commands returned there (node clock)."""
        raise NotImplementedError(f"{type(self).__name__} cannot run commands on its nodes")

    def _snapshot(self, dirs: list[str] | dict[str, str], programs: list[str]
                  ) -> dict[str, dict]:
        """Per node, provenance.snapshot(dirs, programs) taken there (node clock)."""
        raise NotImplementedError(f"{type(self).__name__} cannot snapshot its nodes")

    # -- the node-facing halves, in each node's clock ------------------------------------------
    @abstractmethod
    def _prepare(self, phase: WirePhase, work: Work, tick: Callable[[], None]
                 ) -> dict[str, dict[int, dict]]:
        """Prepare on every node, or keep the phase for the go when with_go(phase); what
        each prepared slot published, per node."""

    def _connect(self, peers: dict[int, dict], tick: Callable[[], None]) -> None:
        """Give every prepared slot its peers ({rank: published info + host})."""

    @abstractmethod
    def _go(self, t0_by_node: dict[str, int]) -> None:
        """Release the prepared slots at T0, given per node in that node's clock."""

    @abstractmethod
    def poll(self, timeout: float) -> bool:
        """True once every slot of the phase has a result."""

    @abstractmethod
    def _results(self) -> dict[str, SlotResults | dict[int, Result]]:
        """Per node, every slot of the phase that has a result (arrays, or by slot), stamps
        as taken."""

    @abstractmethod
    def close(self) -> None:
        """End the run: stop slots, remove scratch unless the run keeps it."""

    @abstractmethod
    def abort(self) -> None:
        """Stop everything now (Ctrl-C, fatal error)."""
