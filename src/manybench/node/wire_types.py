"""The data the wire's messages carry, owned here (node/protocol.py re-exports them): what a
slot measured (Result), where and as whom it runs (SlotContext), a node's cpus (Cpu) and its
telemetry (TelemetryRow), and the typed maps messages hold. Other packages import them from
here: a change to one is a change to the wire, which node/wire_pins.py pins to
PROTOCOL_VERSION (node/fingerprint.py reads these fields, nested).

A map with a known shape is a TypedDict: a plain dict at run time, so the codec carries it as
it did (msgpack's map, no per-object cost), its keys and their types declared. A map whose
keys are not the protocol's (a node's inventory, a snapshot, a command task's metrics) is
`Open` data, named as such: any depth of None, bool, int, float, str, bytes, lists and maps.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from ..model import Phase, Resources, TaskSpec  # noqa: F401  (Resources: named by a field type)
from ..record_table import RESULT, layer_dataclass

# open data: values of any plain shape, keys chosen by what collects them (the fingerprint
# names it so)
OPEN = "open"
Open = Annotated[Any, OPEN]


# -- a node's cpus and its telemetry -------------------------------------------------------------
@dataclass(frozen=True)
class Cpu:
    """A cpu as slots see it (inventory/topology.py reads them from sysfs)."""
    id: int
    core: int      # physical core id within its package
    package: int
    numa: int


@dataclass
class TelemetryRow:
    """One node over one sampling interval ending at `t_ns` (coordinator clock), as the node
    sends it (node/telemetry.py) and results.db's telemetry table stores it.

    Rates are averages over the interval; memory figures are levels at its end. `phase_id`
    is the phase running on the node during the interval, or None between phases.
    """
    run: str
    node: str
    t_ns: int
    interval_s: float
    phase_id: int | None
    cpu_user_pct: float
    cpu_system_pct: float
    cpu_iowait_pct: float
    mem_used_bytes: int
    mem_cached_bytes: int
    disk_read_bps: float
    disk_write_bps: float
    disk_busy_pct: float        # busiest disk's busy time share over the interval
    net_rx_bps: float
    net_tx_bps: float


class CpuNoise(TypedDict, total=False):
    """One cpu's noise probe (kernels/native/bind_probe.c noise_floor)."""
    cpu: int
    reads: int
    gap_max_ns: int
    gaps_10us: int
    gaps_100us: int
    gaps_1ms: int
    lost_ns: int
    wakes: int
    wakes_late: int
    wake_p50_ns: int
    wake_p99_ns: int
    wake_max_ns: int
    pin_errno: int


class NoiseReading(TypedDict):
    """A node's noise floor (inventory/noise.summarize)."""
    seconds: float
    cpus: int
    method: str
    stall_ns: int
    gaps_100us: int
    gaps_1ms: int
    lost_share: float
    wake_p50_ns: int
    wake_p99_ns: int
    wake_max_ns: int
    per_cpu: list[CpuNoise]


Inventory = dict[str, Open]    # inventory.environment.collect() on the node, and what it adds
Snapshot = dict[str, Open]     # inventory/provenance.snapshot(): a node's provenance at a moment


# -- what slots publish to their peers before T0 --------------------------------------------------
class Published(TypedDict, total=False):
    """What a slot's kernel publishes for its peers (Kernel.publish); a peer's also holds
    "host", where its node is reached (engines/base.py adds it)."""
    host: str
    port: int           # kernels/net.py: a server's listening port
    role: str
    path: str           # kernels/io_ior.py: the file a rank wrote
    group_port: int     # kernels/peers.py: rank 0's listener
    node: str           # kernels/mpi_job.py: a parallel task's rank
    cpus: str
    abort_port: int


# -- what a slot measured ----------------------------------------------------------------------
Metrics = dict[str, float | str]    # name -> value; "x.unit" -> x's unit (kernels/figures.py)
Hist = dict[int, int]               # latency bucket -> count (kernels/hist.py)
Extra = dict[str, Open]             # stdout/stderr tails, facts (Kernel.facts), rank, ...


@layer_dataclass(RESULT, frozen=True)
class Result:
    """What a timed run measured; the slot turns it into a record. Built whole, once, by
    keyword: a kernel makes its metrics and extra first; a later step makes a new one
    (dataclasses.replace). Its fields, each with its meaning and default, are the record
    table's `result` layer (record_table.py)."""


