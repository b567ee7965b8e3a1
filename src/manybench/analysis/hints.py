"""Findings in plain language, each with the evidence it rests on (issue 10, item 5).

Every finder takes already-summarized data and returns Hints; none reads the store, so each
can be tested on constructed records with a known answer. The thresholds are stated here:

  flags           a figure a kernel declares as a flag (kernels/figures.py) says what the
                  point's figures mean: reads that came from the page cache, say
  memory          one node's bytes in one phase exceeded its free memory (else its total)
  at peak         a point's figure reached >= 90% of its peak (analysis/efficiency.py)
  system cpu      during a task's phases the nodes spent more time in the kernel than in
                  user code, and at least 20% of cpu time (telemetry)
  straggler       a slot (or node) whose median per-slot time has a robust z-score > 3.5
                  (Iglewicz and Hoaglin: 0.6745 (x - median) / MAD) and is >= 10% slower
  knee            (analysis/knees.py holds its numbers and judges a curve)
                  over workers, with every other parameter fixed (3 worker counts or more),
                  on the aggregate bandwidth (else ops/s) of analysis/values.py: the curve
                  falls when its last point's median is >= 10% below the best; it saturates
                  from the last worker count after which every step gained less than a
                  quarter of linear scaling. A cause is named only beyond the noise, on the
                  95% intervals of the mean over repetitions: "falls" (contention) when the
                  last point's interval lies wholly below the best's; "saturates" (the knee)
                  when the last point's interval lies wholly below a quarter of linear
                  scaling from the knee's interval. Otherwise the hint says the points do not
                  differ beyond their noise (or, where some do, that the shape is within it),
                  and with too few repetitions for an interval, that no cause can be named.
                  A curve none of whose points differs beyond the noise says so whatever its
                  medians, so one shape is judged the same wherever it appears.
  metric          a command's metric, over the ok records that ran it (failed records do not
                  empty a column): matched in none, or in some, naming the records that missed
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from ..extra_keys import MISSING_METRICS, STDERR
from ..status import OK_TEXT
from ..kernels import figures as F
from ..kernels import kernel
from ..node.wire_types import TelemetryRow
from ..record import Record
from ..units import format_duration, format_size
from . import knees
from .efficiency import PointEfficiency
from .efficiency import unit as peak_unit
from .points import PointSummary
from .stats import median
from .values import AGGREGATE, Value, point_values

AT_PEAK = 0.9
SYSTEM_SHARE = 20.0
Z_LIMIT = 3.5
SLOWER = 1.10
STRAGGLE_S = 1e-3   # a straggler is also at least this much slower (not scheduler noise)
LISTED = 4          # records a metric hint names before "and N more"

# How the report's table writes a figure, given every value of its column: (the column's
# unit, the writer of a number in it). report/findings.py gives the tables' own.
Writer = Callable[[Sequence[Value]], tuple[str, Callable[[float], str]]]


@dataclass(frozen=True)
class Hint:
    kind: str          # cached, memory, peak, system-cpu, straggler, knee, falls, noise,
    #                    repetitions, metric, stderr, cpu-bound
    task: str          # "" for the whole run
    text: str          # the finding, one sentence
    evidence: str      # the figures it rests on

    def line(self) -> str:
        return f"{self.text} (evidence: {self.evidence})"


def _size(n: float) -> str:
    for u in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or u == "TiB":
            return f"{n:.0f} {u}" if u == "B" else f"{n:.1f} {u}"
        n /= 1024
    return str(n)


def _value(kernel_name: str, key: str, v: object) -> str:
    """A parameter as plans write it: sizes in KiB/MiB, durations in s."""
    param = kernel(kernel_name).params.get(key)
    if param is not None and isinstance(v, (int, float)) and not isinstance(v, bool):
        if param.kind == "size":
            return format_size(v)
        if param.kind == "duration":
            return format_duration(v)
    return str(v)


def _where(p: PointSummary) -> str:
    parts = [f"{p.variant}"] if p.variant else []
    parts.append(f"workers={p.workers}")
    parts += [f"{k}={_value(p.kernel, k, v)}" for k, v in p.params.items()
              if k in ("block", "cache", "size")]
    return ", ".join(parts)


def flags(points: Sequence[PointSummary]) -> list[Hint]:
    """What the kernels' flag figures find (reads from the page cache, say), per point."""
    out = []
    for p in points:
        for fig in kernel(p.kernel).figures:
            v = p.metrics.get(fig.name)
            if fig.role != F.FLAG or fig.finding is None or v is None:
                continue
            found = fig.finding(v)
            if found is not None:
                out.append(Hint(fig.name, p.task, f"{p.task} ({_where(p)}): {found[0]}",
                                found[1]))
    return out


