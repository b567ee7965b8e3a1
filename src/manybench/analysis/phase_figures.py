"""The figures of one phase, with the names and definitions of docs/definitions.md.

Over a phase's ok records:
  first start, last end; window = last end - first start
  lateness = start - t0 per record; skew = max(start) - min(start)
  sync overhead = last end - first start (kernels that do no work: trait sync_only)
  phase cycle = last end - when the coordinator sent the go (SMTEF's per-phase figure: the
  lead before T0, the lateness and the work; phases stored before the go was: none)
  aggregate bandwidth = sum(bytes) / window, aggregate ops/s = sum(ops) / window (as IOR)
  stonewall, measured (io.write with wear_out: every record carries the stonewall's bytes and
  time, kernels/figures.py): the bytes every slot had written when the stonewall was agreed / the longest
  stonewall time, as IOR's; and the spread of blocks written by then (IO500's "pairs
  accessed min / max").
  stonewall, estimated (other phases with a `duration` param): overlap = min(end) -
  max(start), the window in which every slot was running. Slots do not report how many bytes
  they moved inside it, so the bytes in it are a PROPORTIONAL ESTIMATE assuming each slot ran
  at a constant rate: bytes_i * overlap / (end_i - start_i); stonewall bandwidth = their sum
  / overlap.
Records whose status is not ok are counted but excluded from every timing figure, since their
stamps are partial or absent.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import eq
from typing import Sequence

from ..status import OK_TEXT
from ..kernels import figures as F
from ..kernels import kernel
from ..record import Record

SW_S, SW_BYTES, SW_BLOCKS = F.STONEWALL_S.name, F.STONEWALL_BYTES.name, F.STONEWALL_BLOCKS.name

NS = 1e9


@dataclass
class PhaseFigures:
    """Figures of one phase; times in ns, rates per second; None when not defined."""
    index: int
    t0_ns: int | None
    records: int
    ok: int
    first_start_ns: int | None = None
    last_end_ns: int | None = None
    window_ns: int | None = None
    skew_ns: int | None = None
    lateness_ns: list[int] = field(default_factory=list)
    ops: int = 0
    bytes: int = 0
    bandwidth: float | None = None        # aggregate bandwidth, bytes/s
    ops_rate: float | None = None         # aggregate ops/s
    sync_overhead_ns: int | None = None   # null kernel only
    go_ns: int | None = None              # when the coordinator sent the go (None: unknown)
    cycle_ns: int | None = None           # last end - go sent
    stonewall_ns: int | None = None       # overlap window
    stonewall_bytes: float | None = None  # proportional estimate of bytes inside it
    stonewall_bandwidth: float | None = None
    stonewall_measured: bool = False      # from the slots' own stonewall figures (wear_out)
    stonewall_blocks: tuple[int, int] | None = None   # min, max blocks by the stonewall


def phase_figures(index: int, records: Sequence[Record], kernel_name: str = "",
                  params: dict | None = None, t0_ns: int | None = None,
                  go_ns: int | None = None) -> PhaseFigures:
    """The figures of one phase from its records (see the module docstring)."""
    ok = [r for r in records if r.status == OK_TEXT]
    f = PhaseFigures(index=index, t0_ns=t0_ns if t0_ns is not None else
                     (records[0].t0_ns if records else None), records=len(records), ok=len(ok),
                     go_ns=go_ns)
    if not ok:
        return f
    starts = [r.start_ns for r in ok]
    ends = [r.end_ns for r in ok]
    f.first_start_ns, f.last_end_ns = min(starts), max(ends)
    f.window_ns = f.last_end_ns - f.first_start_ns
    f.skew_ns = max(starts) - min(starts)
    f.lateness_ns = [r.start_ns - r.t0_ns for r in ok]
    f.ops = sum([r.ops for r in ok])        # lists: a generator resumes once per record
    f.bytes = sum([r.bytes for r in ok])
    if f.window_ns > 0:
        f.bandwidth = f.bytes * NS / f.window_ns
        f.ops_rate = f.ops * NS / f.window_ns
    if kernel_name and kernel(kernel_name).sync_only:
        f.sync_overhead_ns = f.window_ns
    if go_ns is not None:
        f.cycle_ns = f.last_end_ns - go_ns
    params = params if params is not None else ok[0].params
    if all(SW_BYTES in r.metrics and SW_S in r.metrics for r in ok):
        sw = max(r.metrics[SW_S] for r in ok)
        f.stonewall_ns, f.stonewall_measured = round(sw * NS), True
        f.stonewall_bytes = float(sum(r.metrics[SW_BYTES] for r in ok))
        f.stonewall_bandwidth = f.stonewall_bytes / sw if sw > 0 else None
        blocks = [int(r.metrics.get(SW_BLOCKS, 0)) for r in ok]
        f.stonewall_blocks = (min(blocks), max(blocks))
    elif params.get("duration"):
        overlap = min(ends) - max(starts)
        if overlap > 0 and all(r.end_ns > r.start_ns for r in ok):
            f.stonewall_ns = overlap
            f.stonewall_bytes = sum(r.bytes * overlap / (r.end_ns - r.start_ns) for r in ok)
            f.stonewall_bandwidth = f.stonewall_bytes * NS / overlap
    return f


def ok_window(starts: Sequence[int], ends: Sequence[int], statuses: Sequence[str]
              ) -> tuple[int, int] | None:
    """(first start, last end) of a phase's ok records, None when none is ok; read in C
    when every record is ok (64,000 a phase at 1,000 nodes x 64 slots)."""
    n = statuses.count(OK_TEXT)
    if n == len(statuses):
        return (min(starts), max(ends)) if n else None
    if not n:
        return None
    ok = list(map(eq, statuses, repeat(OK_TEXT)))
    return min(compress(starts, ok)), max(compress(ends, ok))
