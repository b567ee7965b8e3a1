"""What a process really ran with: its cpus and memory policy read back from /proc, and how
much cpu it used (cpu time / wall time), for every record.

A plan asks for a binding; a command may change its own (numactl, taskset, an MPI launcher,
a container runtime), and a slot pinned to one core running `bwa -t 2` silently gets one
core. So records carry what /proc says, not what was asked:
  cpus_allowed   Cpus_allowed_list of the process (the slot's, or the command's at its exit)
  mems_allowed   Mems_allowed_list (the cpuset's memory nodes)
  mempolicy      the memory policy ("default", "bind:0", "preferred:1", "interleave:0-1")
                 where it can be read (the slot itself, or a command before it runs)
  cpu_time_s     user + system cpu seconds of the work (its threads and waited-for children)
  cpu_util       cpu_time_s / elapsed seconds: 1.0 = one cpu busy the whole window
  cpus_used_share  cpu_util / the number of cpus allowed: near 1 = cpu-bound at its pin
  cpus_busy_share  the share of the allowed cpus' time that was busy over the window, by
                 anyone (/proc/stat): near 1 while cpus_used_share is well below = the task
                 was slow because others took its cpus (cpu-bound at a shared pin)
"""
from __future__ import annotations

import resource
from typing import Any

from .figures import CPU_TIME, CPU_UTIL, CPUS_ALLOWED, CPUS_BUSY, CPUS_USED

# a task is "cpu-bound at its pin" when it kept this share of its allowed cpus busy
CPU_BOUND_SHARE = 0.9
# With its cpus' busy share read too: they were that busy, and others took at least this
# share of them ("cpu-bound at a shared pin"), or less (it kept them busy: "at its pin")
OTHERS_SHARE = 0.1
# the busy share is reported for windows holding at least this many ticks of the allowed
# cpus (/proc/stat counts in ticks of 10 ms: a tick either way is at most 5% of it)
MIN_STAT_TICKS = 20
PROC_STAT = "/proc/stat"


# cpu use is reported for windows at least this long: 100 x the slot's spin before T0
# (node/slot.py), whose cpu time would otherwise dominate it
MIN_CPU_NS = 30_000_000

def cpulist(ids: Any) -> str:
    """Cpu or node ids as Linux writes them: "0-3,8,10-11"."""
    xs = sorted(set(int(i) for i in ids))
    parts: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


MAX_CPU_ID = 65535   # Linux builds for at most 8192 cpus; far beyond is a typo, and costly


def parse_cpulist(text: str) -> list[int]:
    """"0-3,8" -> [0, 1, 2, 3, 8]; ValueError on anything else."""
    out: list[int] = []
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"not a cpu list: {text!r} (expected e.g. \"0-3,8\")")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a:
            raise ValueError(f"not a cpu list: {text!r} ({part}: the range runs backwards)")
        if b > MAX_CPU_ID:
            raise ValueError(f"not a cpu list: {text!r} (cpu and memory node ids go up to "
                             f"{MAX_CPU_ID})")
        out.extend(range(a, b + 1))
    if not out:
        raise ValueError(f"not a cpu list: {text!r} (empty)")
    return sorted(set(out))


def proc_binding(pid: int | str = "self") -> dict[str, str]:
    """Cpus_allowed_list and Mems_allowed_list of a process (a zombie's still readable: read
    before reaping). Empty when /proc does not say."""
    out: dict[str, str] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key == "Cpus_allowed_list":
                    out[CPUS_ALLOWED.name] = value.strip()
                elif key == "Mems_allowed_list":
                    out["mems_allowed"] = value.strip()
    except OSError:
        pass
    return out


def allowed_count(binding: dict[str, str]) -> int:
    """How many cpus a readback allows (0 when unknown)."""
    try:
        return len(parse_cpulist(binding[CPUS_ALLOWED.name]))
    except (KeyError, ValueError):
        return 0


