"""A phase's slots as the efficiency (efficiency.py) and the end's checks (run/quality.py) read
them: per node, its records by kind (the task they ran, the cpus they were allowed as read
back), and each numeric metric summed over the phase's ok records. Made from the records, or
from the phase's stored aggregates (aggregates.py) without reading one."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..status import OK_TEXT
from ..kernels import figures as F
from ..record import Record
from .aggregates import SEP, PartAgg


@dataclass(frozen=True)
class Kind:
    allowed: str            # cpus_allowed as read back ("": the record does not say)
    params: dict[str, Any]  # of the task they ran
    kernel: str
    records: int
    ok: int


@dataclass
class PhaseSlots:
    nodes: dict[str, list[Kind]] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)   # numeric metric over ok records

    def __bool__(self) -> bool:
        return bool(self.nodes)

    def counts(self) -> dict[str, int]:
        """Records per node."""
        return {node: sum(k.records for k in kinds) for node, kinds in self.nodes.items()}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def of_records(recs: Sequence[Record]) -> PhaseSlots:
    """A phase's slots from its records."""
    kinds: dict[str, dict[tuple, list]] = {}
    sums: dict[str, float] = {}
    for r in recs:
        allowed = r.metrics.get(F.CPUS_ALLOWED.name)
        key = (r.task, allowed if isinstance(allowed, str) else "")
        got = kinds.setdefault(r.node, {}).setdefault(key, [r.params, r.kernel, 0, 0])
        got[2] += 1
        if r.status == OK_TEXT:
            got[3] += 1
            for name, v in r.metrics.items():
                if _number(v):
                    sums[name] = sums.get(name, 0.0) + v
    return PhaseSlots({node: [Kind(text, p, k, n, ok) for (_, text), (p, k, n, ok)
                              in by.items()] for node, by in kinds.items()}, sums)


def of_parts(parts: Sequence[PartAgg]) -> PhaseSlots:
    """A phase's slots from its parts' aggregates (its own part first: every record; the
    tasks' parts of a group give each task's params and kernel)."""
    if not parts:
        return PhaseSlots()
    whole = parts[0]
    tasks = {a.info.task: a.info for a in parts[1:]}
    nodes: dict[str, list[Kind]] = {}
    for node, (_, _, kinds) in whole.nodes.items():
        mine = nodes[node] = []
        for key, (n, ok) in kinds.items():
            task, _, text = key.partition(SEP)
            info = tasks.get(task, whole.info)
            mine.append(Kind(text, info.params, info.kernel, n, ok))
    return PhaseSlots(nodes, dict(whole.sums))


def by_phase(records: Iterable[Record]) -> dict[int, PhaseSlots]:
    """Every phase's slots from a run's records."""
    out: dict[int, list[Record]] = {}
    for r in records:
        out.setdefault(r.phase, []).append(r)
    return {idx: of_records(rs) for idx, rs in out.items()}
