"""A slot's progress samples (Result.samples, stamps already in the coordinator's clock) as
stored Sample rows: time as seconds since the phase's T0, so every node's line up."""
from __future__ import annotations

from ..kernels import Result
from ..results.contract import Sample


def samples_of(run: str, phase: int, node: str, rank: int, t0_ns: int, res: Result
               ) -> list[Sample]:
    if not res.samples or not res.sample_unit:
        return []
    return [Sample(run=run, phase_id=phase, rank=rank, node=node, t_s=(t - t0_ns) / 1e9,
                   done=done, unit=res.sample_unit) for t, done in res.samples]
