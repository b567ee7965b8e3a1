"""[reference]: a run's figures against the values a cluster's CI expects (ReFrame's bounds).

`"write.mb_s" = { value = 1800, lower = -0.05, upper = 0.20 }` passes when
value x (1 + lower) <= measured <= value x (1 + upper); a bound left out is unbounded.
A list of such tables with `at = { workers = 4, block = "1MiB", variant = "host" }` gives
per-point references: `at` picks the points by any parameter, workers, variant or placement
axis (values as the plan writes them: "1MiB" matches a block of 1048576 bytes). A point
matched by several takes the most specific (most `at` keys; the first of equals).

The figure (`task.FIGURE`), measured per point as the median (nearest rank) over its phases
of a per-phase figure:
  mb_s, bandwidth_mb_s   aggregate bandwidth in MB/s (10^6 B/s): sum(bytes) / window
  ops_s, ops_per_s       aggregate ops/s: sum(ops) / window
  elapsed_s              the phase's window (last end - first start), seconds
  sync_overhead_us       sync overhead (the window of a sync-only phase: null), microseconds
  skew_us                skew (max start - min start), microseconds
  any other name         a metric the records carry: summed over the phase's slots, which
                         ran at the same instant, when its kernel declares it so (`sums`,
                         kernels/figures.py) or, undeclared, its name ends as a rate's
                         (rates.py); any other metric the median over them
These names win over a metric of the same name (randio's and net.stream's per-slot mb_s:
summed, it is about the aggregate anyway).

A reference fails when the figure is out of bounds at a point, or when a point it applies to
has no value for it (every phase failed, a metric never extracted): a figure that was not
measured cannot pass a CI gate. A reference whose `at` matches no point of the run (a worker
count the run did not sweep) is reported as "not run" and fails nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..kernels import kernel
from .aggregates import PartAgg
from .compare import RunData, split_key
from .rates import summed
from .phase_figures import NS, PhaseFigures
from .points import PointSummary
from .stats import median

PASS, FAIL, NOT_RUN = "pass", "FAIL", "not run"

# figure name -> (what it is, per-phase value from the phase's figures)
AGGREGATES: dict[str, tuple[str, Callable[[PhaseFigures], float | None]]] = {
    "mb_s": ("aggregate bandwidth, MB/s",
             lambda f: f.bandwidth / 1e6 if f.bandwidth is not None and f.bytes else None),
    "ops_s": ("aggregate ops/s", lambda f: f.ops_rate if f.ops_rate is not None and f.ops
              else None),
    "elapsed_s": ("elapsed (last end - first start), s",
                  lambda f: f.window_ns / NS if f.window_ns is not None else None),
    "sync_overhead_us": ("sync overhead, us", lambda f: f.sync_overhead_ns / 1e3
                         if f.sync_overhead_ns is not None else None),
    "skew_us": ("skew, us", lambda f: f.skew_ns / 1e3 if f.skew_ns is not None else None),
}
ALIASES = {"bandwidth_mb_s": "mb_s", "ops_per_s": "ops_s"}   # the names [peaks] uses
AT_AXES = ("workers", "variant", "order", "pin", "cpus", "bind")


def figure_names() -> list[str]:
    return [*AGGREGATES, *ALIASES]


@dataclass
class RefCheck:
    key: str                      # "task.figure"
    value: float
    lower: float | None
    upper: float | None
    at: dict[str, Any]
    status: str                   # PASS | FAIL | NOT_RUN
    point: PointSummary | None = None
    measured: float | None = None
    why: str = ""                 # for FAIL without a value, NOT_RUN

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        lo = None if self.lower is None else self.value * (1 + self.lower)
        hi = None if self.upper is None else self.value * (1 + self.upper)
        return lo, hi

    def expected(self) -> str:
        lo, hi = self.bounds
        return (f"{self.value:g} [{'-inf' if lo is None else f'{lo:g}'}, "
                f"{'+inf' if hi is None else f'{hi:g}'}]")

    def where(self) -> str:
        """The point, as `workers=4 block=1048576 variant=host`."""
        if self.point is None:
            return " ".join(f"{k}={v}" for k, v in self.at.items()) or "every point"
        s = self.point
        parts = [f"workers={s.workers}"] + [f"{k}={v}" for k, v in s.params.items()
                                            if k != "dir"]
        return " ".join(parts + ([f"variant={s.variant}"] if s.variant else []))

    def line(self) -> str:
        """One line for stderr and notes."""
        got = (f"measured {self.measured:g}" if self.measured is not None else self.why)
        return f"{self.key} at {self.where()}: {got}, expected {self.expected()}"


def _items(raw: Any) -> list[dict]:
    items = raw if isinstance(raw, list) else [raw]
    return [dict(i) for i in items if isinstance(i, dict) and _num(i.get("value"))]


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _same(kernel_name: str, name: str, want: Any, got: Any) -> bool:
    """An `at` value against a point's: as parsed by the kernel's parameter (sizes, durations),
    else equal as given, as numbers or as text."""
    p = kernel(kernel_name).params.get(name)
    if p is not None:
        try:
            want = p.parse(want)
        except (ValueError, TypeError):
            pass
    if want == got or str(want) == str(got):
        return True
    try:
        return float(want) == float(got)
    except (TypeError, ValueError):
        return False


def matches(s: PointSummary, at: dict[str, Any]) -> bool:
    key, _ = split_key(s.point)
    for name, want in at.items():
        if name == "workers":
            got: Any = s.workers
        elif name == "variant":
            got = s.variant
        elif name in s.params:
            got = s.params[name]
        elif name in key:             # placement axes the task does not sweep
            got = key[name]
        else:
            return False
        if not _same(s.kernel, name, want, got):
            return False
    return True


def phase_value(figure: str, f: PhaseFigures, parts: Sequence[PartAgg]) -> float | None:
    """The figure in one phase: an aggregate as its figures hold it, a metric summed over its
    ok records where it sums, else their median (parts: the phase's aggregates)."""
    figure = ALIASES.get(figure, figure)
    if figure in AGGREGATES:
        return AGGREGATES[figure][1](f) if f.ok else None
    whole = parts[0] if parts else None
    vals = whole.metrics.get(figure) if whole is not None else None
    if vals is None or not vals.n:
        return None
    kernel_name = whole.kernels[0] if whole.kernels else whole.info.kernel
    return float(whole.sums[figure]) if summed(kernel_name, figure) else float(vals.median())


def measure(run: RunData, s: PointSummary, figure: str) -> float | None:
    """The point's figure: the median over its phases of the per-phase figure."""
    vals = [v for f in s.phase_figures
            if (v := phase_value(figure, f, run.parts.get(f.index, ()))) is not None]
    return float(median(vals)) if vals else None


def evaluate(run: RunData, reference: dict | None = None) -> list[RefCheck]:
    """Every reference of the run's plan (or `reference`) checked at the points it applies to."""
    reference = run.info.plan_raw.get("reference") if reference is None else reference
    out: list[RefCheck] = []
    for key, raw in (reference or {}).items():
        task, _, figure = str(key).rpartition(".")
        items = _items(raw)
        used = [False] * len(items)
        for s in run.summaries:
            if s.task != task:
                continue
            found = [(len(it.get("at") or {}), -i) for i, it in enumerate(items)
                     if matches(s, it.get("at") or {})]
            if not found:
                continue
            i = -max(found)[1]
            used[i] = True
            out.append(_check(run, key, items[i], s, figure))
        for i, it in enumerate(items):
            if not used[i]:
                out.append(_ref(key, it, NOT_RUN, why="no point of the run matches"))
    return out


def _ref(key: str, it: dict, status: str, **kw: Any) -> RefCheck:
    return RefCheck(key, float(it["value"]), it.get("lower"), it.get("upper"),
                    dict(it.get("at") or {}), status, **kw)


def _check(run: RunData, key: str, it: dict, s: PointSummary, figure: str) -> RefCheck:
    v = measure(run, s, figure)
    if v is None:
        why = ("no phase had an ok record" if not s.ok else
               f"not measured (no {figure} in the records)")
        return _ref(key, it, FAIL, point=s, why=why)
    lo = None if it.get("lower") is None else it["value"] * (1 + it["lower"])
    hi = None if it.get("upper") is None else it["value"] * (1 + it["upper"])
    ok = (lo is None or v >= lo) and (hi is None or v <= hi)
    return _ref(key, it, PASS if ok else FAIL, point=s, measured=v)


def failures(checks: list[RefCheck]) -> list[RefCheck]:
    return [c for c in checks if c.status == FAIL]


def check_directory(directory: str, run_id: str) -> list[RefCheck]:
    """The references of a stored run checked (an empty list when its plan has none)."""
    from ..results.store import Store
    from .compare import load
    with Store(directory, readonly=True) as store:
        info = store.run(run_id)
        if not info.plan_raw.get("reference"):
            return []
        return evaluate(load(store, info))