# -- what a node gets of a phase -----------------------------------------------------------------
# A phase crosses as a WirePhase: frozen plain data, only what a node reads of the coordinator's
# Phase (model.py), made from it: each field named here is Phase's (its type and default), a
# list become a tuple, a TaskSpec a WireTask, a Phase a WirePhase. No field is written twice.
TASK_FIELDS = ("name", "command", "shell", "timeout", "metrics", "parse", "env", "launcher",
               "launcher_args", "startup_timeout")
PHASE_FIELDS = ("index", "task", "kernel", "variant", "rep", "workers", "params", "env", "wrap",
                "vars", "resources", "members", "sample")


def _wire_type(hint: Any) -> Any:
    """A model field's type as its wire copy's: lists as tuples, model objects as theirs."""
    if hint is TaskSpec:
        return "WireTask"
    if hint is Phase:
        return "WirePhase"
    if hint is Any:
        return Open
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        return tuple[_wire_type(args[0]), ...]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_wire_type(a) for a in args)]
    if origin is not None and args:
        return origin[tuple(_wire_type(a) for a in args)]
    return hint


def _wire_default(f: dataclasses.Field) -> Any:
    if f.default_factory is list:
        return dataclasses.field(default=())
    if f.default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=f.default_factory)
    return dataclasses.field(default=f.default)


def _wire_copy(model: type, name: str, names: tuple[str, ...], doc: str,
               methods: dict[str, Any] | None = None) -> type:
    """A frozen dataclass of these fields of `model`, in model's order, with their wire
    types (_wire_type) and defaults."""
    hints = typing.get_type_hints(model)
    spec = [(f.name, _wire_type(hints[f.name]), _wire_default(f))
            for f in dataclasses.fields(model) if f.name in names]
    missing = set(names) - {n for n, _, _ in spec}
    if missing:
        raise TypeError(f"{model.__name__} has no field {sorted(missing)[0]}")
    copy = dataclasses.make_dataclass(name, spec, frozen=True,
                                      namespace={"__doc__": doc, **(methods or {})})
    copy.__module__ = __name__
    return copy


WireTask = _wire_copy(TaskSpec, "WireTask", TASK_FIELDS, """What kernels read of a phase's
    task (SlotContext.spec): a command's argv templates and how its output becomes metrics,
    its timeout, a parallel task's launcher (model.TaskSpec's fields of those names).""")
WirePhase = _wire_copy(Phase, "WirePhase", PHASE_FIELDS, """What a node needs of one phase,
    as plain data (engines/base.wire_phase builds it; model.Phase's fields of those names;
    index -1: the agent's own warm-up).""", {"member_of": Phase.member_of})


# -- where and as whom a slot runs one phase ------------------------------------------------------
@dataclass
class SlotContext:
    """Where and as whom a slot runs one phase; handed to prepare()."""
    run: str            # run id
    node: str           # node name
    slot: int           # slot index on this node (stable over the run)
    rank: int           # index among the phase's workers, 0..workers-1
    workers: int        # workers in this phase
    cpu: int            # cpu the slot is pinned to, -1 when not pinned
    scratch: str        # this slot's own directory for this task: {dir}/<run>/<slot>
    shared: str         # the run's directory shared by all slots: {dir}/<run>/shared
    phase: int = 0
    rep: int = 0
    task: str = ""
    variant: str = ""
    env: dict[str, str] = field(default_factory=dict)
    spec: WireTask | None = None   # the phase's task as a node gets it
    kernel: str = ""    # the phase's kernel name
    wrap: list[str] | None = None   # launcher prefix, rendered (a variant's `wrap`): the kernel
                                    # runs inside it (kernels/wrapped.py)
    vars: dict[str, str] = field(default_factory=dict)   # the variant's template values
    settle_ns: int = 0  # rest after the end stamp (slots sharing a core; native set_settle)
    root: str = ""      # the run's scratch root ({dir}/<run>): files below it are reached by
                        # descriptor from it (kernels/scratchfs.py)
    job_key: str = ""   # the run's key for parallel tasks' jobs, derived from its secret by
                        # the agent: each job's socket name, token and abort key derive from
                        # it (kernels/rank_keys.py)
    host: str = ""      # where other nodes' slots reach this node (the engine's Node.host)
