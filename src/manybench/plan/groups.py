"""[[concurrent]]: tasks that run in the same phases, on disjoint slots, from one T0.

  [[concurrent]]
  name = "mixed"
  tasks = ["write", "mdtest"]

A mixed workload (IO500's concurrent phase, writers beside a metadata storm): each phase of
the group runs every member task's point at once, each on its own `workers` slots (ranks in
member order), from the same T0. The members' points pair up by position, so their sweeps
must have the same length, or one point (which then runs beside every point of the others).
A member runs only inside its group. Reports give each member's figures and the whole
phase's (every slot's bytes and ops over the phase's window).
"""
from __future__ import annotations

from ..kernels import KERNELS
from ..model import GROUP_KERNEL, Group, TaskSpec, Variant
from .schema import known_names
from .tasks import kernel_params, sweep_points
from .variants import applies

__all__ = ["GROUP_KERNEL", "build_groups"]


def build_groups(raw: dict, tasks: list[TaskSpec], plan_workers: list[int],
                 variants: list[Variant], probs: list) -> list[Group]:
    items = raw.get("concurrent") if isinstance(raw.get("concurrent"), list) else []
    by_name = {t.name: t for t in tasks}
    taken: dict[str, str] = {}
    out: list[Group] = []
    for i, g in enumerate(items):
        if not isinstance(g, dict) or not isinstance(g.get("tasks"), list):
            continue
        loc = ("concurrent", i)
        name = str(g.get("name", ""))
        if name in by_name or name in {x.name for x in out}:
            probs.append((loc + ("name",), f"{name!r} is already a task or group name"))
        members: list[TaskSpec] = []
        for j, t in enumerate(g["tasks"]):
            at = loc + ("tasks", j)
            if not isinstance(t, str):
                continue    # the schema tells it
            if t not in by_name:
                probs.append((at, f"unknown task {t!r} {known_names(list(by_name), str(t))}"))
            elif t in taken:
                probs.append((at, f"task {t!r} is already in group {taken[t]!r}"))
            else:
                taken[t] = name
                members.append(by_name[t])
        if members and len(members) == len(g["tasks"]):
            _check_members(loc, name, members, plan_workers, variants, probs)
        out.append(Group(name=name, tasks=[m.name for m in members]))
    return out


def _check_members(loc: tuple, name: str, members: list[TaskSpec], plan_workers: list[int],
                   variants: list[Variant], probs: list) -> None:
    counts = {m.name: len(sweep_points(m.params)) * len(m.workers or plan_workers)
              for m in members}
    longest = max(counts.values())
    if any(c not in (1, longest) for c in counts.values()):
        probs.append((loc + ("tasks",), "members pair their points by position: give them "
                      "sweeps of the same length, or one point (points: "
                      + ", ".join(f"{n} {c}" for n, c in counts.items()) + ")"))
    if len({tuple(m.nodes or ()) for m in members}) > 1:
        probs.append((loc + ("tasks",), "members must run on the same nodes (their `nodes` "
                                        "differ)"))
    for m in members:
        if m.order is not None:     # one phase, placed once: its members share the order
            probs.append((loc + ("tasks",), f"task {m.name!r} sets its own order, which a "
                                            "group's members cannot: the group's slots are "
                                            "placed together by placement.order"))
        k = KERNELS.get(m.kernel)
        if k is not None and k.connects and k.from_command:   # a parallel task (ranks)
            probs.append((loc + ("tasks",), f"task {m.name!r} runs as MPI jobs (ranks), whose "
                                            "slots connect to each other, which a group does "
                                            "not do: give it workers that make several jobs "
                                            "instead (they start together)"))
        elif k is not None and k.connects and not k.from_command and any(
                _wants_peers(k, p) for p in sweep_points(m.params)):
            probs.append((loc + ("tasks",), f"task {m.name!r}: kernel {k.name} connects its "
                                            "slots to each other, which a group does not do"))
    for i, v in enumerate(variants):
        inside = [applies(v, m.name) for m in members]
        if any(inside) and not all(inside):
            probs.append((("variant", i, "tasks"),
                          f"applies to some tasks of group {name!r} but not all: a group's "
                          "phases run its tasks together"))


def _wants_peers(k, point: dict) -> bool:
    try:
        return k.wants_peers(kernel_params(k, point))
    except ValueError:   # a bad value: the task's own check tells it
        return False
