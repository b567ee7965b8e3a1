"""What a built-in kernel is: documented parameters, a prepare step and a timed run.

A kernel runs in a slot process in two steps so that nothing but the timed loop sits
inside the measured window:
  prepare(ctx, params) -> state   before T0: open files, lay out data, clear leftovers
  run(state, t0_ns, spin_ns) -> Result   the C call that waits for T0, stamps, loops, stamps
  cleanup(state)                  after the phase (close fds); optional
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..record_table import RESULT, made
from ..units import parse_duration, parse_size
from .facts import Fact
from .figures import (EVERY_SLOT, FSYNC, GFLOPS, MFLOPS, SLOT, STREAM_RATES, VERSION, Figure,
                      by_name)

# declarations any record may match: what every slot adds, and metrics tools share
SHARED = by_name(EVERY_SLOT + (GFLOPS, MFLOPS, FSYNC, VERSION) + STREAM_RATES)
_EVERY_SLOT = {f.name for f in EVERY_SLOT}


@dataclass(frozen=True)
class Param:
    kind: str
    doc: str
    default: Any = None          # None: optional with no value; REQUIRED: must be given
    choices: tuple = ()
    minimum: float | None = None
    # int: at most this (default INT_MAX, the widest a C int argument takes; docs/plan.md)
    maximum: float | None = None

    def parse(self, value: Any) -> Any:
        """Canonical value (sizes in bytes, durations in seconds); ValueError says why not."""
        k = self.kind
        if k == "size":
            v = parse_size(value)
        elif k == "duration":
            v = parse_duration(value)
        elif k == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"expected an integer, got {value!r}")
            v = value
            top = INT_MAX if self.maximum is None else self.maximum
            if v > top:
                raise ValueError(f"must be at most {top:,}, got {value!r}")
        elif k == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"expected a number, got {value!r}")
            v = float(value)
            if not math.isfinite(v):
                raise ValueError(f"expected a finite number, got {value!r}")
        elif k == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {value!r}")
            return value
        elif k == "choice":
            if value not in self.choices:
                raise ValueError(f"expected one of {', '.join(map(str, self.choices))}; got {value!r}")
            return value
        elif k in ("str", "dir"):
            if not isinstance(value, str):
                raise ValueError(f"expected a string, got {value!r}")
            return value
        else:  # pragma: no cover - a kernel author's mistake
            raise AssertionError(f"unknown parameter kind {k}")
        if self.minimum is not None and v < self.minimum:
            raise ValueError(f"must be at least {self.minimum:g}, got {value!r}")
        return v

    def describe(self) -> str:
        """Kind, default and choices in one short line (for `manybench kernels`)."""
        parts = [self.kind]
        if self.choices:
            parts.append("|".join(map(str, self.choices)))
        if self.default is REQUIRED:
            parts.append("required")
        elif self.default is not None:
            parts.append(f"default {self.default!r}")
        return ", ".join(parts)


INT_MAX = 2**31 - 1  # int parameters' default upper bound
REQUIRED = object()  # sentinel default: the plan must give this parameter


class KernelError(Exception):
    """A failure the user caused or can fix (no O_DIRECT, no space, no permission, ...).

    prepare() raises it with one clear line; the slot records it as the task's error, with
    `extra` as the record's (a launcher's output that says why, for one).
    """

    def __init__(self, message: str = "", extra: dict | None = None) -> None:
        super().__init__(message)
        self.extra = extra or {}


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
    env: dict = field(default_factory=dict)
    spec: Any = None    # the phase's task as a node gets it (node/protocol.WireTask)
    kernel: str = ""    # the phase's kernel name
    wrap: list[str] | None = None   # launcher prefix, rendered (a variant's `wrap`): the kernel
                                    # runs inside it (kernels/wrapped.py)
    vars: dict = field(default_factory=dict)   # the variant's template values
    settle_ns: int = 0  # rest after the end stamp (slots sharing a core; native set_settle)
    root: str = ""      # the run's scratch root ({dir}/<run>): files below it are reached by
                        # descriptor from it (kernels/scratchfs.py)
    job_key: str = ""   # the run's key for parallel tasks' jobs, derived from its secret by
                        # the agent: each job's socket name, token and abort key derive from
                        # it (kernels/rank_keys.py)
    host: str = ""      # where other nodes' slots reach this node (the engine's Node.host)


@made(RESULT, frozen=True)
class Result:
    """What a timed run measured; the slot turns it into a record. Built whole, once, by
    keyword: a kernel makes its metrics and extra first; a later step makes a new one
    (dataclasses.replace). Its fields, each with its meaning and default, are the record
    table's `result` layer (record_table.py)."""


