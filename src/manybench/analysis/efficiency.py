"""Efficiency (measured / theoretical peak) and the multi-node scaling share of each point.

The measured figure of a point, for a metric m:
  phase figure  = the SUM of m over the phase's ok records (slots), since the slots of a
                  phase run at the same instant and the peak is that of the resources they
                  share; for the aggregate figures: bandwidth_mb_s = aggregate bandwidth
                  (sum(bytes) / (last end - first start), docs/definitions.md) in MB/s (10^6 B/s),
                  ops_per_s = aggregate ops/s.
  point figure  = the MEDIAN (nearest rank, stats.py) of the phase figures over its phases.

The peak of a phase, for m: a sum over the phase's nodes, each with its OWN peaks (its
inventory, collected on the node, with the plan's [peaks] over it; NodePeaks):
  "<task>.<m>" or m named in [peaks]      -> that number, as given (a device, a link: shared)
  a metric declared with a peak (kernels/figures.py: its `peak`, (inventory peak, scale)):
    on dp_gflops or sp_gflops, the precision the metric declares (gflops of cpu.dgemm and
    HPL's parser: DP; mflops of cpu.himeno and Himeno's parser: SP, scale 1000)
                                           -> sum over nodes of that peak / cores x cores
                                              used there, x the scale
    on mem_bw_mb_s (triad_mb_s, copy_mb_s, scale_mb_s, add_mb_s of mem.stream and STREAM's
    parser)                                -> sum over nodes used of mem_bw_mb_s
  bandwidth_mb_s, ops_per_s                -> only when named in [peaks]
where the peak follows what the slots held: cores used on a node = the sum over its slots of
the threads each declares (its `threads` parameter, 0 = the node's cores; else its kernel's
default: cpu.dgemm, cpu.himeno, mem.stream run 1) or, where nothing declares them (a
command, an MPI rank), the physical cores of the cpus it was allowed (its record's
cpus_allowed, read back from /proc: pin, `cpus`, `bind` and a rank's cpus decide it; SMT
siblings are one core, from the inventory's smt_siblings); at most the distinct cores all
its slots held and the node's cores. So one slot of 2 cpus and two slots of 1 on the same
cpus get the same peak, and a rank of 64 cpus 64 cores' peak. A record without a read-back
(runs stored before records had one) counts the plan's `cpus`, else 1. The clock of a flops
peak is a rating where one exists, else the highest measured since the node booted
(inventory/clock_keep.py); the rule and each Efficiency's `basis` say which, with cores x
clock x flops per cycle. A node with no stored inventory
(runs stored before nodes had one) takes the run's environment, the coordinator's. The
efficiency of a point = the median over its phases of phase figure / phase peak; its peak =
the median of the phase peaks.

A point gets one efficiency: the first metric it has, in this order, whose peak is known:
task-scoped [peaks] names, metric names in [peaks], the metrics declared with a peak (in
declaration order: gflops, mflops, triad/copy/scale/add_mb_s), then bandwidth_mb_s and ops_per_s when [peaks] names them.

Share (multi-node points only): share = figure at N nodes / (N x figure at one node), where
the one-node figure is that of the same task, variant, parameters and pinning run on one node
with the same workers per node (the "expected maximum" of N nodes); a parallel task's job
over all its workers (ranks = workers) is compared with the one-node job of that node's
ranks. The figure compared is the
efficiency's metric, else the point's first throughput metric (gflops, mflops, *_mb_s, ...),
else aggregate bandwidth, else aggregate ops/s. A point whose slots are not spread evenly
(the same count on every node, in every phase) gets no share.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..inventory.peaks import FLOPS_PEAKS, MEASURED, PRECISION, Peaks
from ..kernels import declared_metrics, kernel
from ..kernels import figures as F
from ..kernels.binding import parse_cpulist
from ..record import Record
from .phase_figures import PhaseFigures
from .phase_slots import Kind, PhaseSlots
from .phase_slots import by_phase as slots_by_phase
from .phase_slots import of_records as slots_of
from .points import PointSummary
from .rates import summed
from .stats import median

MEM_PEAK = "mem_bw_mb_s"     # the inventory peak memory bandwidths are declared against
_PEAKED = {n: f.peak for n, f in declared_metrics().items() if f.peak}
# metric -> (its precision's flops peak, its unit per GFLOPS): gflops DP, mflops SP, ...
FLOPS_METRICS = {n: p for n, p in _PEAKED.items() if p[0] in FLOPS_PEAKS}
STREAM_METRICS = tuple(n for n, p in _PEAKED.items() if p[0] == MEM_PEAK)
AGGREGATES = ("bandwidth_mb_s", "ops_per_s")
RULE_ORDER = tuple(FLOPS_METRICS) + STREAM_METRICS
CORES_USED = ("cores used = per node, the physical cores of the cpus each slot was allowed "
              "(read back from /proc: what pin, cpus, bind or a rank's cpus gave it), or the "
              "threads it declares (`threads`), at most the cores its slots hold")


@dataclass
class NodePeaks:
    """Each node's effective peaks; a node not listed has `default` (the run's)."""
    default: Peaks
    by_node: dict[str, Peaks] = field(default_factory=dict)

    def of(self, node: str) -> Peaks:
        return self.by_node.get(node, self.default)

    def all(self) -> list[Peaks]:
        return list(self.by_node.values()) or [self.default]


WRONG_PEAK = ("wrong peak: the figure exceeds the theoretical peak, so the peak is too low "
              "(a clock or flops per cycle underestimated): fix it in [peaks]")


@dataclass(frozen=True)
class Efficiency:
    metric: str        # the measured figure: a metric name, bandwidth_mb_s or ops_per_s
    measured: float    # point figure (median over phases of the phase sums)
    peak: float        # median over phases of the phase peaks
    ratio: float       # median over phases of phase figure / phase peak
    phases: int        # phases that had both
    peak_name: str     # dp_gflops, mem_bw_mb_s, or the [peaks] key

    @property
    def above_peak(self) -> bool:
        """Above 100%: the peak is wrong (nothing runs faster than its peak), and the share
        is not a result."""
        return self.ratio > 1.0
    rule: str          # how the peak was reckoned, in words
    cores: float | None = None     # flops peaks: cores used (median over phases)
    precision: str | None = None   # flops peaks: "DP" or "SP", as the metric declares
    basis: str = ""                # this point's peak in words: cores x clock x flops/cycle


@dataclass(frozen=True)
class Share:
    metric: str
    measured: float    # point figure at N nodes
    nodes: int
    single: float      # the one-node point's figure
    single_point: str
    ratio: float       # measured / (nodes x single)


@dataclass
class PointEfficiency:
    point: str
    nodes: int | None = None              # nodes used (None: phases disagree)
    per_node: int | None = None           # slots per node when even, else None
    efficiency: Efficiency | None = None
    share: Share | None = None


def unit(metric: str) -> str:
    """How a figure's unit is written in reports."""
    declared = declared_metrics().get(metric)
    if declared is not None and declared.unit and declared.unit != "share":
        return declared.unit
    if metric.endswith("_mb_s"):
        return "MB/s"
    if metric == "ops_per_s":
        return "ops/s"
    return metric


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def threads_per_slot(params: dict, node_cores: float | None, kernel_name: str = ""
                     ) -> float | None:
    """Threads one slot's work runs, as declared: its `threads` parameter (0 = all the
    node's cores), else its kernel's default for it (cpu.dgemm, cpu.himeno, mem.stream: 1);
    None when nothing declares it (a command: the cpus it was allowed tell)."""
    t = params.get("threads")
    if isinstance(t, str) and t.strip().isdigit():
        t = int(t)
    if _number(t):
        if t > 0:
            return float(t)
        if node_cores:
            return float(node_cores)
    spec = kernel(kernel_name).params.get("threads") if kernel_name else None
    return float(spec.default) if spec is not None and _number(spec.default) else None