def data_exceeds_memory(records: Iterable[Record], memory: Mapping[str, float]) -> list[Hint]:
    """Per task, the first phase whose bytes on one node exceeded that node's memory."""
    per: dict[tuple[str, int, str], float] = {}
    for r in records:
        if r.status == OK_TEXT and r.bytes and kernel(r.kernel).uses_dir:
            key = (r.task, r.phase, r.node)
            per[key] = per.get(key, 0.0) + r.bytes
    return memory_hints(per, memory)


def memory_hints(per: Mapping[tuple[str, int, str], float], memory: Mapping[str, float]
                 ) -> list[Hint]:
    """data_exceeds_memory from the bytes of each (task, phase, node)'s ok records of kernels
    that use a directory."""
    out, told = [], set()
    for (task, phase, node), n in sorted(per.items(), key=lambda kv: kv[0][1]):
        mem = memory.get(node)
        if mem and n > mem and task not in told:
            told.add(task)
            out.append(Hint("memory", task, f"per-node data of {task} exceeded the free memory "
                            f"of {node}: the page cache could not hold it",
                            f"{_size(n)} on {node} in phase {phase} against {_size(mem)}"))
    return out


def at_peak(points: Sequence[PointSummary], effs: Mapping[str, PointEfficiency]) -> list[Hint]:
    out = []
    for p in points:
        e = effs.get(p.point)
        if e is not None and e.efficiency is not None and e.efficiency.ratio >= AT_PEAK:
            x = e.efficiency
            if x.above_peak:     # beyond the peak: the peak is wrong, not the device at it
                out.append(Hint("peak", p.task, f"{p.task} ({_where(p)}) measured more than "
                                "its theoretical peak: the peak is wrong (set it in [peaks])",
                                f"{x.metric} {x.measured:.4g} > a peak of {x.peak:.4g} "
                                f"{peak_unit(x.metric)} ({x.peak_name})"))
                continue
            out.append(Hint("peak", p.task, f"{p.task} ({_where(p)}) reached the device's peak: "
                            "more workers cannot go faster", f"{x.metric} {x.measured:.4g} of a "
                            f"peak of {x.peak:.4g} {peak_unit(x.metric)} "
                            f"({x.ratio * 100:.0f}%)"))
    return out


def system_cpu(phase_task: Mapping[int, str], rows: Iterable[TelemetryRow]) -> list[Hint]:
    """Per task, mean user and system cpu over the telemetry rows inside its phases, summed
    as they come (a run's rows may be millions: Store.telemetry_rows)."""
    acc: dict[str, list] = {}     # task -> [rows, user sum, system sum]
    for r in rows:
        if r.phase_id is not None and r.phase_id in phase_task:
            a = acc.setdefault(phase_task[r.phase_id], [0, 0, 0])
            a[0] += 1
            a[1] += r.cpu_user_pct
            a[2] += r.cpu_system_pct
    out = []
    for task, (n, user_sum, system_sum) in acc.items():
        user, system = user_sum / n, system_sum / n
        if system > user and system >= SYSTEM_SHARE:
            out.append(Hint("system-cpu", task, f"system cpu dominated during {task}: time "
                            "went to the kernel (syscalls, page cache, locks), not the work",
                            f"system {system:.0f}% against user {user:.0f}% over {n} "
                            "telemetry samples"))
    return out


def robust_z(values: Sequence[float]) -> list[float]:
    """0.6745 (x - median) / MAD for each value; MAD floored at 1% of |median| (no 0/0)."""
    med = median(values)
    mad = median([abs(v - med) for v in values])
    mad = max(mad, abs(med) * 0.01, 1e-12)
    return [0.6745 * (v - med) / mad for v in values]


SlotTime = tuple[str, str, int, str, str, int, float]   # point's task .. params, node, slot, s


def slot_times(records: Iterable[Record]) -> Iterable[SlotTime]:
    """Each ok record's per-slot time with its point (task, variant, workers, params as
    sorted JSON), node and slot, but those of kernels that do no work (skew tells it)."""
    for r in records:
        if r.status != OK_TEXT or kernel(r.kernel).sync_only:
            continue
        secs = r.elapsed_s if r.elapsed_s > 0 else (r.end_ns - r.start_ns) / 1e9
        yield (r.task, r.variant, r.workers, json.dumps(r.params, sort_keys=True, default=str),
               r.node, r.slot, secs)


