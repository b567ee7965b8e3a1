"""A slot's progress samples (Result.samples, stamps already in the coordinator's clock) as
stored Sample rows: time as seconds since the phase's T0, so every node's line up."""
from __future__ import annotations

from ..node.arrays import SlotResults
from ..results.contract import Sample


def samples_at(run: str, phase: int, node: str, rank: int, t0_ns: int, arr: SlotResults,
               i: int) -> list[Sample]:
    """Entry i's samples of a node's results (arrays, stamps in the coordinator's clock)."""
    unit = arr.sample_unit.get(i)
    if i not in arr.samples or not unit:
        return []
    ts, done = arr.samples[i]
    return [Sample(run=run, phase_id=phase, rank=rank, node=node, t_s=(t - t0_ns) / 1e9,
                   done=d, unit=unit) for t, d in zip(ts, done)]