def held_cores(r: Record | str, pk: Peaks) -> set[int] | None:
    """The physical cores of the cpus the slot's work was allowed, read back from /proc
    (kernels/binding.py); None when its record does not say. r: the record, or its
    cpus_allowed text."""
    text = r if isinstance(r, str) else r.metrics.get(F.CPUS_ALLOWED.name)
    if not isinstance(text, str) or not text:
        return None
    try:
        return pk.cores_among(parse_cpulist(text))
    except ValueError:
        return None


def _placed(params: dict) -> float:
    """The cpus the plan gave a slot (`cpus`) whose record has no read-back; else 1."""
    c = params.get("cpus")
    return float(c) if _number(c) and c > 0 else 1.0


def cores_used(records: Sequence[Record], peaks: Peaks | NodePeaks) -> float:
    """Sum over the phase's nodes of the cores its slots used there (CORES_USED)."""
    peaks = peaks if isinstance(peaks, NodePeaks) else NodePeaks(peaks)
    return sum(_node_cores_used(kinds, peaks.of(node))
               for node, kinds in slots_of(records).nodes.items())


def _node_cores_used(kinds: Sequence[Kind], pk: Peaks) -> float:
    """Per slot its declared threads, else the cores it was allowed; summed, at most the
    cores the slots hold together (slots sharing cpus share their cores) and the node's."""
    cores = pk.get("cores")
    want, union, known = 0.0, set(), True
    for k in kinds:
        held = held_cores(k.allowed, pk)
        threads = threads_per_slot(k.params, cores, k.kernel)
        want += k.records * (threads if threads is not None else len(held) if held
                             else _placed(k.params))
        if held:
            union |= held
        else:
            known = False
    caps = [c for c in (cores, len(union) if known and union else None) if c]
    return min([want, *caps])


