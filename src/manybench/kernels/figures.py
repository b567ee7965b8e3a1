"""The figures a kernel shows, declared as data: what each is called, its unit, which way is
better, what it is made of and from which records, whether it heads the report, and whose it
is (a slot's, a job's, the whole phase's). analysis/values.py computes every figure a view
shows from these declarations, once; report/ renders them (tables, plots, JSON) and
docs/definitions.md lists them (report/definitions.py writes that section). Nothing outside
kernels/ names a kernel's metric.

Two sorts of figure:
  computed  the analysis makes it from any kernel's records (analysis/phase_figures.py):
            aggregate bandwidth, ops/s, latency, per-slot time, sync overhead, skew,
            lateness, phase cycle, stonewall, a slot's own rates. A kernel lists those it shows.
  metric    a value a kernel puts in its records' `metrics` (triad_mb_s, gflops, ...).

Whose a figure is (`scope`):
  slot      each slot's own value (over the point's ok records)
  rank      each rank's own (a parallel task's record of one rank)
  job       each job's, on its first rank's record: what a parallel task's program printed
  node      each node's
  phase     the whole phase's (aggregate), over the point's phases
A figure that `sums` is the phase's sum over its slots (or jobs); its shares are shown beside
it: per job (aggregate / jobs) and per slot (aggregate / workers), never a job's figure split
over its ranks.

Its `shape`: a VALUE is shown as median (min-max); a DIST (distribution) as percentiles.

A metric's `role` says what a report does with it:
  figure    a figure of its own: a column, compared, checked against peaks
  flag      says what the other figures mean (where reads came from): a short cell
            (`cell`) and, past a threshold, a finding (`finding`)
  count     values counted over every record, failed ones too (a command's exit statuses)
  fact      text that decides what a figure means (a tool's version), shown as printed
  context   shown with the figures but never one (cpu use, the wrap's start-up)
  hidden    bookkeeping other figures are made from (stonewall inputs, a peer's role)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable

from . import read_source

HIGHER, LOWER = "higher", "lower"
SLOT, RANK, JOB, NODE, PHASE = "slot", "rank", "job", "node", "phase"
# how every view labels a scope (tables' headers, plots' axes, `report --json`'s "scope")
SCOPE_LABEL = {PHASE: "aggregate", SLOT: "per slot", RANK: "per rank", JOB: "per job",
               NODE: "per node"}
VALUE, DIST = "value", "distribution"
FIGURE, FLAG, COUNT, TEXT, CONTEXT, HIDDEN = "figure", "flag", "count", "text", "context", \
    "hidden"
# a summed figure's shares, beside its aggregate: (scope, formula)
SHARES = ((JOB, "aggregate / jobs (workers / ranks): one job's share, where a phase ran "
                "several jobs"),
          (SLOT, "aggregate / workers: one slot's share (SMTEF's per-worker figure); never of "
                 "a job's figure, which is the job's whole"))


@dataclass(frozen=True)
class Figure:
    name: str                # metric key in records (or a computed figure's name)
    unit: str                # of the stored value: "B/s", "MB/s", "s", "us", "ns", "ops/s",
                             # "GFLOPS", "MFLOPS", "share" (0..1), "" (a plain count)
    label: str = ""          # how a report heads it (default: the name)
    direction: str = HIGHER  # which way is better; "" for what is not a performance figure
    note: str = ""           # what it means, below the table that shows it
    headline: bool = False   # among the first figures a report shows (in declared order)
    scope: str = SLOT        # whose (module docstring): SLOT, RANK, JOB, NODE or PHASE
    role: str = FIGURE
    computed: bool = False   # made by the analysis from any kernel's records, not a metric
    sums: bool = False       # a phase's figure is the sum over its slots (rates of work done
                             # at the same time: gflops, MB/s); else the median over slots
    peak: tuple[str, float] | None = None   # (inventory peak, this unit per peak unit): the
                                            # efficiency of peak (analysis/efficiency.py)
    cell: Callable[[float], str] | None = None                       # FLAG: a cell's text
    finding: Callable[[float], tuple[str, str] | None] | None = None  # FLAG: (text, evidence)
    formula: str = ""        # how it is made from its source records (docs/definitions.md)
    shape: str = VALUE       # VALUE: median (min-max) | DIST: percentiles (median / p99 / max)
    source: str = ""         # which records carry it, where not every ok record of a point
    fixed_unit: bool = False  # shown in its declared unit as its tool prints it, never scaled

    @property
    def title(self) -> str:
        return self.label or self.name

    def first(self) -> Figure:
        """This figure among a kernel's headline figures."""
        return replace(self, headline=True)


# -- computed figures (docs/definitions.md) -----------------------------------------------------
WINDOW = "(last end - first start)"
BANDWIDTH = Figure("bandwidth", "B/s", "bandwidth", scope=PHASE, computed=True, sums=True,
                   formula=f"sum(bytes) / {WINDOW} of a phase, as IOR; median over phases")
