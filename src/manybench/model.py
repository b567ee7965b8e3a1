"""The data a run passes along: a validated Plan, its Tasks and Variants, and expanded Phases.

The plan package builds a Plan from TOML and expands it into Phases (plan/expand.py);
everything downstream (placement, coordinator, agent, slot, store) reads only these. What one
slot measured is a Record (record.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any



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
    label: str = ""                   # short human name: task [variant] k=v ... workers=N
