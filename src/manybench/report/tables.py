"""What a report shows, as plain strings: run header, one table per task, errors, notes.

terminal.py and html.py only lay these out, so both show the same figures under the same
names (the DESIGN definitions: lateness, skew, sync overhead, aggregate bandwidth).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from .. import peaks as peaks_mod
from ..analysis import Dist, PointSummary, Spread, summarize
from ..analysis.efficiency import PointEfficiency, evaluate, unit
from ..store import Store
from ..units import format_duration, format_rate, format_size

MAX_ERRORS = 5  # error lines shown per table; the rest are counted
DASH = "-"
LEGEND = ("lateness = start - T0 per slot; skew = max(start) - min(start) per phase; "
          "sync overhead = last end - first start of a null phase; aggregate bandwidth = "
          "sum(bytes) / (last end - first start); stonewall = the window in which every slot "
          "ran (bytes in it estimated proportionally). Percentiles and medians are nearest-rank "
          "over records (lateness, per-slot time) or phases (skew, sync overhead, bandwidth).")


@dataclass
class Table:
    title: str
    columns: list[str]      # a "\n" marks where a terminal header may break
    rows: list[list[str]]
    keys: int = 0           # leading columns that identify a row (repeated when split)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class RunView:
    title: str
    header: list[tuple[str, str]]
    notes: list[str]
    tables: list[Table]
    legend: str = LEGEND


# -- value formatting --------------------------------------------------------------------------
def ns(x: float | None) -> str:
    return DASH if x is None else format_duration(x / 1e9)


def secs(x: float | None) -> str:
    return DASH if x is None else format_duration(x)


def count(x: float | None) -> str:
    """Counts and rates: plain below 10,000, else k/M/G with 3 significant digits."""
    if x is None:
        return DASH
    for limit, div, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(x) >= limit:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.0f}" if x == int(x) or abs(x) >= 100 else f"{x:.3g}"


def dist(d: Dist | None, f: Callable[[float | None], str], p99: bool = True) -> str:
    if d is None:
        return DASH
    parts = [d.median, d.p99, d.max] if p99 else [d.median, d.max]
    return " / ".join(f(x) for x in parts)


def spread(s: Spread | None, f: Callable[[float | None], str]) -> str:
    return DASH if s is None else " / ".join(f(x) for x in (s.min, s.median, s.max))


def rate_spread(s: Spread | None) -> str:
    """Median rate, then the range over phases in the median's unit: 1.2 GiB/s (1.1-1.3)."""
    if s is None:
        return DASH
    med = format_rate(s.median)
    if s.n == 1 or s.min == s.max:
        return med
    div = 2**30 if med.endswith("GiB/s") else 2**20
    prec = 2 if div == 2**30 else 1
    return f"{med} ({s.min / div:.{prec}f}-{s.max / div:.{prec}f})"