def stragglers(points: Sequence[PointSummary], records: Iterable[Record]) -> list[Hint]:
    """Slots (and nodes) of a point whose per-slot time stands out from the others'."""
    return straggler_hints(slot_times(records))


def straggler_hints(times: Iterable[SlotTime]) -> list[Hint]:
    """stragglers() from the ok records' per-slot times (slot_times, or the store's)."""
    by_point: dict[tuple, dict[tuple[str, int], list[float]]] = {}
    for task, variant, workers, params, node, slot, secs in times:
        by_point.setdefault((task, variant, workers, params), {}).setdefault(
            (node, slot), []).append(secs)
    out = []
    for (task, _, workers, _), slots in by_point.items():
        for level, groups in (("slot", {f"{n}/slot {s}": v for (n, s), v in slots.items()}),
                              ("node", _by_node(slots))):
            if len(groups) < 3:
                continue
            names = list(groups)
            meds = [median(groups[n]) for n in names]
            mid = median(meds)
            for name, m, z in zip(names, meds, robust_z(meds)):
                if z > Z_LIMIT and m >= mid * SLOWER and m - mid >= STRAGGLE_S:
                    out.append(Hint("straggler", task, f"{level} {name} was a straggler in "
                                    f"{task} (workers={workers})",
                                    f"median time {_secs(m)} against {_secs(mid)} over its "
                                    f"{len(names)} {level}s (robust z {z:.1f})"))
    return out


def _secs(x: float) -> str:
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(x) >= f:
            return f"{x / f:.3g} {unit}"
    return f"{x * 1e9:.3g} ns"