@dataclass(frozen=True)
class Standalone:
    """How a kernel runs as the standalone executable `mbkernel`, inside a variant's `wrap`
    (kernels/wrapped.py): the same checks and values as its prepare, and the same Result."""
    # (ctx, params) -> mbkernel's key=value arguments; KernelError when it cannot run so
    args: Callable[[SlotContext, dict], dict[str, Any]]
    # (the result as the C call's dict, those arguments) -> the Result its plain run makes
    finish: Callable[[dict, dict], Result]


@dataclass(frozen=True)
class Kernel:
    name: str
    doc: str
    params: dict[str, Param]
    prepare: Callable[[SlotContext, dict], Any]
    run: Callable[[Any, int, int], Result]
    cleanup: Callable[[Any], None] | None = None
    # cross-field checks on one expanded point: (params) -> list of (field, message)
    check: Callable[[dict], list[tuple[str, str]]] | None = None
    # checks of one phase's point with its placement, at plan check (--dry-run): (params,
    # workers, cpus each slot may run on when the plan fixes it, else None) -> problems
    check_placement: Callable[[dict, int, int | None], list[tuple[str, str]]] | None = None
    # Kernels whose slots talk to each other (net.*): after prepare, publish(state) gives what
    # peers need (a port, say); before run, connect(state, peers) gets every rank's published
    # info, each with the "host" of its node added by the engine.
    publish: Callable[[Any], dict] | None = None
    connect: Callable[[Any, dict[int, dict]], None] | None = None
    # which phases' slots connect (io.* only with wear_out or reorder); None: every phase
    peers_when: Callable[[dict], bool] | None = None
    # figures across a phase's slots, added to its records (list[record.Record]) in place once
    # they are made, in the coordinator's clock (a parallel task's jobs: kernels/mpi_phase.py)
    finish_phase: Callable[[list], None] | None = None
    # Traits: what the rest of manybench may know about a kernel. Nothing outside kernels/
    # tests a kernel's name; it reads these.
    uses_dir: bool = False       # works under the task's `dir` and needs scratch directories
    light_prepare: bool = False  # prepare touches nothing: prepare and go may travel together
    runs_child: bool = False     # runs a child process: exit statuses, output tails
    takes_wrap: bool = False     # puts a variant's `wrap` into its own command line (a
                                 # parallel task: between the launcher and the program)
    job_wrap: bool = False       # that wrap is one command line for every rank of a job: its
                                 # {scratch} is the run's directory, which holds every rank's
    from_command: bool = False   # built from a task's `command = [...]`, never `kernel = ...`
    sync_only: bool = False      # does no work: a phase's window is the sync overhead
    # The figures it shows (kernels/figures.py): the computed ones it has and the metrics
    # its records carry, each with its unit, label, direction and role; those marked
    # `headline` a report shows first, in this order (none: a command's extracted metrics,
    # else its elapsed time).
    figures: tuple[Figure, ...] = ()
    # The facts that decide its figures (kernels/facts.py): the library, engine or launcher
    # its records name in `extra` or `metrics`, shown beside the figures by every view
    facts: tuple[Fact, ...] = ()
    # whose are the figures its program prints (a command's, a parser's, a shared metric such
    # as gflops): each slot's (SLOT), or a parallel task's job's (JOB: its first rank's
    # record holds them; a phase's figure is their sum over jobs, never split over ranks)
    output_scope: str = SLOT
    standalone: Standalone | None = None   # runs as `mbkernel` too: may run inside a `wrap`
    progress: str = ""           # its C loop counts progress (_native.progress()) in this
                                 # unit, "bytes" | "ops", so slots sample it; "": no samples

    @property
    def headline(self) -> tuple[str, ...]:
        """The names of the figures a report shows first, in order."""
        return tuple(f.name for f in self.figures if f.headline)

    def figure(self, name: str) -> Figure | None:
        """The declaration of one of its figures (or of a metric every slot's record
        carries, or one many kernels and tools' parsers share); None when undeclared."""
        for f in self.figures:
            if f.name == name:
                return f
        f = SHARED.get(name)
        if f is not None and self.output_scope != SLOT and name not in _EVERY_SLOT:
            return replace(f, scope=self.output_scope)   # printed by the program: its scope
        return f

    def metric_figure(self, name: str) -> Figure:
        """The declaration of a metric its records carry; one made for a metric no
        declaration names (a command's own), in the scope of what its program prints."""
        f = self.figure(name)
        return f if f is not None else Figure(name, "", direction="", scope=self.output_scope)

    @property
    def connects(self) -> bool:
        """Its slots may exchange published info and connect to each other before T0."""
        return self.connect is not None

    def wants_peers(self, params: dict) -> bool:
        """Whether the slots of a phase with these params connect to each other."""
        return self.connects and (self.peers_when is None or self.peers_when(params))
