"""pyperf-style checks of a finished run's figures, stored as warnings (contract.WARNING_KINDS):

  unstable   a point's repetitions vary: the coefficient of variation of its headline figure
             (aggregate bandwidth, else ops/s, else the phase window) exceeds 10%
  short      a point's phases were too short to time: the median window is under 1000x the
             clock's resolution, or under 10x the start skew (the slots did not overlap much)
  not-quiet  the machine was not quiet: a cpufreq governor other than performance, turbo
             (boost) on, or, in telemetry taken during phases, cpus busier than the phase's
             own slots can explain by more than OTHER_LOAD_PCT points
  units      a command's metric stored in different units in different records (printed in
             GB/s and MB/s with no (?P<unit>...) group to convert them), or with no unit
             where its unit group captured none

Each check is a plain function of stored data, so `report` could run them on any run too.
"""
from __future__ import annotations

import time
from array import array
from collections import defaultdict
from typing import Iterable

from ..results.contract import WarningKind
from ..status import OK_TEXT
from ..analysis.aggregates import PartAgg
from ..analysis.phase_slots import PhaseSlots
from ..analysis.phase_slots import of_records as slots_of
from ..analysis.points import PointSummary
from ..analysis.run_read import read as read_run
from ..analysis.stats import HIGH_CV, Stats, median
from ..kernels import figures as F
from ..kernels.figures import UNIT_SUFFIX
from ..kernels import kernel
from ..kernels.binding import parse_cpulist
from ..node.wire_types import TelemetryRow
from ..record import Record
from ..results.store import Store
# a warning writes a value as the report's tables do (times, sizes, counts)
from ..report.formats import ns, param_formatter, plural

RESOLUTION_FACTOR = 1000    # pyperf: a timed value should be >= 1000x the clock resolution
SKEW_FACTOR = 10            # the window should dwarf the spread of the slots' starts
OTHER_LOAD_PCT = 20.0       # percentage points of cpu busy beyond the slots' own share

Found = tuple[str, str, str, str]    # kind, node, task, message


def clock_resolution_ns() -> float:
    """The coordinator's CLOCK_MONOTONIC resolution (the slots' windows are timed on it)."""
    return time.clock_getres(time.CLOCK_MONOTONIC) * 1e9


def _swept(points: list[PointSummary]) -> dict[str, set[str]]:
    """Per task, the params whose value differs between its points (the ones that name one)."""
    seen: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for s in points:
        for k, v in s.params.items():
            seen[s.task][k].add(repr(v))
    return {t: {k for k, vs in d.items() if len(vs) > 1} for t, d in seen.items()}


def _name(s: PointSummary, swept: dict[str, set[str]]) -> str:
    # parameters as the report's tables write them (block=64KiB, not 65536)
    params = " ".join(f"{k}={param_formatter(s.kernel, k)(v)}" for k, v in s.params.items()
                      if k in swept.get(s.task, ()))
    return (f"{s.task}{f' [{s.variant}]' if s.variant else ''}"
            f"{f' {params}' if params else ''} workers={s.workers}")


def _headline(s: PointSummary) -> tuple[str, Stats | None]:
    # named as the report's tables head them ("bandwidth", scope "aggregate")
    for fig, st in ((F.BANDWIDTH, s.bandwidth), (F.OPS_RATE, s.ops_rate)):
        if st is not None:
            return f"{F.SCOPE_LABEL[fig.scope]} {fig.title}", st
    return "phase window", Stats.of([f.window_ns for f in s.phase_figures if f.window_ns])


def unstable(points: list[PointSummary]) -> list[Found]:
    out, swept = [], _swept(points)
    for s in points:
        if kernel(s.kernel).sync_only:     # its window is the figure: noise by nature
            continue
        what, st = _headline(s)
        if st is not None and st.unstable:
            out.append((WarningKind.UNSTABLE, "", s.task, f"{_name(s, swept)}: {what} varies by "
                        f"{st.cv:.0%} (CV > {HIGH_CV:.0%}) over {plural(st.n, 'repetition')}: "
                        "add repetitions, a warmup, or look for interference"))
    return out


def short(points: list[PointSummary], resolution_ns: float) -> list[Found]:
    out, swept = [], _swept(points)
    for s in points:
        if kernel(s.kernel).sync_only:
            continue
        windows = [f.window_ns for f in s.phase_figures if f.window_ns is not None]
        skews = [f.skew_ns for f in s.phase_figures if f.skew_ns is not None]
        if not windows:
            continue
        w = median(windows)
        why = []
        if w < RESOLUTION_FACTOR * resolution_ns:
            why.append(f"under {RESOLUTION_FACTOR}x the clock resolution "
                       f"({ns(resolution_ns)})")
        if skews and w < SKEW_FACTOR * median(skews):
            why.append(f"under {SKEW_FACTOR}x the start skew ({ns(median(skews))})")
        if why:
            out.append((WarningKind.SHORT, "", s.task, f"{_name(s, swept)}: phases last {ns(w)}, "
                        + " and ".join(why) + ": make the work longer"))
    return out


def machine(start: dict[str, dict]) -> list[Found]:
    """From each node's start snapshot (inventory/provenance.snapshot)."""
    out = []
    for node, snap in sorted(start.items()):
        freq = ((snap or {}).get("tunables") or {}).get("cpufreq") or {}
        gov = freq.get("governor") or (snap or {}).get("governor")
        if isinstance(gov, str) and gov and gov != "performance":
            out.append((WarningKind.NOT_QUIET, node, "", f"node {node}: cpufreq governor {gov!r}, not "
                        "performance: clocks change with load"))
        if str(freq.get("boost", "")) == "1" or str(freq.get("intel_no_turbo", "")) == "0":
            out.append((WarningKind.NOT_QUIET, node, "", f"node {node}: turbo (boost) is on: clocks "
                        "depend on temperature and on how many cores are busy"))
    return out