def _phase_value(metric: str, fig: PhaseFigures, ph: PhaseSlots) -> float | None:
    if metric == "bandwidth_mb_s":
        return fig.bandwidth / 1e6 if fig.bandwidth is not None and fig.bytes else None
    if metric == "ops_per_s":
        return fig.ops_rate if fig.ops_rate is not None and fig.ops else None
    v = ph.sums.get(metric)
    return float(v) if v is not None else None


class _Point:
    """One summary with its phases' slots, and the figures computed from them."""

    def __init__(self, s: PointSummary, by_phase: dict[int, PhaseSlots]):
        self.s = s
        self.phases = [(f, by_phase.get(f.index) or PhaseSlots()) for f in s.phase_figures]
        layouts = []
        for _, ph in self.phases:
            if ph:
                counts = ph.counts()
                layouts.append((len(counts), frozenset(counts.values())))
        self.nodes: int | None = None
        self.per_node: int | None = None
        if layouts and len(set(layouts)) == 1:
            n, counts = layouts[0]
            self.nodes = n
            self.per_node = next(iter(counts)) if len(counts) == 1 else None
        elif layouts:
            self.nodes = Counter(n for n, _ in layouts).most_common(1)[0][0]
        try:
            key = json.loads(s.point)
            self.pin = key.get("pin") if isinstance(key, dict) else None
        except (ValueError, TypeError):
            self.pin = None

    def has(self, metric: str) -> bool:
        """Whether any ok record of the point has the figure (summaries know without a scan)."""
        if metric == "bandwidth_mb_s":
            return self.s.bandwidth is not None
        if metric == "ops_per_s":
            return self.s.ops_rate is not None
        return metric in self.s.metrics

    def values(self, metric: str) -> list[float]:
        return [v for f, ph in self.phases if (v := _phase_value(metric, f, ph)) is not None]

    def figure(self, metric: str) -> float | None:
        vals = self.values(metric)
        return median(vals) if vals else None


def _flops_phase_peak(ph: PhaseSlots, peaks: NodePeaks, name: str, scale: float
                      ) -> tuple[float, float] | None:
    """(peak, cores used): sum over the phase's nodes of the precision's GFLOPS per core x
    the cores used there (x scale)."""
    total = used = 0.0
    for node, mine in ph.nodes.items():
        pk = peaks.of(node)
        gf, cores = pk.get(name), pk.get("cores")
        if gf is None or cores is None:
            return None
        n = _node_cores_used(mine, pk)
        total += gf / cores * n * scale
        used += n
    return total, used


