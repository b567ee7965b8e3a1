"""Which metrics are rates of work done at the same instant, so that a phase's figure is
their sum over its slots: as a kernel declares it (kernels/figures.py `sums`), else, for a
metric no kernel declares (a command's), by its name's ending."""
from __future__ import annotations

import functools

from ..kernels import kernel

# name endings of throughput figures no kernel declares (a command's: hpl_gflops, x_mb_s)
RATE_SUFFIXES = ("_gflops", "_mflops", "_mb_s", "_gb_s", "_mib_s", "_gib_s", "_iops", "_ops_s",
                 "_per_s")


@functools.lru_cache(maxsize=8192)   # asked per metric of every record: kernel and name only
def summed(kernel_name: str, metric: str) -> bool:
    """Whether a phase's figure of a metric is the sum over its slots."""
    declared = kernel(kernel_name).figure(metric)
    return declared.sums if declared is not None else ("_" + metric).endswith(RATE_SUFFIXES)
