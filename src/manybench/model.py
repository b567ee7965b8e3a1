"""The data a run passes along: a validated Plan, its Tasks and Variants, and expanded Phases.

The plan package builds a Plan from TOML; phases.py expands it into Phases; everything
downstream (placement, coordinator, agent, slot, store) reads only these.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .kernels import KERNELS
from .units import format_duration, format_size


@dataclass
class TaskSpec:
    name: str
    kernel: str                       # a KERNELS name, or "command" for external commands
    params: dict[str, Any]            # raw plan values; a list is a sweep axis
    command: list[str] | None = None  # argv templates ({param}, {node}, {slot}, {scratch}, {run})
    shell: bool = False               # run " ".join(command) through /bin/sh -c
    timeout: float | None = None      # seconds; the whole process group is killed after it
    metrics: dict[str, str] = field(default_factory=dict)  # name -> regex with (?P<value>...)
    parse: str | None = None          # a parsers/ name: the tool's output becomes metrics
    env: dict[str, str] = field(default_factory=dict)
    dir: str | None = None            # scratch base for this task (None: plan default)
    workers: list[int] | None = None  # overrides placement.workers for this task
    nodes: list[str] | None = None    # only these nodes, in this order (data locality)
    line: int | None = None           # line of its [[task]] header, for messages


@dataclass
class Variant:
    name: str
    set: dict[str, Any] = field(default_factory=dict)   # dotted path -> value, as --set
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class Plan:
    name: str
    tasks: list[TaskSpec]
    repeat: int = 1
    workers: list[int] = field(default_factory=lambda: [1])
    order: list[str] = field(default_factory=lambda: ["spread"])  # spread | pack; a list sweeps
    pin: list[str] = field(default_factory=lambda: ["core"])       # core | numa | none; likewise
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


def human_value(kernel: str, name: str, value: Any) -> str:
    """A phase parameter as people write it: sizes as 64KiB, durations as 250.00ms."""
    p = KERNELS[kernel].params.get(name) if kernel in KERNELS else None
    if p is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        if p.kind == "size":
            return format_size(value)
        if p.kind == "duration":
            return format_duration(value)
    return str(value)


@dataclass
class Phase:
    index: int                        # 0.. in run order
    task: TaskSpec
    kernel: str
    variant: str                      # "" when the plan has no variants
    rep: int
    workers: int
    order: str
    pin: str
    params: dict[str, Any]            # one point: scalar values; kernel params parsed (bytes, s)
    point: str                        # stable key of (task, variant, workers, order, pin, params)
    env: dict[str, str] = field(default_factory=dict)   # task env + variant env

    @property
    def label(self) -> str:
        """Short human name for progress lines: task [variant] k=v ... workers=N."""
        kv = " ".join(f"{k}={human_value(self.kernel, k, v)}" for k, v in self.params.items()
                      if k != "dir")
        var = f" [{self.variant}]" if self.variant else ""
        return f"{self.task.name}{var} {kv} workers={self.workers}".replace("  ", " ")
