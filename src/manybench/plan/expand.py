"""Expand a validated Plan into the Phases of a run, in run order.

Order: tasks in plan order; within a task its points (swept params outer, then placement
order, pin, cpus and bind, worker counts innermost, as SMTEF walks them); within a point each
repeat, and within a repeat each variant that applies to the task. Variants and repeats
therefore alternate A B A B on the same point, so drift over the run (page cache, thermal,
other users) cannot favour one variant.

Except for variants with setup or teardown commands (a tuned profile, a mount): switching
them phase by phase would run the commands at every phase, so within a task such variants
run one after the other, each over all its points and repeats (the report says so).

The phases are produced as the run goes (Phases): counted without being built, built one at a
time when iterated.
"""
from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..kernels import KERNELS
from ..model import Phase, Plan, TaskSpec, Variant, bind_text
from ..units import format_duration, format_size
from . import variant_plan
from .groups import GROUP_KERNEL
from .observe import task_sample, task_warmup
from .schema import RANKS_ALL
from .tasks import kernel_params, sweep_points
from .variants import applies

@dataclass(frozen=True)
class Point:
    params: dict[str, Any]
    order: str
    pin: str
    cpus: Any
    bind: Any
    workers: int


AXES = ("order", "pin", "cpus", "bind")   # the placement axes a plan may sweep


def task_points(plan: Plan, task: TaskSpec) -> list[Point]:
    """A task's points in run order; params parsed for kernels, as given for commands."""
    workers = task.workers or plan.workers
    kernel = KERNELS[task.kernel]
    tdir = task.dir or plan.scratch
    out: list[Point] = []
    for values in sweep_points(task.params):
        # a command's parameters are its template values, as the plan gives them
        params = dict(values) if kernel.from_command else kernel_params(kernel, values)
        params["dir"] = tdir
        for order, pin, cpus, bind, w in itertools.product(task.order or plan.order, plan.pin,
                                                           plan.cpus, plan.bind, workers):
            # ranks = "workers": one job of them all, however many
            out.append(Point({**params, "ranks": w} if params.get("ranks") == RANKS_ALL
                             else params, order, pin, cpus, bind, w))
    return out


def human_value(kernel: str, name: str, value: Any) -> str:
    """A phase parameter as people write it: sizes as 64KiB, durations as 250.00ms."""
    p = KERNELS[kernel].params.get(name) if kernel in KERNELS else None
    if p is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        if p.kind == "size":
            return format_size(value)
        if p.kind == "duration":
            return format_duration(value)
    return str(value)


def label(task: str, kernel: str, variant: str, workers: int, params: dict[str, Any]) -> str:
    """Short human name for progress lines: task [variant] k=v ... workers=N."""
    kv = " ".join(f"{k}={human_value(kernel, k, v)}" for k, v in params.items() if k != "dir")
    var = f" [{variant}]" if variant else ""
    return f"{task}{var} {kv} workers={workers}".replace("  ", " ")


def point_key(task: str, variant: str, workers: int, order: str, pin: str,
              params: dict[str, Any], cpus: Any = 1, bind: Any = None, pair: int | None = None
              ) -> str:
    """Stable key of a point: same point, same string, whatever the rep or run. `pair`: the
    point's position in its task, the same for every variant's phase there (a variant may
    change params, so comparisons match on (task, pair), not on params)."""
    key: dict[str, Any] = {"task": task, "variant": variant, "workers": workers,
                           "order": order, "pin": pin, "params": params}
    if cpus != 1:
        key["cpus"] = cpus
    if bind is not None:
        key["bind"] = bind
    if pair is not None:
        key["pair"] = pair
    return json.dumps(key, sort_keys=True, default=str)


@dataclass
class _Unit:
    """A task (or a [[concurrent]] group at its first task) with its points per variant."""
    unit: list[int]                 # task indexes
    mine: list[tuple]               # (variant or None, the plan as that variant sees it)
    points: list[list[tuple]]       # per entry of mine: the unit's points
    shown: list[tuple[str, ...]]    # per member: the placement axes it sweeps
    blocks: list[list[tuple]]       # variants run together (setups: one block each)
    reps: range                     # warm-up reps (-N..-1), then 0..repeat-1