OPS_RATE = Figure("ops_rate", "ops/s", "ops rate", scope=PHASE, computed=True, sums=True,
                  formula=f"sum(ops) / {WINDOW} of a phase; median over phases")
STONEWALL = Figure("stonewall", "B/s", "stonewall bandwidth", scope=PHASE, computed=True,
                   sums=True, formula="the bytes moved inside the stonewall window (min(end) - "
                   "max(start); measured by the slots with wear_out, else estimated in "
                   "proportion to each slot's time in it) / that window; median over phases")
OWN_BANDWIDTH = Figure("own_bandwidth", "B/s", "own bandwidth", computed=True,
                       formula="a slot's bytes / its own elapsed (not the phase's window); "
                       "median (min-max) over the point's ok records")
OWN_OPS_RATE = Figure("own_ops_rate", "ops/s", "own ops rate", computed=True,
                      formula="a slot's ops / its own elapsed; median (min-max) over the "
                      "point's ok records")
LATENCY = Figure("latency", "s", "latency", LOWER, computed=True, shape=DIST,
                 formula="per operation: percentiles of the slots' merged histograms (within "
                 "1/64 of the value), else the median over slots of each slot's percentile",
                 source="the operations of the point's ok records")
ELAPSED = Figure("elapsed", "s", "per-slot time", LOWER, computed=True,
                 formula="a slot's elapsed (end - start, on its monotonic clock); median "
                 "(min-max) over the point's ok records")
SYNC_OVERHEAD = Figure("sync_overhead", "ns", "sync overhead", LOWER, scope=PHASE,
                       computed=True, shape=DIST, formula=f"{WINDOW} of a phase of a kernel "
                       "that does no work (null); percentiles over phases")
SKEW = Figure("skew", "ns", "skew", LOWER, scope=PHASE, computed=True, shape=DIST,
              formula="max(start) - min(start) of a phase; percentiles over phases")
LATENESS = Figure("lateness", "ns", "lateness", LOWER, computed=True, shape=DIST,
                  formula="start - T0 of a slot; percentiles over the point's ok records")
CYCLE = Figure("cycle", "ns", "phase cycle", LOWER, scope=PHASE, computed=True, shape=DIST,
               formula="last end - when the coordinator sent the go (the lead before T0 "
               "included): SMTEF's per-phase figure; percentiles over phases")
COMPUTED = (BANDWIDTH, OPS_RATE, STONEWALL, LATENCY, ELAPSED, SYNC_OVERHEAD, SKEW, LATENESS,
            CYCLE, OWN_BANDWIDTH, OWN_OPS_RATE)

# -- metrics every slot's record may carry, whatever its kernel ----------------------------------
CLOCK_ERROR = Figure("clock_error_ns", "ns", "clock offset error bound", "", role=CONTEXT)
CLOCK_OFFSET = Figure("clock_offset_ns", "ns", "clock offset", "", role=CONTEXT)
CPU_TIME = Figure("cpu_time_s", "s", "cpu time", "", role=CONTEXT)
CPU_UTIL = Figure("cpu_util", "", "cpu use\n(of allowed)", "", role=CONTEXT,
                  note="cpu use = cpu time / wall time of the work (1.00 = one cpu busy "
                  "throughout), of the cpus it was allowed (read back from /proc)")
CPUS_USED = Figure("cpus_used_share", "share", "share of allowed cpus used", "", role=CONTEXT)
CPUS_BUSY = Figure("cpus_busy_share", "share", "share of allowed cpus busy", "", role=CONTEXT,
                   note="cpus busy = the share of its allowed cpus' time that was busy over "
                   "the work's window, by anyone (/proc/stat: user, nice, system, irq, "
                   "softirq, steal); less its own share, what others took of its cpus")
CPUS_ALLOWED = Figure("cpus_allowed", "", "cpus allowed", "", role=CONTEXT)
WRAP_STARTUP = Figure("wrap_startup_s", "s", "wrap\nstart-up", "", role=CONTEXT,
                      note="wrap start-up = from launching the wrap (container) to the kernel "
                      "starting inside it, median per slot; outside the timed window, never "
                      "in the figures")
WRAP_EXIT = Figure("wrap_exit_s", "s", "wrap exit", "", role=CONTEXT)
ARMED_LATE = Figure("armed_late_ns", "ns", "armed late", "", role=CONTEXT,
                    note="armed late = how long after T0 the slot began waiting for it (0: "
                    "armed in time); a late start (analysis/late.py)")
LEAD = Figure("lead_ns", "ns", "lead", "", role=CONTEXT,
              note="lead = T0 - when the coordinator sent the go (run/schedule.py adapts it)")
SPUN = Figure("spun", "", "spun to T0", "", role=CONTEXT,
              note="spun to T0 = 1: the slot spun the last stretch before T0 (cpus of its "
              "own, otherwise idle); 0: it slept to T0 (clock_nanosleep TIMER_ABSTIME) "
              "(node/spin_choice.py)")
