"""`run --dry-run` on a cluster (--scheduler, --hosts, --cluster): the placement the run would
get there. The engine brings its nodes up (agents and slot pools, no noise floor, no
telemetry), the phases are placed on them as the coordinator would place them, and the
nodes are let go; no phase runs and nothing is stored. Without a cluster, the CLI shows this
machine's placement itself."""
from __future__ import annotations

import tempfile

from ..engines.base import Engine
from ..model import Phase, Plan
from ..plan.expand import distinct
from ..units import plural
from .coordinator import capacity, check_nodes, work_of


def on_cluster(plan: Plan, phases: list[Phase], engine: Engine, slots: int | None
               ) -> tuple[list[str], list[str]]:
    """(lines to print, problems of the plan on these nodes); the engine is made without
    telemetry or a noise floor (base.EngineConfig's defaults)."""
    largest = max((p.workers for p in distinct(phases)), default=1)
    with tempfile.TemporaryDirectory(prefix="manybench-dry-run-") as scratch:
        nodes = engine.start("dry-run", slots or plan.slots, plan.scratch or scratch, False,
                             largest)
        try:
            problems = check_nodes(distinct(phases), nodes)
            lines = [f"plan {plan.name}: {plural(len(phases), 'phase')} on "
                     f"{plural(len(nodes), 'node')}, "
                     f"{plural(sum(n.slots for n in nodes), 'slot')}: " + ", ".join(
                         f"{n.name} ({plural(n.slots, 'slot')}, {plural(len(n.cpus), 'cpu')})"
                         for n in nodes)]
            seen = set()
            for p in distinct(phases):
                key = (p.workers, p.order, p.pin, str(p.cpus), str(p.bind),
                       tuple(p.task.nodes or ()))
                if key in seen or p.workers > sum(capacity(p, nodes).values()):
                    continue
                seen.add(key)
                work = work_of(p, nodes)   # as the coordinator places it, in one place
                where = "; ".join(f"{name}: cpus " + ",".join(
                    ",".join(map(str, a.place.affinity)) or "*" for a in assigned)
                    for name, assigned in work.items() if assigned)
                lines.append(f"placement workers={p.workers} order={p.order} pin={p.pin}"
                             + (f" nodes={','.join(p.task.nodes)}" if p.task.nodes else "")
                             + f": {where}")
            return lines, problems
        finally:
            engine.close()