def _per_core(pk: Peaks, name: str) -> str:
    """One core's peak of a precision in words: clock (and where it came from) x flops per
    cycle, or the peak as given / cores."""
    gf, cores = pk.get(name), pk.get("cores")
    ghz, fpc = pk.get("base_ghz"), pk.get(FLOPS_PEAKS[name])
    if gf is None or cores is None:
        return f"{name} unknown"
    if ghz and fpc and abs(gf - cores * ghz * fpc) <= 1e-9 * gf:
        clock = pk.basis.get("base_ghz", "")
        if clock in ("detected", MEASURED):
            clock = pk.sources.get("base_ghz") or clock
        return (f"{ghz:g} GHz x {fpc:g} {PRECISION[name]} flops/cycle = {gf / cores:,.4g} "
                f"GFLOPS per core (clock: {clock})")
    return (f"{name} {gf:,.6g} GFLOPS ({pk.basis.get(name, '')}) / {cores:g} cores = "
            f"{gf / cores:,.4g} GFLOPS per core")


def _mem_phase_peak(ph: PhaseSlots, peaks: NodePeaks) -> float | None:
    """Sum over the phase's nodes of mem_bw_mb_s."""
    bws = [peaks.of(node).get("mem_bw_mb_s") for node in ph.nodes]
    return None if not bws or None in bws else float(sum(bws))


def _peak_rule(metric: str, task: str, peaks: NodePeaks) -> tuple[str, Any, str] | None:
    """(peak name, phase records -> peak, rule text) for metric, or None when no peak applies."""
    direct = peaks.default.metric_peaks()
    for key in (f"{task}.{metric}", metric):
        if key in direct:
            value = direct[key]
            what = ("aggregate bandwidth in MB/s" if metric == "bandwidth_mb_s" else
                    "aggregate ops/s" if metric == "ops_per_s" else
                    f"{metric} summed over a phase's slots")
            return key, lambda recs, v=value: (v, None), (
                f"{what} / {key} = {value:g} ({peaks.default.basis.get(key) or '[peaks]'})")
    every = peaks.all()
    if metric in FLOPS_METRICS:
        name, scale = FLOPS_METRICS[metric]
        kinds = {_per_core(p, name) for p in every if p.get(name) and p.get("cores")}
        if not kinds:
            return None
        detail = (next(iter(kinds)) if len(kinds) == 1
                  else "each node's own GFLOPS per core (the nodes differ)")
        rule = (f"{metric} summed over a phase's slots / {PRECISION[name]} peak of the cores "
                f"used: {detail}" + (f", x {scale:g} ({unit(metric)})" if scale != 1 else "")
                + f"; {CORES_USED}")
        return name, lambda recs: _flops_phase_peak(recs, peaks, name, scale), rule
    if metric in STREAM_METRICS:
        bws = {p.get("mem_bw_mb_s") for p in every if p.get("mem_bw_mb_s") is not None}
        if not bws:
            return None
        detail = (f"= {next(iter(bws)):,.0f} MB/s x nodes" if len(bws) == 1
                  else "with each node's own mem_bw_mb_s (the nodes differ)")
        rule = f"{metric} summed over a phase's slots / (mem_bw_mb_s summed over nodes used) " + detail
        return "mem_bw_mb_s", lambda recs: (_mem_phase_peak(recs, peaks), None), rule
    return None