CPU_BUSY = Figure("cpu_busy", "share", "its cpus busy", "", role=CONTEXT,
                  note="its cpus busy = the share of the slot's cpus other work took (from "
                  "/proc/stat, the run's own processes left out) when that made a slot with "
                  "cpus of its own sleep to T0 instead of spinning; absent otherwise")
SPIN_HELD = Figure("spin_held", "share", "spin held", "", role=CONTEXT,
                   note="spin held = a slot on idle cpus of its own slept to T0 because "
                   "another slot of the phase on its node slept (its cpus busy by this "
                   "share, its cpu_busy): a spin buys no skew while one slot of the phase "
                   "wakes from a sleep (node/spin_hold.py); absent otherwise")
EVERY_SLOT = (CLOCK_ERROR, CLOCK_OFFSET, CPU_TIME, CPU_UTIL, CPUS_USED, CPUS_BUSY,
              CPUS_ALLOWED, WRAP_STARTUP, WRAP_EXIT, ARMED_LATE, LEAD, SPUN, CPU_BUSY, SPIN_HELD)

# a command's metric `x` captured with a unit: metrics["x.unit"] names the unit x is stored in
UNIT_SUFFIX = ".unit"

# per-slot latency percentiles from a histogram (kernels/hist.py): lat_p50_us, lat_max_us ...
LATENCY_METRIC = re.compile(r"^lat_(p\d+(?:\.\d+)?|min|mean|max)_us$")


def latency_metric(name: str) -> str | None:
    """The quantile a latency metric holds ("p50", "max"), or None for another name."""
    m = LATENCY_METRIC.match(name)
    return m.group(1) if m else None


# -- metrics several kernels (and parsers of tools' output) share ---------------------------------
def _rate(name: str, unit: str, label: str = "", **kw) -> Figure:
    return Figure(name, unit, label or name, sums=True, **kw)


# the precision of the flops is declared by the peak they are set against: dgemm's and HPL's
# GFLOPS are double precision; Himeno's MFLOPS (cpu.himeno, mbhimeno, himenoBMTxp and its
# parser) single precision, its grids being floats
GFLOPS = _rate("gflops", "GFLOPS", peak=("dp_gflops", 1.0))
MFLOPS = _rate("mflops", "MFLOPS", peak=("sp_gflops", 1000.0))
# STREAM's rates in MB/s as STREAM prints them (and its peak, mem_bw_mb_s, is written)
STREAM_RATES = tuple(_rate(f"{k}_mb_s", "MB/s", f"{k}", peak=("mem_bw_mb_s", 1.0),
                           fixed_unit=True, formula=f"STREAM's {k} rate of a slot; the "
                           "aggregate their sum over the phase's slots")
                     for k in ("triad", "copy", "scale", "add"))
FSYNC = Figure("fsync_us", "us", "fsync", LOWER, note="fsync = the final fsync's time, inside "
               "the timed window (fio's end_fsync)")
# a tool's version as it printed it (parsers: IMB's 2021.11, OSU's 7.4): text, not a number
VERSION = Figure("version", "", "version", "", role=TEXT)

# where reads came from, and when a read figure stops being the device's: read_source.py
FROM_MEMORY = Figure("from_memory", "share", "reads from\n(page cache)", "", role=FLAG,
                     note=read_source.NOTE, cell=read_source.cell, finding=read_source.finding)
CACHED_FRACTION = Figure("cached_fraction", "share", "cached at T0", "", role=HIDDEN)
CACHE_DROPPED = Figure("cache_dropped", "", "cache dropped", "", role=HIDDEN)
# IOR's stonewall with wear-out (kernels/io_ior.py): what analysis/phase_figures.py reads
STONEWALL_S = Figure("stonewall_s", "s", role=HIDDEN, direction="")
STONEWALL_BYTES = Figure("stonewall_bytes", "", role=HIDDEN, direction="")
STONEWALL_BLOCKS = Figure("stonewall_blocks", "", role=HIDDEN, direction="")
WEAR_OUT_BLOCKS = Figure("wear_out_blocks", "", role=HIDDEN, direction="")
REORDER_SHIFT = Figure("reorder_shift", "", role=HIDDEN, direction="")
READS_CACHE = (FROM_MEMORY, CACHED_FRACTION, CACHE_DROPPED)


def by_name(figs: Iterable[Figure]) -> dict[str, Figure]:
    return {f.name: f for f in figs}


__all__ = ["Figure", "HIGHER", "LOWER", "SLOT", "RANK", "JOB", "NODE", "PHASE", "SCOPE_LABEL",
           "VALUE", "DIST", "FIGURE", "FLAG", "COUNT", "TEXT", "CONTEXT", "HIDDEN", "SHARES",
           "COMPUTED", "EVERY_SLOT", "latency_metric", "by_name"]
