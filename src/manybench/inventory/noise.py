"""A node's noise floor: what this machine does to a pinned, waiting or spinning slot.

Measured by each node's agent at the start of a run (once per machine and cpus: nodes that
share both take one measurement, engines/floors.py; and by `manybench info`), on every cpu the
slots may use at once, one pinned thread each (kernels/native/probe.c), in two halves of the
plan's `noise` duration (default 0.4 s):

  spin   read CLOCK_MONOTONIC in a loop: a gap between two reads is time the core spent on
         something else (an interrupt, another task, the hypervisor): sysjitter, hwlatdetect
  sleep  absolute 1 ms sleeps (clock_nanosleep TIMER_ABSTIME, timer slack 1 ns, as slots
         sleep until T0): how late each wake-up is: cyclictest's figure

The floor of a node is the longest stall seen (`stall_ns`: the longest gap or the latest
wake-up, whichever is longer): no start skew or lateness below it can be promised there. A node whose floor reaches STALL_NS gets a `stalls` warning with its
figures (pyperf's "the system is not quiet").
"""
from __future__ import annotations

from typing import Any, Iterable

DEFAULT_S = 0.4             # the whole measurement, spin half then sleep half
INTERVAL_NS = 1_000_000     # cyclictest's default interval
STALL_NS = 1_000_000        # a floor this long (or longer) is a `stalls` warning
METHOD = ("clock-read gaps while spinning on each cpu, then lateness of absolute 1 ms sleeps "
          "(clock_nanosleep TIMER_ABSTIME), {half:g} s each, all cpus at once")


def measure(cpus: Iterable[int], seconds: float = DEFAULT_S) -> dict[str, Any] | None:
    """The noise floor of these cpus (None when `seconds` is 0 or the C probe is missing):
    per cpu the probe's figures, and the node's summary: stall_ns (longest gap), gaps over
    100 us and 1 ms (all cpus), lost_share (time in gaps >= 10 us / spin time, worst cpu),
    wake_p50_ns, wake_p99_ns, wake_max_ns (worst cpu), seconds, method."""  # noqa: D401
    if seconds <= 0:
        return None
    try:
        from .. import _native
    except ImportError:
        return None
    cpus = list(cpus) or [-1]
    half = int(seconds * 1e9 / 2)
    per_cpu = _native.noise_floor(cpus, half, half, INTERVAL_NS)
    return summarize(per_cpu, seconds)


def summarize(per_cpu: list[dict], seconds: float) -> dict[str, Any]:
    """The node's figures from the per-cpu ones (pure: tests build per_cpu by hand)."""
    half = seconds / 2
    worst = lambda key: max((c.get(key, 0) for c in per_cpu), default=0)   # noqa: E731
    return {
        "seconds": seconds, "cpus": len(per_cpu),
        "method": METHOD.format(half=half),
        "stall_ns": max(worst("gap_max_ns"), worst("wake_max_ns")),
        "gaps_100us": sum(c.get("gaps_100us", 0) for c in per_cpu),
        "gaps_1ms": sum(c.get("gaps_1ms", 0) for c in per_cpu),
        "lost_share": round(max((c.get("lost_ns", 0) / (half * 1e9) for c in per_cpu),
                                default=0.0), 4) if half else 0.0,
        "wake_p50_ns": worst("wake_p50_ns"), "wake_p99_ns": worst("wake_p99_ns"),
        "wake_max_ns": worst("wake_max_ns"),
        "per_cpu": per_cpu,
    }


def _t(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.3g} ms"
    return f"{ns / 1e3:.3g} us"


def describe(noise: dict[str, Any]) -> str:
    """One line: the floor and its figures."""
    return (f"stalls up to {_t(noise['stall_ns'])} (clock-read gaps over 100 us: "
            f"{noise['gaps_100us']}, over 1 ms: {noise['gaps_1ms']}, in {noise['seconds'] / 2:g} s"
            f" x {noise['cpus']} cpus; worst cpu lost {noise['lost_share']:.1%}); 1 ms absolute "
            f"sleeps woke late by p50 {_t(noise['wake_p50_ns'])}, p99 {_t(noise['wake_p99_ns'])}"
            f", max {_t(noise['wake_max_ns'])}")


def whose(noise: dict[str, Any]) -> str:
    """Where a floor shared by the nodes of one machine and cpus came from (engines/floors.py),
    in words; "" for a node's own."""
    by = noise.get("measured_by")
    if not by:
        return ""
    return (f"one machine's floor, boot id {str(noise.get('machine', ''))[:8]}, measured once by "
            f"node {by} for its {noise.get('nodes', '?')} nodes on the same cpus")


def stalls(node: str, noise: dict[str, Any] | None) -> str | None:
    """The `stalls` warning's text for a node whose floor reaches STALL_NS, else None: one
    per measurement, on the node that took it (a shared floor is warned of once)."""
    if not noise or noise.get("stall_ns", 0) < STALL_NS:
        return None
    if noise.get("measured_by", node) != node:
        return None
    shared = f" ({whose(noise)})" if whose(noise) else ""
    return (f"node {node}{shared} {describe(noise)}: start skew and lateness below "
            f"{_t(noise['stall_ns'])} cannot be promised here")


def worst_stall_ns(inventories: Iterable[dict[str, Any] | None]) -> int:
    """The longest stall the nodes' noise floors saw (0: none measured)."""
    return max((int(f["stall_ns"]) for inv in inventories
                if isinstance(f := (inv or {}).get("noise"), dict)
                and isinstance(f.get("stall_ns"), (int, float))), default=0)


def judge(skew_p99_ns: float | None, late_p99_ns: float | None, floor_ns: float | None
          ) -> str | None:
    """A run's start skew and lateness against its nodes' floor, in words ("skew p99 4.6 ms;
    this node stalls up to 11 ms: the floor here")."""
    if not floor_ns or (skew_p99_ns is None and late_p99_ns is None):
        return None
    figs = [f"{name} p99 {_t(v)}" for name, v in (("skew", skew_p99_ns),
                                                   ("lateness", late_p99_ns)) if v is not None]
    worst = max(v for v in (skew_p99_ns, late_p99_ns) if v is not None)
    if worst <= floor_ns:
        return f"{', '.join(figs)}; this node stalls up to {_t(floor_ns)}: the floor here"
    return (f"{', '.join(figs)}: above the nodes' noise floor ({_t(floor_ns)} stalls), so not "
            "the machine's noise alone: look at the start itself (lead, shared cpus)")
