"""The top of a run's report: what ran where (hosts, peaks, clocks), notes and warnings."""
from __future__ import annotations

from datetime import datetime

from ..analysis import late as late_mod
from ..analysis.efficiency import NodePeaks
from ..analysis.stats import nearest_rank
from ..inventory import noise as noise_mod
from ..inventory import peaks as peaks_mod
from ..results.contract import RunInfo, RunStatus, StoredNode, Warning, warning_text
from ..units import format_duration, format_size
from .formats import DASH, count, ns, plural


def _when(t_ns: int | None) -> str:
    if not t_ns:
        return DASH
    return datetime.fromtimestamp(t_ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def host_summary(env: dict) -> str:
    """One line: hostname: CPU, cpus (cores, sockets, NUMA nodes), memory, kernel, tuning."""
    g = env.get
    topo = ", ".join(plural(g(k), label) for k, label in (
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


def peaks_summary(p: peaks_mod.Peaks, env: dict | None = None) -> str:
    """One line: the node's peaks and any metric peaks of [peaks], each with its basis."""
    parts = []
    cpu = (env or {}).get("cpu") or {}
    given = {k for layer in p.overrides.values() for k in layer}
    source = str(cpu.get("base_source", ""))
    clock = ("base clock read as the current cpu MHz, not the rated base"
             if source.startswith("/proc/cpuinfo") else
             "clock measured on one busy core (no cpufreq here), not the rated base"
             if source.startswith("measured") else "")
    if p.basis.get("base_ghz") != "detected" or "dp_gflops" in given:
        clock = ""
    if str(cpu.get("flops_assumption") or "").startswith("measured") and not given:
        clock = "; ".join(filter(None, [clock, "flops per cycle " + cpu["flops_assumption"]]))
    for name in peaks_mod.OUTPUTS:
        v = p.get(name)
        parts.append(f"{name} {count(v)} {peaks_mod.UNITS[name]} ({p.basis.get(name, '')})"
                     if v is not None else f"{name} unknown")
    parts += [f"{k} {v:g} ({p.basis.get(k, '[peaks]')})" for k, v in p.metric_peaks().items()]
    return "; ".join(parts + ([clock] if clock else []))


def run_peaks(run: RunInfo, nodes: list[StoredNode]) -> NodePeaks | None:
    """Each node's effective peaks: its own inventory's (else the run's environment, the
    coordinator's), the plan's [peaks] over them; None when there is nothing to compare with."""
    plan_peaks = (run.plan_raw or {}).get("peaks") or {}
    has = lambda env: isinstance((env or {}).get("peaks"), dict)   # noqa: E731
    if not (has(run.environment) or plan_peaks or any(has(n.inventory) for n in nodes)):
        return None
    default = peaks_mod.for_run(run.environment, plan_peaks)
    return NodePeaks(default, {n.name: peaks_mod.for_run(n.inventory, plan_peaks)
                               for n in nodes if has(n.inventory)})


def _host_rows(run: RunInfo, nodes: list[StoredNode], peaks: NodePeaks | None
               ) -> list[tuple[str, str]]:
    """A host line (and a peaks line) per distinct machine the nodes ran on."""
    invs = [(n.name, n.inventory) for n in nodes if n.inventory] or [("", run.environment or {})]
    sim = [inv["simulated"] for _, inv in invs if isinstance(inv.get("simulated"), dict)]
    if sim:         # no machine: nothing to describe, no peak to hold figures against
        return [("host", f"simulated: {sim[0].get('nodes')} nodes x {sim[0].get('slots')} "
                         "slots in local processes (--simulate); records are synthetic")]
    rows: list[tuple[str, str]] = []
    seen: dict[str, list[str]] = {}
    for name, inv in invs:
        seen.setdefault(host_summary(inv), []).append(name)
    for text, names in seen.items():
        label = "host" if len(seen) == 1 else f"host {', '.join(names)}"
        rows.append((label, text))
        if peaks is not None:
            pk = peaks.of(names[0]) if names[0] else peaks.default
            env = next(inv for n, inv in invs if n == names[0])
            rows.append(("peaks" if len(seen) == 1 else f"peaks {', '.join(names)}",
                         peaks_summary(pk, env)))
    return rows


def header(run: RunInfo, nodes: list[StoredNode], peaks: NodePeaks | None) -> list[tuple[str, str]]:
    if run.ended_ns:
        duration = format_duration((run.ended_ns - run.started_ns) / 1e9)
    else:
        duration = {RunStatus.RUNNING: "not ended: still running",
                    RunStatus.KILLED: "not ended: its coordinator was killed"}.get(
            run.status, "not ended (stored before coordinators were watched: running, or "
            "its process was killed)")
    rows = [("run", run.run_id), ("status", run.status), ("started", _when(run.started_ns)),
            ("duration", duration),
            ("phases stored", str(run.phases) + (f" of {run.notes.phases}" if run.notes.phases
                                                 else ""))]
    rows += _host_rows(run, nodes, peaks)
    security = sorted({str(n.inventory["security"]) for n in nodes
                       if n.inventory and n.inventory.get("security")})
    if security:     # how a cluster was reached (engines/access.py); --insecure says so here
        rows.append(("security", "; ".join(security)))
    if run.argv:
        rows.append(("command", " ".join(map(str, run.argv))))
    return rows


def _machines(nodes: list[StoredNode]) -> list[list[StoredNode]]:
    """Groups of two or more nodes with one boot id: one machine's (namespaces, containers)."""
    by: dict[str, list[StoredNode]] = {}
    for n in nodes:
        if n.machine:
            by.setdefault(n.machine, []).append(n)
    return [same for same in by.values() if len(same) > 1]


MANY_NODES = 8        # more nodes than this: their clocks and floors summed up in a line each


def notes(run: RunInfo, nodes: list[StoredNode]) -> list[str]:
    """The run's set-up in sentences: slots, cpus, nodes; each node's clock."""
    n = run.notes
    lines = []
    shared = _machines(nodes)
    cpus = n.cpus
    if shared and n.cpus:    # a machine's cpus once, however many nodes it holds
        cpus = n.cpus - sum(sum(x.cpus for x in same) - max(x.cpus for x in same)
                            for same in shared)
    if n.slots:
        line = f"placement: {plural(n.slots, 'slot')}" + (f" on {plural(cpus, 'cpu')}"
                                                          if cpus else "")
        if n.oversubscribed:
            line += (": oversubscribed, no spinning (slots sleep until T0, so expect more "
                     "lateness and skew)")
        if nodes:
            names = ([x.name for x in nodes] if len(nodes) <= MANY_NODES
                     else [nodes[0].name, "...", nodes[-1].name])
            line += f"; {plural(len(nodes), 'node')}: {', '.join(names)}"
        lines.append(line)
    for same in shared:
        lines.append(f"nodes {', '.join(x.name for x in same)} run on one machine (boot id "
                     f"{same[0].machine[:8]}): they share its {max(x.cpus for x in same)} cpus")
    floors = [(node, f) for node in nodes if isinstance(f := (node.inventory or {}).get("noise"),
                                                        dict) and "stall_ns" in f]
    if len(nodes) > MANY_NODES:     # a line per node would bury the run's header
        return lines + _many_nodes(nodes, floors)
    for node in nodes:
        lines.append(f"clock {node.name}: offset {ns(node.offset_ns)} (± {ns(node.error_ns)})")
    for names, floor in _measurements(floors):
        shared = f"{noise_mod.whose(floor)}: " if noise_mod.whose(floor) else ""
        lines.append(f"noise floor {', '.join(names)}: {shared}{noise_mod.describe(floor)}")
    return lines


def _measurements(floors: list[tuple[StoredNode, dict]]) -> list[tuple[list[str], dict]]:
    """The floors as measured: the nodes that share one (engines/floors.py) in one entry."""
    out: dict[str, tuple[list[str], dict]] = {}
    for node, floor in floors:
        by = floor.get("measured_by") or node.name
        out.setdefault(f"{floor.get('machine', '')} {by}", ([], floor))[0].append(node.name)
    return list(out.values())


def _many_nodes(nodes: list[StoredNode], floors: list[tuple[StoredNode, dict]]) -> list[str]:
    """The nodes' clocks and noise floors in a line each: the range, and the node at its
    worst (every node's figures stay in the results: export --table nodes)."""
    lo = min(nodes, key=lambda n: n.offset_ns)
    hi = max(nodes, key=lambda n: n.offset_ns)
    worst = max(nodes, key=lambda n: n.error_ns)
    lines = [f"clocks of {len(nodes)} nodes: offsets {ns(lo.offset_ns)} ({lo.name}) to "
             f"{ns(hi.offset_ns)} ({hi.name}), bounds up to ± {ns(worst.error_ns)} "
             f"({worst.name})"]
    if floors:
        node, floor = max(floors, key=lambda nf: nf[1]["stall_ns"] or 0)
        taken = len(_measurements(floors))
        shared = f" ({plural(taken, 'measurement')})" if taken < len(floors) else ""
        whose = f" ({noise_mod.whose(floor)})" if noise_mod.whose(floor) else ""
        lines.append(f"noise floor of {len(floors)} nodes{shared}, the worst {node.name}"
                     f"{whose}: {noise_mod.describe(floor)}")
    return lines


def floor_notes(run: RunInfo, nodes: list[StoredNode], skews_ns: list[float],
                lateness_p99_ns: float | None, c: late_mod.LateCount) -> list[str]:
    """The run's start skew judged against its nodes' noise floor, and its late starts
    counted against the plan's late_target (analysis/late.py)."""
    lines = []
    floors = [f["stall_ns"] for n in nodes if isinstance(f := (n.inventory or {}).get("noise"),
                                                         dict) and f.get("stall_ns")]
    judged = noise_mod.judge(nearest_rank(skews_ns, 99) if skews_ns else None,
                             lateness_p99_ns,
                             max(floors) if floors else None)
    if judged:
        lines.append(judged)
    target = (run.plan_raw or {}).get("late_target", late_mod.DEFAULT_TARGET)
    verdict = late_mod.verdict(c, target, max(floors) if floors else None)
    if verdict:
        lines.append(verdict)
    elif c.phases:
        lines.append(f"late starts: {c.cell()} phase{'' if c.phases == 1 else 's'}, within "
                     f"the plan's late_target "
                     f"{target:.1%}")
    return lines


def warning_lines(warnings: list[Warning]) -> list[str]:
    """One line per warning, in the order they came."""
    return [warning_text(w.kind, w.message) + (f" (phase {w.phase})" if w.phase is not None
                                               else "") for w in warnings]
