"""A slot's SlotContext for one phase: where it works, its environment, its resources and the
launcher its work runs under, all resolved on the node.

  dir        the task's `dir`; else, with [placement.resources] scratch, the directory of
             the slot's NUMA node; else the run's default scratch
  resources  each concurrent slot of the node gets its own id of every resource (slot i:
             ids[i]) in the resource's variable (gpu: CUDA_VISIBLE_DEVICES) and as {name}
  wrap       the variant's launcher prefix with its templates filled in: the task's params,
             {node} {slot} {rank} {scratch} {run} ..., {cpus} (the slot's cpu count),
             ({scratch} is the run's directory for a parallel task: one wrap serves all
             the job's ranks, each working in its own directory below it),
             {mbkernel} (the standalone kernel executable, kept in the slot's scratch), the
             resources and the variant's vars
"""
from __future__ import annotations

import os

from ..inventory.topology import topology
from ..kernels import KERNELS
from ..kernels.command import builtin_values
from ..templates import render
from .protocol import SlotPlace, WirePhase
from .scratch import Scratch, ScratchError
from .wire_types import SlotContext

MBKERNEL = "mbkernel"   # its name in the slot's scratch directory


class ContextError(Exception):
    """The phase cannot be given to this slot as the plan asks (a message for its record)."""


def numa_of(place: SlotPlace) -> int | None:
    cpu = place.affinity[0] if place.affinity else None
    return next((c.numa for c in topology() if c.id == cpu), None)


def base_dir(phase: WirePhase, place: SlotPlace, default_dir: str) -> str:
    if phase.params.get("dir"):
        return phase.params["dir"]
    near = phase.resources.get("scratch")
    if near:
        numa = numa_of(place)
        if numa not in near:
            raise ContextError(f"placement.resources.scratch: no directory for NUMA node "
                               f"{numa}, where slot {place.slot} runs (given: "
                               + ", ".join(f"numa{n}" for n in sorted(near)) + ")")
        return near[numa]
    return default_dir


def resource_values(phase: WirePhase, slot: int) -> tuple[dict[str, str], dict[str, str]]:
    """(template values, environment) of the node's resources for one slot."""
    values: dict[str, str] = {}
    env: dict[str, str] = {}
    for name, res in phase.resources.items():
        if name == "scratch":
            continue
        ids = res["ids"]
        if slot >= len(ids):
            raise ContextError(f"placement.resources.{name}: {len(ids)} ids for slot {slot}: "
                               "each concurrent slot of a node needs its own")
        values[name] = env[res["env"]] = ids[slot]
    return values, env


def slot_context(phase: WirePhase, place: SlotPlace, rank: int, node: str, run: str,
                 scratch: Scratch, default_dir: str, job_key: str = "",
                 host: str = "") -> SlotContext:
    """The context slot `place.slot` runs the phase with (ContextError: why it cannot).
    job_key, host: the agent's (SlotContext)."""
    wrapped = phase.wrap is not None
    kernel = KERNELS[phase.kernel]
    uses_dir = kernel.uses_dir or wrapped
    # a command's {scratch}: fresh every phase. Built-in kernels keep their slot directory:
    # io.read reads what was laid out before, meta.* phases share mdtest's tree.
    fresh = kernel.from_command and not wrapped
    base = base_dir(phase, place, default_dir)
    values, env = resource_values(phase, place.slot)
    try:
        ctx = SlotContext(
            run=run, node=node, slot=place.slot, rank=rank, workers=phase.workers,
            cpu=place.cpu, phase=phase.index, rep=phase.rep, task=phase.task.name,
            variant=phase.variant, env={**phase.env, **env}, spec=phase.task,
            scratch=(scratch.phase_dir(base, place.slot, phase.index) if fresh else
                     scratch.slot_dir(base, place.slot) if uses_dir else ""),
            shared=scratch.shared_dir(base) if uses_dir else "",
            root=scratch.run_dir(base) if uses_dir else "",
            kernel=phase.kernel, vars={**values, **phase.vars}, settle_ns=place.settle_ns,
            job_key=job_key, host=host)
    except ScratchError as e:     # something planted where the run's scratch goes
        raise ContextError(str(e)) from None
    if wrapped:
        fill = {**phase.params, **builtin_values(ctx),
                # one wrap for a whole job's ranks: binding the run's directory gives each
                # rank its own below it (and what the job installs there)
                **({"scratch": ctx.root} if kernel.job_wrap else {}),
                "cpus": len(place.affinity), "mbkernel": os.path.join(ctx.scratch, MBKERNEL),
                **ctx.vars}
        try:
            ctx.wrap = [render(a, fill) for a in phase.wrap or []]
        except ValueError as e:
            raise ContextError(f"wrap: {e}") from None
    return ctx