def _plural(n: Any, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _param_formatter(kernel: str, name: str) -> Callable[[Any], str]:
    """Show a parsed parameter the way people write it (sizes in KiB/MiB, durations in s)."""
    try:
        from ..kernels import KERNELS
        kind = KERNELS[kernel].params[name].kind
    except Exception:  # commands, unknown kernels, or a registry that failed to import
        kind = ""
    if kind == "size":
        fmt: Callable[[Any], str] = format_size
    elif kind == "duration":
        fmt = format_duration
    else:
        return lambda v: DASH if v is None else v if isinstance(v, str) else json.dumps(v, default=str)
    return lambda v: DASH if v is None else fmt(v) if isinstance(v, (int, float)) else str(v)


# -- header ------------------------------------------------------------------------------------
def _when(t_ns: int | None) -> str:
    if not t_ns:
        return DASH
    return datetime.fromtimestamp(t_ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def host_summary(env: dict) -> str:
    """One line: hostname: CPU, cpus (cores, sockets, NUMA nodes), memory, kernel, tuning."""
    g = env.get
    topo = ", ".join(_plural(g(k), label) for k, label in (
        ("physical_cores", "core"), ("sockets", "socket"), ("numa_nodes", "NUMA node"))
        if g(k) is not None)
    parts = [f"{g('cpu_model') or 'unknown CPU'}",
             f"{g('logical_cpus') or '?'} cpus" + (f" ({topo})" if topo else "")]
    if g("memory_total"):
        parts.append(f"{format_size(g('memory_total'))} memory")
    if g("kernel"):
        parts.append(f"kernel {g('kernel')}")
    if g("governor"):
        parts.append(f"governor {g('governor')}")
    if g("tuned_profile"):
        parts.append(f"tuned {g('tuned_profile')}")
    return f"{g('hostname') or 'unknown host'}: " + ", ".join(parts)


def _clock_lines(clocks: Any, warnings: list[str]) -> list[str]:
    """One line per node: clock offset to the coordinator (Cristian) and its error bound;
    nodes whose bound exceeded the plan's clock_tolerance are marked loudly."""
    if not isinstance(clocks, dict) or not clocks:
        return []
    out = []
    for node, c in sorted(clocks.items()):
        mark = "  CLOCK WARNING: bound above clock_tolerance" if node in warnings else ""
        out.append(f"clock {node}: offset {ns(c.get('offset_ns'))} "
                   f"(± {ns(c.get('error_ns'))}){mark}")
    return out


def _notes(notes: Any) -> list[str]:
    """Note lines; the coordinator's placement facts (slots, cpus, nodes, oversubscribed)
    become sentences, anything else shows as `key: value`."""
    if not notes:
        return []
    if isinstance(notes, dict):
        notes = dict(notes)
        lines = []
        slots, cpus, nodes = notes.pop("slots", None), notes.pop("cpus", None), notes.pop("nodes", None)
        over = notes.pop("oversubscribed", None)
        notes.pop("phases", None)   # shown in the header as "phases stored N of M"
        if slots is not None or over:
            line = (f"placement: {_plural(slots, 'slot') if slots is not None else 'slots'}"
                    + (f" on {_plural(cpus, 'cpu')}" if cpus is not None else ""))
            if over:
                line += (": oversubscribed, no spinning (slots sleep until T0, so expect more "
                         "lateness and skew)")
            if nodes:
                line += f"; {_plural(len(nodes), 'node')}: {', '.join(map(str, nodes))}"
            lines.append(line)
        lines += _clock_lines(notes.pop("clocks", None), notes.pop("clock_warnings", []))
        for node, why in (notes.pop("lost", None) or {}).items():
            lines.append(f"NODE LOST: {why}")
        lines += [f"{k}: {v if isinstance(v, str) else json.dumps(v, default=str)}"
                  for k, v in notes.items()]
        return lines
    if isinstance(notes, list):
        return [n if isinstance(n, str) else json.dumps(n, default=str) for n in notes]
    return [str(notes)]


def peaks_summary(p: peaks_mod.Peaks, env: dict | None = None) -> str:
    """One line: the node's peaks and any metric peaks of [peaks], each with its basis."""
    parts = []
    cpu = (env or {}).get("cpu") or {}
    clock = ("base clock read as the current cpu MHz, not the rated base"
             if str(cpu.get("base_source", "")).startswith("/proc/cpuinfo")
             and p.basis.get("base_ghz") == "detected" and "dp_gflops" not in
             {k for layer in p.overrides.values() for k in layer} else "")
    for name in peaks_mod.OUTPUTS:
        v = p.get(name)
        parts.append(f"{name} {count(v)} {peaks_mod.UNITS[name]} ({p.basis.get(name, '')})"
                     if v is not None else f"{name} unknown")
    parts += [f"{k} {v:g} ({p.basis.get(k, '[peaks]')})" for k, v in p.metric_peaks().items()]
    return "; ".join(parts + ([clock] if clock else []))


def run_peaks(run: dict) -> peaks_mod.Peaks | None:
    """The run's effective peaks: its stored environment's, the plan's [peaks] over them;
    None for a run that has neither (nothing to compare with)."""
    env = run.get("environment") or {}
    plan_peaks = (run.get("plan_raw") or {}).get("peaks") or {}
    if not (isinstance(env.get("peaks"), dict) or plan_peaks):
        return None
    return peaks_mod.for_run(env, plan_peaks)


def _header(run: dict, peaks: peaks_mod.Peaks | None = None) -> list[tuple[str, str]]:
    if run["ended_ns"]:
        duration = format_duration((run["ended_ns"] - run["started_ns"]) / 1e9)
    else:
        duration = "not ended (still running, or its process was killed)"
    rows = [("run", run["run_id"]), ("status", run["status"]),
            ("started", _when(run["started_ns"])), ("duration", duration),
            ("phases stored", str(run["phases"]) + (
                f" of {run['notes']['phases']}" if isinstance(run["notes"], dict)
                and isinstance(run["notes"].get("phases"), int) else "")),
            ("host", host_summary(run["environment"] or {}))]
    if peaks is not None:
        rows.append(("peaks", peaks_summary(peaks, run["environment"])))
    if run["argv"]:
        rows.append(("command", " ".join(map(str, run["argv"]))))
    return rows


# -- tables ------------------------------------------------------------------------------------
def _ok_cell(s: PointSummary) -> str:
    cell = f"{s.ok}/{s.records}"
    bad = [f"{n} {name}" for name, n in (("error", s.error), ("timeout", s.timeout),
                                          ("lost", s.lost)) if n]
    return cell + (f" ({', '.join(bad)})" if bad else "")


def _varying(points: list[PointSummary]) -> list[str]:
    """Parameters whose value differs between the task's points (the swept ones)."""
    keys: list[str] = []
    for s in points:
        keys += [k for k in s.params if k not in keys]
    return [k for k in keys
            if len({json.dumps(s.params.get(k), sort_keys=True, default=str) for s in points}) > 1]


def _errors(points: list[PointSummary]) -> list[str]:
    failed = [r for s in points for r in s.failed]
    lines = []
    for r in failed[:MAX_ERRORS]:
        msg = (r.error or "").strip().splitlines()
        lines.append(f"phase {r.phase} {r.node}/slot {r.slot}: {r.status}"
                     + (f": {msg[0][:200]}" if msg else ""))
    if len(failed) > MAX_ERRORS:
        lines.append(f"... and {len(failed) - MAX_ERRORS} more failed records")
    return lines


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _efficiency_columns(points: list[PointSummary], effs: dict[str, PointEfficiency]
                        ) -> tuple[list[tuple[str, Callable[[PointSummary], str]]], list[str]]:
    """The efficiency column (only when some point has a peak) and the share column (only
    when some point ran on several nodes and has a one-node peer), with their notes."""
    pe = [effs[s.point] for s in points if s.point in effs]
    cols: list[tuple[str, Callable[[PointSummary], str]]] = []
    notes: list[str] = []
    rules = list(dict.fromkeys(e.efficiency.rule for e in pe if e.efficiency))
    if rules:
        def eff_cell(s: PointSummary) -> str:
            e = effs.get(s.point)
            if e is None or e.efficiency is None:
                return DASH
            x = e.efficiency
            return f"{_pct(x.ratio)} ({count(x.measured)} of {count(x.peak)} {unit(x.metric)})"
        cols.append(("efficiency\nof peak", eff_cell))
        notes += [f"efficiency = {r}" for r in rules]
    shares = list(dict.fromkeys(e.share.metric for e in pe if e.share))
    if shares:
        def share_cell(s: PointSummary) -> str:
            e = effs.get(s.point)
            if e is None or e.share is None:
                return DASH
            return f"{_pct(e.share.ratio)} of {e.share.nodes} x {count(e.share.single)}"
        cols.append(("share of\nN x single-node", share_cell))
        notes.append(f"share of N x single-node = {', '.join(shares)} at N nodes / (N x the "
                     "same point on one node with as many workers per node)")
    if any(e.nodes and e.nodes > 1 for e in pe) and (rules or shares):
        notes.append("peaks are those of the coordinator's node; every node is taken to be alike")
    return cols, notes


def _metric_columns(points: list[PointSummary]) -> list[tuple[str, Callable]]:
    """One column per named metric the records carry (median over the point's slots)."""
    names: list[str] = []
    for s in points:
        names += [n for n in s.metrics if n not in names]
    return [(f"{n}\n(med)", lambda s, n=n: count(s.metrics.get(n))) for n in names]


def task_table(task: str, points: list[PointSummary],
               effs: dict[str, PointEfficiency] | None = None) -> Table:
    """One task's table; its columns depend on the kernel (null, command, or io/meta);
    efficiency and share columns only where a point has a peak or ran on several nodes."""
    kernel = points[0].kernel
    varying = _varying(points)
    fmts = {k: _param_formatter(kernel, k) for k in varying}
    with_variant = any(s.variant for s in points)
    cols: list[tuple[str, Callable[[PointSummary], str]]] = []
    if with_variant:
        cols.append(("variant", lambda s: s.variant or DASH))
    cols.append(("workers", lambda s: str(s.workers)))
    for k in varying:
        cols.append((k, lambda s, k=k: fmts[k](s.params[k]) if k in s.params else DASH))
    keys = len(cols)
    cols += [("phases", lambda s: str(s.phases)), ("ok", _ok_cell)]

    if kernel == "null":
        cols += [("sync overhead\nmed / p99 / max", lambda s: dist(s.sync_overhead, ns)),
                 ("skew\nmed / p99 / max", lambda s: dist(s.skew, ns)),
                 ("lateness\nmed / p99 / max", lambda s: dist(s.lateness, ns))]
    elif kernel == "command":
        cols += [("elapsed\nmin / med / max", lambda s: spread(s.slot_elapsed, secs)),
                 ("exit statuses", lambda s: ", ".join(
                     f"{code}x{n}" for code, n in sorted(s.exit_statuses.items())) or DASH)]
        cols += _metric_columns(points)
        cols += [("skew\nmed / max", lambda s: dist(s.skew, ns, p99=False)),
                 ("lateness\nmed / max", lambda s: dist(s.lateness, ns, p99=False))]
    else:
        has_bytes = any(s.bandwidth for s in points)
        cols.append(("ops/phase", lambda s: count(s.ops)))
        if has_bytes:
            cols += [("bytes/phase", lambda s: DASH if s.bytes is None else format_size(s.bytes)),
                     ("aggregate bandwidth\nmed (min-max)", lambda s: rate_spread(s.bandwidth))]
        cols.append(("aggregate\nops/s med", lambda s: count(s.ops_rate.median)
                     if s.ops_rate else DASH))
        if any(s.stonewall_bandwidth for s in points):
            cols.append(("stonewall bandwidth\nmed", lambda s: format_rate(
                s.stonewall_bandwidth.median) if s.stonewall_bandwidth else DASH))
        cols.append(("per-slot time\nmin / med / max", lambda s: spread(s.slot_elapsed, secs)))
        if any(s.latency_us for s in points):
            cols.append(("latency\np50 / p99", lambda s: " / ".join(
                DASH if s.latency_us.get(q) is None else format_duration(s.latency_us[q] / 1e6)
                for q in ("p50", "p99"))))
        cols += _metric_columns(points)      # the kernel's own figures (triad_mb_s, gflops ...)
        cols.append(("skew\nmed / max", lambda s: dist(s.skew, ns, p99=False)))

    notes = []
    eff_cols, eff_notes = _efficiency_columns(points, effs or {})
    if eff_cols:   # before skew and lateness: they belong with the figures
        at = next((i for i, (c, _) in enumerate(cols) if i >= keys and c.startswith("skew")),
                  len(cols))
        cols[at:at] = eff_cols
        notes += eff_notes
    clock = [s.clock_error_ns for s in points if s.clock_error_ns is not None]
    if clock and max(clock) > 0:   # 0: every slot read the coordinator's own clock
        notes.append(f"clock offset error bound: up to {ns(max(clock))}")
    if any(s.latency_source == "metrics" for s in points):
        notes.append("latency: median over slots of each slot's percentile (no histograms stored)")
    return Table(title=f"{task} ({kernel})", columns=[c for c, _ in cols],
                 rows=[[f(s) for _, f in cols] for s in points], keys=keys, notes=notes,
                 errors=_errors(points))


def run_view(store: Store, run: dict) -> RunView:
    """Everything the report shows for one run."""
    records = store.records(run["run_id"])
    summaries = summarize(records, store.phases(run["run_id"]))
    peaks = run_peaks(run)
    effs = evaluate(summaries, records, peaks or peaks_mod.Peaks())
    by_task: dict[str, list[PointSummary]] = {}
    for s in summaries:
        by_task.setdefault(s.task, []).append(s)
    return RunView(title=f"{run['name']} - run {run['run_id']}", header=_header(run, peaks),
                   notes=_notes(run["notes"]),
                   tables=[task_table(t, pts, effs) for t, pts in by_task.items()])


def build(store_or_dir: Store | str | os.PathLike, run_id: str | None = None,
          all_runs: bool = False) -> list[RunView]:
    """Views of the latest run of the store, of the run named, or of every run (oldest first).

    An unknown run_id raises KeyError naming the runs there are.
    """
    store = store_or_dir if isinstance(store_or_dir, Store) else Store(store_or_dir, readonly=True)
    try:
        runs = store.runs()
        if run_id is not None:
            chosen = [r for r in runs if r["run_id"] == run_id]
            if not chosen:
                raise KeyError(f"no run {run_id!r} in {store.path}; runs there: "
                               + (", ".join(r["run_id"] for r in runs) or "none"))
        else:
            chosen = runs if all_runs else runs[-1:]
        views = [run_view(store, r) for r in chosen]
        if len(runs) > 1 and not all_runs:
            for v in views:
                v.notes.append(f"this directory holds {len(runs)} runs: "
                               + ", ".join(r["run_id"] for r in runs))
        return views
    finally:
        if store is not store_or_dir:
            store.close()
