"""A point's headline figure: the first figure the report's table of its task shows, as
analysis/values.py makes it (the Value `report --json` gives), and that figure in each
repetition (phase), which comparisons need. `history` and `compare` show it; the report's
compact table (report/headline.py) orders its columns by the same names.

Headline names: the kernel's declared `headline` figures (kernels/figures.py), else a
command's extracted metrics then its per-slot time then the figures its kernel declares (an
MPI job's skew), else aggregate bandwidth and ops/s then the metrics, else the metrics then
the per-slot time. A point's headline figure is the first
of these it has a Value for, and its first Value (the aggregate of a figure summed over the
slots, else the figure's own scope).
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..kernels import figures as F
from ..kernels import kernel
from .aggregates import LATENESS, SLOT_S, PartAgg
from .phase_figures import NS, PhaseFigures
from .points import PointSummary
from .rates import summed
from .values import Value, metric_unit

Values = dict[str, list[Value]]     # a point's figures by name (values.point_values)


def metric_names(points: list[PointSummary]) -> list[str]:
    """The metrics of the points that are figures of their own (not flags, not hidden)."""
    names: list[str] = []
    for p in points:
        k = kernel(p.kernel)
        for n in p.metrics:
            f = k.figure(n)
            if n not in names and (f is None or f.role == F.FIGURE):
                names.append(n)
    return names


def headline_names(points: list[PointSummary]) -> list[str]:
    """A task's headline: its kernel's, else a command's metrics, else throughput or time."""
    traits = kernel(points[0].kernel)
    if traits.headline:
        return list(traits.headline)
    names = metric_names(points)
    if traits.runs_child:
        # the program's own figures, then its time; the kernel's (an MPI job's skew) after
        declared = {f.name for f in traits.figures}
        own = [n for n in names if n not in declared]
        return own + [F.ELAPSED.name] + [n for n in names if n not in own]
    return [F.BANDWIDTH.name, F.OPS_RATE.name] + names if any(p.ops_rate for p in points) \
        else names + [F.ELAPSED.name]


def headline(p: PointSummary, values: Values) -> Value | None:
    """The point's headline figure (None: it has none, every phase failed)."""
    return next((values[n][0] for n in headline_names([p]) if values.get(n)), None)


def direction(v: Value) -> str:
    """Which way the figure is better: as declared, else as its unit says (a rate higher, a
    time lower); "" when neither tells (a plain number a command printed)."""
    if v.direction:
        return v.direction
    if v.unit == "s":
        return F.LOWER
    if v.unit.endswith("/s") or v.unit.endswith("FLOPS"):
        return F.HIGHER
    return ""


def _ns(x: float | None) -> float | None:
    return None if x is None else x / NS


# per phase, the computed figures in the unit values.py gives them (latency, merged over all
# of a point's operations, has none: a comparison goes on to the next figure)
_COMPUTED: dict[str, Callable[[PhaseFigures], float | None]] = {
    F.BANDWIDTH.name: lambda f: f.bandwidth,
    F.OPS_RATE.name: lambda f: f.ops_rate,
    F.STONEWALL.name: lambda f: f.stonewall_bandwidth,
    F.SYNC_OVERHEAD.name: lambda f: _ns(f.sync_overhead_ns),
    F.CYCLE.name: lambda f: _ns(f.cycle_ns),
    F.SKEW.name: lambda f: _ns(f.skew_ns),
}


def per_phase(name: str) -> bool:
    """Whether a figure has a value per phase (phase_value), so that it can be compared."""
    return name != F.LATENCY.name


def phase_value(p: PointSummary, name: str, f: PhaseFigures, parts: Sequence[PartAgg]
                ) -> float | None:
    """The figure in one phase of the point, in its Value's unit: a computed figure as the
    phase's figures hold it; lateness the median over the point's ok records in it;
    per-slot time the median over the phase's ok records; a metric summed over them where
    it sums, else their median. None: no ok record, or no value. parts: the phase's
    aggregates (Store.aggregates), its own part first."""
    if not f.ok or not per_phase(name) or not parts:
        return None
    if name in _COMPUTED:
        return _COMPUTED[name](f)
    whole = parts[0]
    if name == F.LATENESS.name:
        own = next((a for a in parts if a.info.point == p.point), whole).over.get(LATENESS)
        return _ns(own.median()) if own is not None and own.n else None
    if name == F.ELAPSED.name:
        times = whole.over.get(SLOT_S)
        return times.median() if times is not None and times.n else None
    vals = whole.metrics.get(name)
    if vals is None or not vals.n:
        return None
    _, factor = metric_unit(p.kernel, name, p.units)
    return (whole.sums[name] if summed(p.kernel, name) else vals.median()) * factor