class Phases(Sequence[Phase]):
    """Every phase of the run in run order, indexed 0.., produced as they are asked for.

    Only the points are built up front (a few per swept value, not per repeat), so len() is
    counted without building a phase, iterating yields them one at a time (a 200,000-phase
    plan starts at once and its memory stays flat), and points() gives one phase per distinct
    point for the checks that look at placement or parameters. Indexing counts from the start
    but builds only the phase asked for.
    """

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        # Each variant sees the plan with its `set` applied; its points line up with the other
        # variants' by position (a variant usually changes a value, not the number of points).
        views = [(v, variant_plan(plan, v)) for v in plan.variants]
        self._units: list[_Unit] = []
        for unit in _units(plan):
            first = unit[0]
            mine = [(v, vp) for v, vp in views if applies(v, plan.tasks[first].name)] \
                or [(None, plan)]
            points = [_unit_points(vp, unit) for _, vp in mine]
            shown = [_swept([[p[k] for p in pts] for pts in points], mine)
                     for k in range(len(unit))]
            blocks = [mine] if not any(v and (v.setup or v.teardown) for v, _ in mine) \
                else [[m] for m in mine]    # variants with setup run one after the other
            # warm-up repetitions first, numbered -N..-1: run and stored, not analysed
            reps = range(-task_warmup(plan.warmup, plan.tasks[first].warmup), plan.repeat)
            self._units.append(_Unit(unit, mine, points, shown, blocks, reps))
        self._count = sum(len(u.reps) * len(u.points[u.mine.index(m)])
                          for u in self._units for block in u.blocks for m in block)

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[Phase]:
        return self._walk(every_rep=True)

    def points(self) -> Iterator[Phase]:
        """One phase per distinct point (its first repetition), with its run-order index."""
        return self._walk(every_rep=False)

    def __getitem__(self, i):   # type: ignore[override]
        if isinstance(i, slice):
            return list(itertools.islice(self, *i.indices(len(self))))
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        return next(self._walk(every_rep=True, start=i % n))

    def _walk(self, every_rep: bool, start: int = 0) -> Iterator[Phase]:
        """The phases from index `start` on; those before it are counted, not built."""
        plan, index = self.plan, 0
        for u in self._units:
            for block in u.blocks:
                for i in range(max(map(len, u.points))):
                    for rep in u.reps:
                        for v, vp in block:
                            pts = u.points[u.mine.index((v, vp))]
                            if i >= len(pts):
                                continue
                            if index >= start and (every_rep or rep == u.reps.start):
                                parts = [_phase(index, v, vp.tasks[t], pts[i][k], rep, i,
                                                u.shown[k], vp) for k, t in enumerate(u.unit)]
                                yield (parts[0] if len(u.unit) == 1 else
                                       _group_phase(_group_name(plan, u.unit[0]), parts, i))
                            index += 1


def expand(plan: Plan) -> Phases:
    """Every phase of the run, indexed 0.. in run order (lazily: Phases)."""
    return Phases(plan)


def distinct(phases: Iterable[Phase]) -> Iterable[Phase]:
    """One phase per distinct point when `phases` can say (Phases, or a Remaining of it),
    else every phase: for checks that only look at a point's placement and parameters."""
    points = getattr(phases, "points", None)
    return points() if callable(points) else phases


class Remaining(Sequence[Phase]):
    """The phases of `phases` whose index is not in `done` (run --resume), still lazy."""

    def __init__(self, phases: Phases, done: Iterable[int]) -> None:
        self.phases = phases
        self.done = frozenset(i for i in done if 0 <= i < len(phases))

    def __len__(self) -> int:
        return len(self.phases) - len(self.done)

    def __iter__(self) -> Iterator[Phase]:
        return (p for p in self.phases if p.index not in self.done)

    def points(self) -> Iterator[Phase]:
        return self.phases.points()

    def __getitem__(self, i):   # type: ignore[override]
        if isinstance(i, slice):
            return list(itertools.islice(self, *i.indices(len(self))))
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        return next(itertools.islice(self, i % n, None))


def _units(plan: Plan) -> list[list[int]]:
    """Task indexes in run order: one per plain task, a group's members together where the
    first of them stands."""
    names = [t.name for t in plan.tasks]
    member = {t: g for g in plan.groups for t in g.tasks}
    out: list[list[int]] = []
    for i, name in enumerate(names):
        g = member.get(name)
        if g is None:
            out.append([i])
        elif name == next(t for t in names if t in g.tasks):
            out.append([names.index(t) for t in g.tasks])
    return out


def _group_name(plan: Plan, first: int) -> str:
    name = plan.tasks[first].name
    return next(g.name for g in plan.groups if name in g.tasks)