def _by_node(slots: Mapping[tuple[str, int], list[float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for (node, _), v in slots.items():
        out.setdefault(node, []).extend(v)
    return out


def _n(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _pct(x: float) -> str:
    """A change in percent, signed, "+0%" for what rounds to nothing (not "-0%")."""
    return f"{round(x):+d}%"


def _aggregate(values: Mapping[str, list[Value]], figure: str) -> Value | None:
    return next((v for v in values.get(figure, ()) if v.scope == AGGREGATE), None)


def curve(points: Sequence[PointSummary], values: Mapping[str, Mapping[str, list[Value]]]
          ) -> tuple[str, list[tuple[int, Value]]] | None:
    """The throughput of points that differ only in workers, as the tables give it
    (analysis/values.py, by point key): (figure, [(workers, its aggregate)]), ascending."""
    for fig in (F.BANDWIDTH, F.OPS_RATE):
        xs = [(p.workers, v) for p in points
              if (v := _aggregate(values[p.point], fig.name)) is not None]
        if len(xs) == len(points) and xs:
            return fig.name, sorted(xs, key=lambda x: x[0])
    return None


def scaling(points: Sequence[PointSummary], write: Writer) -> list[Hint]:
    """Each task's curves over workers (one per setting of the other axes), judged beyond
    their noise (analysis/knees.py); evidence written as `write` gives the task's column."""
    values = {p.point: point_values(p) for p in points}
    groups: dict[tuple, list[PointSummary]] = {}
    for p in points:
        key = (p.task, p.variant, json.dumps(p.params, sort_keys=True, default=str))
        groups.setdefault(key, []).append(p)
    swept: dict[str, set[str]] = {}     # per task, the axes besides workers that vary
    for (task, _, params) in groups:
        for k, v in json.loads(params).items():
            swept.setdefault(task, set())
            if any(json.loads(q).get(k) != v for t, _, q in groups if t == task):
                swept[task].add(k)
    out = []
    for (task, variant, params), pts in groups.items():
        c = curve(pts, values)
        verdict = None if c is None else knees.judge(c[1])
        if c is None or verdict is None:
            continue
        column = [v for p in points if p.task == task
                  and (v := _aggregate(values[p.point], c[0])) is not None]
        axes = ", ".join(f"{a}={_value(pts[0].kernel, a, b)}" for a, b in
                         json.loads(params).items() if a in swept.get(task, ()))
        where = f"{task}" + (f" ({variant})" if variant else "") + (f" [{axes}]" if axes else "")
        out.append(_curve_hint(task, where, dict(c[1]), verdict, write(column)))
    return out


def _curve_hint(task: str, where: str, at: Mapping[int, Value], verdict: knees.Verdict,
                written: tuple[str, Callable[[float], str]]) -> Hint:
    """A curve's verdict in words, with the points it rests on in the table's unit."""
    unit, num = written
    ws = verdict.workers
    first, last = at[ws[0]], at[ws[-1]]
    name = f"{first.scope} {first.label}".replace("\n", " ")
    change = (last.median / first.median - 1) * 100 if first.median else 0.0
    linear = _pct(knees.linear_gain(ws[0], ws[-1]) * 100)

    def point(w: int) -> str:
        v = at[w]
        spread = "" if v.ci_low is None else f" [{num(v.ci_low)}, {num(v.ci_high)}]"
        return f"{num(v.median)}{spread} {unit} at {_n(w, 'worker')}"
    shown = ", ".join(point(w) for w in ws)
    ns = sorted({at[w].n for w in ws})
    reps = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
    over = f"95% intervals of the mean over {reps} repetitions"
    shape = (f"is {round(-change)}% lower at {_n(ws[-1], 'worker')} than at {ws[0]}"
             if verdict.shape == "falls" else
             f"gained {_pct(change)} from {ws[0]} to {_n(ws[-1], 'worker')} (linear: {linear})")
    if verdict.kind == "falls":
        return Hint("falls", task, f"{name} of {where} falls beyond {_n(ws[0], 'worker')}: "
                    "more workers contend for the same resource",
                    f"{shown} ({_pct(change)}); {over}")
    if verdict.kind == "knee":
        return Hint("knee", task, f"{name} of {where} saturates from {_n(ws[0], 'worker')} "
                    "(the knee): adding workers adds little",
                    f"{ws[0]} -> {ws[-1]} workers gave {_pct(change)} (linear: {linear}): "
                    f"{shown}; {over}")
    if verdict.kind == "repetitions":
        return Hint("repetitions", task, f"{name} of {where} {shape}, but with {reps} "
                    "repetitions a point has no 95% interval: noise cannot be told from a "
                    "cause, so none is named (repeat = 3 or more gives one)", shown)
    if not verdict.shape:
        listed = ", ".join(map(str, ws[:-1])) + f" and {ws[-1]}"
        return Hint("noise", task, f"{name} of {where}: the points at {listed} workers do not "
                    "differ beyond their noise: no cause is named",
                    f"{shown}; {over}")
    if verdict.shape == "saturates" and not knees.overlap([first, last]):
        # the points differ, but not clearly by less than a quarter of linear scaling
        quarter = _pct(knees.SATURATED * knees.linear_gain(ws[0], ws[-1]) * 100)
        return Hint("noise", task, f"{name} of {where} {shape}: whether that is under a "
                    f"quarter of linear scaling ({quarter}) is within the noise of those "
                    "points: no cause is named", f"{shown}; {over}")
    return Hint("noise", task, f"{name} of {where} {shape}, within the noise of those points: "
                "no cause is named", f"{shown}; {over}")


def _place(r: Record) -> str:
    return f"{r.node}/slot {r.slot}, phase {r.phase}"


def _listed(records: Sequence[Record]) -> str:
    more = len(records) - LISTED
    return "; ".join(map(_place, records[:LISTED])) + (f" and {more} more" if more > 0 else "")


def _said_missing(r: Record, name: str) -> bool:
    return name in ((r.extra or {}).get(MISSING_METRICS) or ())


def missing_metrics(declared: Mapping[str, Iterable[str]], records: Iterable[Record]
                    ) -> list[Hint]:
    """Command metrics (the plan's, and those records say they missed) judged on the ok
    records: a failed record's output holds no result, so its missing a metric empties no
    column. A record missed a metric when it says so (kernels/command.py): a job's other
    ranks, which neither carry the job's figures nor try, are not counted."""
    recs = list(records)
    ok: dict[str, int] = {}
    present: dict[tuple[str, str], int] = {}
    for r in recs:
        if r.status == OK_TEXT:
            ok[r.task] = ok.get(r.task, 0) + 1
            for n in r.metrics:
                present[(r.task, n)] = present.get((r.task, n), 0) + 1
    said = [r for r in recs if (r.extra or {}).get(MISSING_METRICS)]
    return missing_metric_hints(declared, said, ok, present)


def missing_metric_hints(declared: Mapping[str, Iterable[str]], said: Sequence[Record],
                         ok: Mapping[str, int], present: Mapping[tuple[str, str], int]
                         ) -> list[Hint]:
    """missing_metrics from the records that said they missed a metric (any status), each
    task's ok records counted and, per (task, metric), those of them that carry it."""
    names = {task: list(ns) for task, ns in declared.items()}
    for r in said:
        for n in (r.extra or {}).get(MISSING_METRICS) or ():
            if n not in names.setdefault(r.task, []):
                names[r.task].append(n)
    out = []
    for task, ns in names.items():
        mine = [r for r in said if r.task == task]
        if not ok.get(task):      # every record failed: their errors (and stderr) say why
            continue
        good = ok[task]
        for n in ns:
            hit = present.get((task, n), 0)
            missed = [r for r in mine if r.status == OK_TEXT and n not in r.metrics
                      and _said_missing(r, n)]
            failed = [r for r in mine if r.status != OK_TEXT and _said_missing(r, n)]
            also = f"; {_n(len(failed), 'failed record')} missed it too" if failed else ""
            if not hit:
                out.append(Hint("metric", task, f"metric {n!r} of {task} matched nothing in "
                                "any ok record: its column is empty",
                                f"none of its {_n(good, 'ok record')} carries {n}{also}"))
            elif missed:
                out.append(Hint("metric", task, f"metric {n!r} of {task} matched in {hit} of "
                                f"its {_n(hit + len(missed), 'ok record')}: the others' output "
                                "did not hold it", f"ok records that missed it: "
                                f"{_listed(missed)}{also}"))
            elif failed:
                out.append(Hint("metric", task, f"metric {n!r} matched in every ok record of "
                                f"{task} ({hit}): it missed only in the "
                                f"{_n(len(failed), 'failed record')}, whose output holds no "
                                "result", f"failed records that missed it: {_listed(failed)}"))
    return out


def stderr_failures(records: Iterable[Record]) -> list[Hint]:
    """Per task, commands that failed and wrote to stderr: the count and the last line."""
    by_task: dict[str, list[Record]] = {}
    for r in records:
        if r.status != OK_TEXT and kernel(r.kernel).runs_child and (r.extra or {}).get(STDERR):
            by_task.setdefault(r.task, []).append(r)
    out = []
    for task, rs in by_task.items():
        r = rs[0]
        last = str(r.extra[STDERR]).strip().splitlines()[-1:] or [""]
        counted = [(f.name.replace("_", " "), r.metrics[f.name])
                   for f in kernel(r.kernel).figures if f.role == F.COUNT and f.name in r.metrics]
        out.append(Hint("stderr", task, f"the command of {task} failed and wrote to stderr in "
                        f"{len(rs)} record(s): read its stderr (export) for the cause",
                        f"{r.node}/slot {r.slot}, phase {r.phase}"
                        + "".join(f", {what} {v}" for what, v in counted)
                        + f": {last[0][:160]}"))
    return out


def cpu_bound(points: Sequence[PointSummary]) -> list[Hint]:
    """Points whose slots kept about every cpu they were allowed busy, or found them kept busy
    by other load (kernels/binding.py)."""
    out = []
    for p in points:
        if p.ok and p.cpu_shared * 2 > p.ok:
            out.append(Hint("cpu-bound", p.task, f"{p.task} ({_where(p)}) was CPU-BOUND AT A "
                            f"SHARED PIN: other load on its node (processes outside the task: "
                            f"another run, a daemon, a busy loop) took "
                            f"{p.cpus_others or 0:.2f} of its cpus, so it measured a share of "
                            "them (run it on an idle node, or pin it to cpus of its own; "
                            "the shared-pin warning names what ran there)",
                            f"cpu use {p.cpu_util or 0:.2f} of the cpus allowed "
                            f"({p.cpus_allowed or '?'}), others' {p.cpus_others or 0:.2f}: "
                            f"about all busy in {p.cpu_shared} of {p.ok} records"))
        elif p.ok and p.cpu_bound * 2 > p.ok:
            out.append(Hint("cpu-bound", p.task, f"{p.task} ({_where(p)}) was CPU-BOUND AT ITS "
                            "PIN: its pin may be what limits it (try placement cpus = N or "
                            "another bind)", f"cpu use {p.cpu_util or 0:.2f} of the cpus "
                            f"allowed ({p.cpus_allowed or '?'}) in {p.cpu_bound} of {p.ok} "
                            "records"))
    return out