def slot_shares(records: Iterable[Record], cpus: dict[str, int]) -> dict[str, float]:
    """Per node, percent of its cpus one phase's slots there were allowed to keep busy."""
    return phase_shares(slots_of(list(records)), cpus)


def phase_shares(slots: PhaseSlots, cpus: dict[str, int]) -> dict[str, float]:
    """slot_shares from a phase's slots (analysis/phase_slots.py): each slot counts the cpus
    it was allowed (1 when its record does not say), at most its node's."""
    used: dict[str, int] = defaultdict(int)
    for node, kinds in slots.nodes.items():
        n = cpus.get(node)
        if n is None:
            continue
        for k in kinds:
            held = len(parse_cpulist(k.allowed)) if k.allowed else 1
            used[node] += k.records * min(held, n)
    return {node: min(100.0, 100.0 * u / max(cpus[node], 1)) for node, u in used.items()}


def other_load(rows: Iterable[TelemetryRow], records: Iterable[Record],
               cpus: dict[str, int]) -> list[Found]:
    """Per node, the median over telemetry taken during phases of (busy % - the phase's
    slots' share): other load when above OTHER_LOAD_PCT."""
    return other_load_of(rows, {i: slot_shares(rs, cpus) for i, rs in _by_phase(records)},
                         cpus)


def other_load_of(rows: Iterable[TelemetryRow], shares: dict[int, dict[str, float]],
                  cpus: dict[str, int]) -> list[Found]:
    """other_load from each phase's slot_shares. The rows are taken as they come
    (Store.telemetry_rows): a node's excesses are kept as 8-byte doubles, for its median, not
    the rows (a run of 64 nodes sampled every second for 10 hours holds 2.3 M)."""
    excess: dict[str, array] = defaultdict(lambda: array("d"))
    for t in rows:
        if t.phase_id is None or t.node not in cpus:
            continue
        busy = t.cpu_user_pct + t.cpu_system_pct
        excess[t.node].append(busy - shares.get(t.phase_id, {}).get(t.node, 0.0))
    out = []
    for node, xs in sorted(excess.items()):
        m = median(xs)
        if m > OTHER_LOAD_PCT:
            out.append((WarningKind.NOT_QUIET, node, "", f"node {node}: cpus {m:.0f} points busier "
                        "during phases than its slots account for: other load ran beside "
                        "the benchmark"))
    return out


class Units:
    """Per task, the units each metric's ok records say it is stored in (kernels/command.py
    extract_metrics), taken in a phase at a time."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.named: dict[tuple[str, str], bool] = defaultdict(bool)   # some record names one

    def add_parts(self, parts: Iterable[PartAgg]) -> None:
        """The units of each part's ok records (analysis/aggregates.py: by task)."""
        for a in parts:
            for name, us in a.units.items():
                self.seen[(a.info.task, name)].update(us)
                self.named[(a.info.task, name)] |= any(us)

    def add(self, records: Iterable[Record]) -> None:
        for r in records:
            if r.status != OK_TEXT:
                continue
            for key, v in r.metrics.items():
                if key.endswith(UNIT_SUFFIX) and isinstance(v, str):
                    name = (r.task, key[:-len(UNIT_SUFFIX)])
                    self.seen[name].add(v)
                    self.named[name] |= bool(v)

    def found(self) -> list[Found]:
        """Each metric stored in different units, or in none beside a unit: its figures
        would mix them."""
        out: list[Found] = []
        for (task, name), us in sorted(self.seen.items()):
            if len(us) > 1 or not self.named[(task, name)]:
                shown = " and ".join(f"'{u}'" if u else "no unit"
                                     for u in sorted(us, reverse=True))
                out.append((WarningKind.UNITS, "", task, f"task {task}: metric {name!r} came in {shown} "
                            f"in different records: its figures mix units; capture the "
                            f"unit with a (?P<unit>...) group (MB/s, GB/s, GiB/s, ms, GFLOPS "
                            f"... are converted to one unit)"))
        return out


def units(records: Iterable[Record]) -> list[Found]:
    u = Units()
    u.add(records)
    return u.found()


def run_checks(store: Store, run_id: str, cpus: dict[str, int]) -> list[Found]:
    """Every check above on a run as stored (cpus: each node's cpu count), from its phases'
    aggregates (analysis/run_read.py): no record is read, so the end of a run of millions
    of records costs what its phases and nodes do (docs/scale.md)."""
    from ..results.contract import START      # noqa: PLC0415
    read = read_run(store, run_id, failed=False)
    shares = {idx: phase_shares(slots, cpus) for idx, slots in read.slots().items() if slots}
    seen = Units()
    seen.add_parts(read.task_parts())
    start = {s.node: s.data for s in store.snapshots(run_id, label=START)}
    return (unstable(read.summaries) + short(read.summaries, clock_resolution_ns())
            + machine(start) + other_load_of(store.telemetry_rows(run_id), shares, cpus)
            + seen.found())


def _by_phase(records: Iterable[Record]) -> list[tuple[int, list[Record]]]:
    by_phase: dict[int, list[Record]] = defaultdict(list)
    for r in records:
        by_phase[r.phase].append(r)
    return sorted(by_phase.items())