def _unit_points(vp: Plan, unit: list[int]) -> list[tuple[Point, ...]]:
    """A unit's points: each a point of every member, paired by position (a member with one
    point runs it beside every point of the others)."""
    per = [task_points(vp, vp.tasks[t]) for t in unit]
    n = max(map(len, per))
    return [tuple(pts[i] if len(pts) > 1 else pts[0] for pts in per) for i in range(n)]


def _group_phase(name: str, parts: list[Phase], pair: int) -> Phase:
    """One phase running every member's phase on its own slots from one T0."""
    lead = parts[0]
    timeouts = [p.task.timeout for p in parts if p.task.timeout is not None]
    task = TaskSpec(name=name, kernel=GROUP_KERNEL, params={},
                    timeout=max(timeouts) if timeouts else None, nodes=lead.task.nodes)
    params = {f"{p.task.name}.{k}": v for p in parts for k, v in p.params.items()
              if k != "dir" and v is not None}
    workers = sum(p.workers for p in parts)
    ph = Phase(index=lead.index, task=task, kernel=GROUP_KERNEL, variant=lead.variant,
               rep=lead.rep, workers=workers, order=lead.order, pin=lead.pin, params=params,
               point=point_key(name, lead.variant, workers, lead.order, lead.pin, params,
                               lead.cpus, lead.bind, pair),
               label=f"{name}{f' [{lead.variant}]' if lead.variant else ''}: " + " + ".join(
                   f"{p.task.name} x{p.workers}" for p in parts),
               cpus=lead.cpus, bind=lead.bind, resources=lead.resources, members=parts)
    ph.shown = dict(lead.shown)
    ph.warmup = lead.warmup
    return ph


def _phase(index: int, v: Variant | None, task: TaskSpec, p: Point, rep: int, pair: int,
           shown: tuple[str, ...], vp: Plan) -> Phase:
    vname = v.name if v else ""
    bind = v.bind if v is not None and v.bind is not None else p.bind
    ph = Phase(index=index, task=task, kernel=task.kernel, variant=vname, rep=rep,
               workers=p.workers, order=p.order, pin=p.pin, params=dict(p.params),
               point=point_key(task.name, vname, p.workers, p.order, p.pin, p.params, p.cpus,
                               bind, pair),
               env={**task.env, **(v.env if v else {})},
               label=label(task.name, task.kernel, vname, p.workers, p.params),
               cpus=p.cpus, bind=bind, wrap=v.wrap if v else None,
               vars=dict(v.vars) if v else {}, resources=vp.resources)
    ph.shown = {a: ph.placement()[a] for a in shown}
    ph.warmup, ph.sample = rep < 0, task_sample(vp.sample, task.sample)
    return ph


def _swept(points: list[list[Point]], mine: list) -> tuple[str, ...]:
    """The placement axes whose value differs between a task's phases."""
    values: dict[str, set] = {a: set() for a in AXES}
    for (v, _), pts in zip(mine, points):
        for p in pts:
            bind = v.bind if v is not None and v.bind is not None else p.bind
            for a, x in zip(AXES, (p.order, p.pin, p.cpus, bind)):
                values[a].add(json.dumps(x, sort_keys=True, default=str))
    return tuple(a for a in AXES if len(values[a]) > 1)


def describe(phases: list[Phase]) -> str:
    """One aligned line per phase, for --dry-run."""
    rows = []
    for ph in phases:
        kv = " ".join(f"{k}={human_value(ph.kernel, k, v)}" for k, v in ph.params.items()
                      if v is not None)
        place = f"{ph.order}/{ph.pin}" + (f" cpus={ph.cpus}" if ph.cpus != 1 else "") + \
            (f" bind={bind_text(ph.bind)}" if ph.bind is not None else "") + \
            (" wrapped" if ph.wrap else "")
        rows.append((f"#{ph.index}", ph.task.name, f"[{ph.variant}]" if ph.variant else "",
                     f"rep={ph.rep}", f"workers={ph.workers}", place, kv))
    if not rows:
        return "(no phases)"
    # Leave out a column that is empty on every line (the variant one, without variants).
    cols = [c for c in range(len(rows[0])) if any(r[c] for r in rows)]
    widths = {c: max(len(r[c]) for r in rows) for c in cols}
    return "\n".join("  ".join(r[c].ljust(widths[c]) for c in cols).rstrip() for r in rows)
