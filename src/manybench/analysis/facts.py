"""The facts of a point (kernels/facts.py): each fact its kernel declares, with every value
its records carry, how many records carry it and on which nodes. One value is the rule; two
say the point ran two ways (nodes with different BLAS libraries, say), and every view shows
both rather than one of them.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterable

from ..kernels import kernel
from ..kernels.facts import Fact
from ..record import Record


@dataclass(frozen=True)
class FactValue:
    fact: str                # the declared name (a key of the records' extra or metrics)
    label: str
    value: Any
    records: int             # records of the point that carry this value
    nodes: tuple[str, ...]   # where they ran, in order first seen


@functools.lru_cache(maxsize=256)
def _facts(kernel_name: str) -> tuple[Fact, ...]:
    return kernel(kernel_name).facts


def _key(v: Any) -> Any:
    # a value as a dict key: lists and dicts (never declared so far) by their text
    return v if isinstance(v, (str, int, float, bool)) else repr(v)


def point_facts(records: Iterable[Record]) -> tuple[FactValue, ...]:
    """Per declared fact (in its kernel's order), each value the records carry (in the order
    first seen), failed records included: how a phase ran is a fact however it ended."""
    return merged([tally(records)])


Tally = tuple[list[str], list[list]]


def tally(records: Iterable[Record]) -> Tally:
    """The records' facts counted: their kernels in the order first seen, and per (fact,
    value) in the order first seen [kernel, the fact's index in it, fact, value, records,
    nodes] (what a phase's aggregates keep: analysis/aggregates.py)."""
    kernels: dict[str, None] = {}
    seen: dict[tuple[str, Any], list] = {}
    for r in records:
        kernels[r.kernel] = None
        for i, f in enumerate(_facts(r.kernel)):
            v = f.of(r.extra or {}, r.metrics or {})
            if v is None or v == "":
                continue
            got = seen.get((f.name, _key(v)))
            if got is None:
                got = seen[(f.name, _key(v))] = [r.kernel, i, f.name, v, 0, {}]
            got[4] += 1
            got[5][r.node] = None
    return list(kernels), [[k, i, name, v, n, list(nodes)] for k, i, name, v, n, nodes
                           in seen.values()]


def merged(tallies: Iterable[Tally]) -> tuple[FactValue, ...]:
    """point_facts over tallies of the point's records, in their order."""
    kernels: dict[str, int] = {}               # kernel -> order first seen
    seen: dict[tuple[str, Any], list] = {}     # (fact, value) -> [Fact, value, n, nodes, place]
    for ks, rows in tallies:
        for k in ks:
            kernels.setdefault(k, len(kernels))
        for kname, i, name, v, n, nodes in rows:
            got = seen.get((name, _key(v)))
            if got is None:
                got = seen[(name, _key(v))] = [_facts(kname)[i], v, 0, {}, (kernels[kname], i)]
            got[2] += n
            got[3].update(dict.fromkeys(nodes))
    rows_ = sorted(seen.values(), key=lambda g: g[4])    # stable: values as first seen
    return tuple(FactValue(f.name, f.label, v, n, tuple(nodes)) for f, v, n, nodes, _ in rows_)