def _efficiency(p: _Point, metric: str, peaks: NodePeaks) -> Efficiency | None:
    rule = _peak_rule(metric, p.s.task, peaks) if p.has(metric) else None
    if rule is None:
        return None
    name, peak_of, text = rule
    values, peaks_, ratios, cores = [], [], [], []
    for f, ph in p.phases:
        v = _phase_value(metric, f, ph)
        got = peak_of(ph) if ph else None
        pk, used = got if got else (None, None)
        if v is None or not pk:
            continue
        values.append(v)
        peaks_.append(pk)
        ratios.append(v / pk)
        if used is not None:
            cores.append(used)
    if not ratios:
        return None
    used = median(cores) if cores else None
    precision = PRECISION.get(name)
    basis = ""
    if used is not None and precision:
        kinds = {_per_core(q, name) for q in peaks.all()}
        basis = f"{used:g} cores x " + (
            next(iter(kinds)) if len(kinds) == 1 else "each node's own GFLOPS per core")
    return Efficiency(metric, median(values), median(peaks_), median(ratios), len(ratios),
                      name, text + "; median over phases", used, precision, basis)


def _candidates(p: _Point, peaks: NodePeaks) -> list[str]:
    names: list[str] = []
    task_prefix = f"{p.s.task}."
    direct = list(peaks.default.metric_peaks())
    names += [k[len(task_prefix):] for k in direct if k.startswith(task_prefix)]
    names += [k for k in direct if "." not in k and k not in AGGREGATES]
    names += list(RULE_ORDER)
    names += [k for k in direct if k in AGGREGATES]
    return list(dict.fromkeys(names))


def _share_metric(p: _Point, eff: Efficiency | None) -> str | None:
    if eff is not None:
        return eff.metric
    metrics = set(p.s.metrics)
    for name in RULE_ORDER:
        if name in metrics:
            return name
    for name in sorted(metrics):
        if summed(p.s.kernel, name):
            return name
    if p.s.bandwidth is not None:
        return "bandwidth_mb_s"
    if p.s.ops_rate is not None and not kernel(p.s.kernel).sync_only:
        return "ops_per_s"
    return None


def _same(a: PointSummary, b: PointSummary) -> bool:
    return a.task == b.task and a.variant == b.variant and _params(a) == _params(b)


def _params(s: PointSummary) -> str:
    """A point's parameters but the ranks of a job over all its workers (ranks = "workers"),
    which follow the worker count as the nodes do."""
    params = {k: v for k, v in s.params.items() if not (k == "ranks" and v == s.workers)}
    return json.dumps(params, sort_keys=True, default=str)


def evaluate(summaries: Iterable[PointSummary], records: Iterable[Record],
             peaks: Peaks | NodePeaks) -> dict[str, PointEfficiency]:
    """Efficiency and share of every point, keyed by PointSummary.point (see module doc);
    peaks: each node's (NodePeaks), or one Peaks for every node."""
    return evaluate_slots(summaries, slots_by_phase(records), peaks)


def evaluate_slots(summaries: Iterable[PointSummary], by_phase: dict[int, PhaseSlots],
                   peaks: Peaks | NodePeaks) -> dict[str, PointEfficiency]:
    """evaluate() from each phase's slots (phase_slots.py: from its records or its stored
    aggregates)."""
    peaks = peaks if isinstance(peaks, NodePeaks) else NodePeaks(peaks)
    points = [_Point(s, by_phase) for s in summaries]
    out: dict[str, PointEfficiency] = {}
    for p in points:
        pe = PointEfficiency(p.s.point, p.nodes, p.per_node)
        for metric in _candidates(p, peaks):
            if (eff := _efficiency(p, metric, peaks)) is not None:
                pe.efficiency = eff
                break
        if p.nodes and p.nodes > 1 and p.per_node:
            pe.share = _share(p, points, pe.efficiency)
        out[p.s.point] = pe
    return out


def _share(p: _Point, points: list[_Point], eff: Efficiency | None) -> Share | None:
    metric = _share_metric(p, eff)
    if metric is None:
        return None
    measured = p.figure(metric)
    for q in points:
        if q is p or q.nodes != 1 or q.per_node != p.per_node or q.pin != p.pin \
                or not _same(q.s, p.s):
            continue
        single = q.figure(metric)
        if measured is not None and single:
            return Share(metric, measured, p.nodes, single, q.s.point,
                         measured / (p.nodes * single))
    return None
