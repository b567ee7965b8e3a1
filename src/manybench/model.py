"""The data a run passes along: a validated Plan, its Tasks and Variants, and expanded Phases.

The plan package builds a Plan from TOML and expands it into Phases (plan/expand.py);
everything downstream (placement, coordinator, agent, slot, store) reads only these. What one
slot measured is a Record (record.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypedDict



@dataclass
class TaskSpec:
    name: str
    kernel: str                       # a kernels.KERNELS name (command tasks: "command")
    params: dict[str, Any]            # raw plan values; a list is a sweep axis
    command: list[str] | None = None  # argv templates ({param}, {node}, {slot}, {scratch}, {run})
    shell: bool = False               # run " ".join(command) through /bin/sh -c
    timeout: float | None = None      # seconds; the whole process group is killed after it
    metrics: dict[str, str] = field(default_factory=dict)  # name -> regex with (?P<value>...)
    parse: str | None = None          # a parsers/ name: the tool's output becomes metrics
    env: dict[str, str] = field(default_factory=dict)
    dir: str | None = None            # scratch base for this task (None: plan default)
    workers: list[int] | None = None  # overrides placement.workers for this task
    order: list[str] | None = None    # overrides placement.order for this task (spread, pack)
    nodes: list[str] | None = None    # only these nodes, in this order (data locality)
    line: int | None = None           # line of its [[task]] header, for messages
    warmup: int | None = None         # warm-up repetitions per point (None: the plan's)
    sample: float | None = None       # s between progress samples (None: the plan's; 0: off)
    # a parallel task (`ranks` in params): its MPI launcher and the plan's extra arguments
    launcher: str | None = None       # "auto" | "mpirun" | "mpiexec" | "srun" | a program
    launcher_args: list[str] = field(default_factory=list)
    startup_timeout: float | None = None   # s, launch to every rank held (None: the default)


Bind = Any   # "none" | "core" | "numa" | {"cpus": [...], "mems": [...]} (plan/binding.py)


class ResourceIds(TypedDict):
    """[placement.resources] NAME: each concurrent slot of a node gets one id in `env`."""
    ids: list[str]
    env: str


# name -> its ids; "scratch" -> {numa node: directory} (plan/binding.resources)
Resources = dict[str, ResourceIds | dict[int, str]]


@dataclass
class Variant:
    """One setup a comparison sets against the others (the plan's [[variant]])."""
    name: str
    set: dict[str, Any] = field(default_factory=dict)   # dotted path -> value, as --set
    env: dict[str, str] = field(default_factory=dict)
    tasks: list[str] | None = None    # the tasks it applies to; None: every task
    bind: Bind | None = None          # cpu and memory binding of its slots (else placement's)
    wrap: list[str] | None = None     # launcher prefix templates: ch-run, apptainer, podman ...
    vars: dict[str, str] = field(default_factory=dict)   # template values for wrap/setup/command
    setup: list[list[str]] = field(default_factory=list)     # commands per node, before its phases
    teardown: list[list[str]] = field(default_factory=list)  # commands per node, after them
    dir: str | None = None            # the directory its tasks work under (else the task's)


GROUP_KERNEL = "group"   # the kernel name a [[concurrent]] group's phases are stored under


@dataclass
class Group:
    """[[concurrent]]: tasks that run in the same phases on disjoint slots from one T0."""
    name: str
    tasks: list[str]


@dataclass
class Plan:
    name: str
    tasks: list[TaskSpec]
    repeat: int = 1
    workers: list[int] = field(default_factory=lambda: [1])
    order: list[str] = field(default_factory=lambda: ["spread"])  # spread | pack; a list sweeps
    pin: list[str] = field(default_factory=lambda: ["core"])       # core | numa | none; likewise
    cpus: list[Any] = field(default_factory=lambda: [1])  # cpus per slot: N or "numa"; a list sweeps
    bind: list[Bind] = field(default_factory=lambda: [None])   # None: pin only, no memory policy
    resources: Resources = field(default_factory=dict)    # [placement.resources]
    baseline: str | None = None       # the variant others are compared with (None: the first)
    reference: dict[str, Any] = field(default_factory=dict)    # [reference]: figure bounds
    groups: list[Group] = field(default_factory=list)          # [[concurrent]]
    slots: int | None = None          # fixed slot count (None: largest worker count)
    scratch: str | None = None        # default `dir` for tasks that need one
    keep: bool = False                # keep scratch files after the run
    variants: list[Variant] = field(default_factory=list)
    on_node_loss: str = "abort"       # abort | continue, when a node is lost mid-run
    clock_tolerance: float | None = None   # s; a node whose clock bound is worse is reported
    cluster: dict = field(default_factory=dict)   # [cluster]: batch system / SSH settings
    peaks: dict[str, float] = field(default_factory=dict)   # [peaks]: metric -> peak value
    source: str = ""                  # the plan's TOML text (stored with the run)
    path: str = ""
    raw: dict = field(default_factory=dict)   # the validated dict, overrides applied
    warmup: int = 0                   # warm-up repetitions per point, before `repeat`
    sample: float = 0.1               # s between progress samples inside phases; 0: off
    telemetry: float = 1.0            # s between node telemetry readings; 0: off
    noise: float = 0.4                # s each node measures its noise floor at start; 0: off
    late_target: float = 0.01         # share of phases allowed a late start (the lead adapts)


@dataclass
class Phase:
    # the fields named in node/wire_types.PHASE_FIELDS cross to nodes as a WirePhase made
    # from these declarations (TaskSpec's in TASK_FIELDS, as a WireTask): changing one is a
    # protocol change (node/wire_pins.py)
    index: int                        # 0.. in run order
    task: TaskSpec
    kernel: str
    variant: str                      # "" when the plan has no variants
    rep: int
    workers: int
    order: str
    pin: str
    params: dict[str, Any]            # one point: scalar values; kernel params parsed (bytes, s)
    point: str                        # stable key of (task, variant, workers, placement, params)
    env: dict[str, str] = field(default_factory=dict)   # task env + variant env
    label: str = ""                   # short human name: task [variant] k=v ... workers=N
    cpus: Any = 1                     # cpus per slot: N, or "numa" (a whole NUMA node)
    bind: Bind | None = None          # cpu + memory binding; None: `pin` alone
    wrap: list[str] | None = None     # launcher prefix templates (the variant's)
    vars: dict[str, str] = field(default_factory=dict)   # the variant's template values
    shown: dict[str, Any] = field(default_factory=dict)  # placement axes the task sweeps
    resources: Resources = field(default_factory=dict)   # [placement.resources], checked
    # a [[concurrent]] group's phase: its tasks' phases, each on its own slots from one T0
    # (ranks first..first+workers-1 in order); empty for a plain phase
    members: list[Phase] = field(default_factory=list)
    warmup: bool = False              # a warm-up repetition (rep < 0): run, stored, not analysed
    sample: float = 0.0               # s between progress samples inside the phase; 0: none

    # Slots get a WirePhase (node/wire_types.py), never a pickled Phase; what still copies or
    # pickles a phase (copy.copy, a process pool) must not make it keep a dict of its own:
    # object's default __getstate__ reads __dict__, which materialises one for the rest of
    # the run (~140 bytes a phase, the whole plan's phases alive). The fields instead.
    def __getstate__(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def member_of(self, rank: int) -> tuple[Phase, int]:
        """The phase a rank of this phase runs and its rank within it."""
        first = 0
        for m in self.members:
            if rank < first + m.workers:
                return m, rank - first
            first += m.workers
        return self, rank

    def record_params(self) -> dict[str, Any]:
        """The params records and stored phases carry: the point's values, then the placement
        axes swept for this task (so swept pin/order/cpus/bind are columns wherever the points
        are shown)."""
        out = {k: v for k, v in self.params.items() if v is not None}
        out.update(self.shown)
        return out

    def placement(self) -> dict[str, Any]:
        """The placement axes of this phase, as records and reports show them."""
        return {"order": self.order, "pin": self.pin, "cpus": self.cpus,
                "bind": bind_text(self.bind)}


def bind_text(bind: Bind | None) -> str:
    """A binding as one short string: "none", "numa", "cpus=0-3 mems=0"; "" for pin alone."""
    if bind is None:
        return ""
    if isinstance(bind, str):
        return bind
    parts = [f"{k}={_ids(bind[k])}" for k in ("cpus", "mems") if bind.get(k) is not None]
    return " ".join(parts)


def _ids(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and isinstance(value[0], list):   # per slot
        return ";".join(_ids(v) for v in value)
    return ",".join(str(v) for v in value)