def cpu_figures(cpu_s: float, elapsed_s: float, allowed: int) -> dict[str, float]:
    """cpu_time_s, cpu_util and cpus_used_share (see the module docstring)."""
    out: dict[str, float] = {CPU_TIME.name: round(cpu_s, 6)}
    if elapsed_s > 0:
        util = cpu_s / elapsed_s
        out[CPU_UTIL.name] = round(util, 4)
        if allowed > 0:
            out[CPUS_USED.name] = round(util / allowed, 4)
    return out


def rusage_cpu(ru: Any) -> float:
    """User + system seconds of a struct_rusage."""
    return ru.ru_utime + ru.ru_stime


def self_cpu() -> float:
    """This process's user + system seconds so far (every thread): take it before and after a
    kernel's run; the difference is the run's cpu time."""
    return rusage_cpu(resource.getrusage(resource.RUSAGE_SELF))


def cpu_bound(metrics: dict) -> bool:
    """Whether a record's process kept about all of its allowed cpus busy: it used about all
    of them, or they were about all busy and others took less than OTHERS_SHARE."""
    own = metrics.get(CPUS_USED.name)
    if isinstance(own, (int, float)) and own >= CPU_BOUND_SHARE:
        return True
    others = _saturated_others(metrics)
    return others is not None and others < OTHERS_SHARE


def cpu_shared(metrics: dict) -> bool:
    """Whether a record's allowed cpus were about all busy while it used well less and others
    took the rest: the task was slow because its cpus were shared, not used up by it."""
    others = _saturated_others(metrics)
    return others is not None and others >= OTHERS_SHARE and not cpu_bound(metrics)


def others_took(metrics: dict) -> float | None:
    """The share of a record's allowed cpus that others took over its window (busy share -
    its own), when the record says both."""
    busy, own = metrics.get(CPUS_BUSY.name), metrics.get(CPUS_USED.name)
    if not isinstance(busy, (int, float)) or not isinstance(own, (int, float)):
        return None
    return max(0.0, busy - own)


def _saturated_others(metrics: dict) -> float | None:
    """others_took when the record's cpus were about all busy (None otherwise)."""
    others = others_took(metrics)
    return others if others is not None and metrics[CPUS_BUSY.name] >= CPU_BOUND_SHARE \
        else None


def stat_text() -> str:
    """/proc/stat as it reads now ("" where it cannot be read): taken at a window's start and
    end, parsed (cpu_ticks) once the window's allowed cpus are known."""
    try:
        with open(PROC_STAT) as f:
            return f.read()
    except OSError:
        return ""


def cpu_ticks(text: str, cpus: tuple[int, ...]) -> tuple[int, int] | None:
    """(busy, total) ticks of these cpus from /proc/stat's text; None when one is missing.
    Busy: user, nice, system, irq, softirq, steal (other tasks, interrupts, the hypervisor;
    guest time is already in user and nice); total adds idle and iowait."""
    want = {f"cpu{c}" for c in cpus}
    busy = total = seen = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name not in want:
            continue
        v = [int(x) for x in rest.split()[:8]]
        if len(v) < 8:
            return None
        user, nice, system, idle, iowait, irq, softirq, steal = v
        b = user + nice + system + irq + softirq + steal
        busy += b
        total += b + idle + iowait
        seen += 1
    return (busy, total) if seen == len(want) else None


def busy_figure(before: str, after: str, allowed: str) -> dict[str, float]:
    """cpus_busy_share over a window from /proc/stat's text at its start and end, for the
    cpus a readback allows; empty when the window holds too few ticks to say."""
    try:
        cpus = tuple(parse_cpulist(allowed))
    except ValueError:
        return {}
    a, b = cpu_ticks(before, cpus), cpu_ticks(after, cpus)
    if a is None or b is None or b[1] - a[1] < MIN_STAT_TICKS:
        return {}
    return {CPUS_BUSY.name: round(min(1.0, max(0.0, (b[0] - a[0]) / (b[1] - a[1]))), 4)}
