"""The node's settings a benchmark's figures depend on and an admin changes: transparent huge
pages, cpufreq (driver, governor, turbo), cpuidle, SMT, the tuned profile, the sysctls a
storage or HPC engineer checks first, and the kernel command line (isolcpus, nohz_full,
mitigations).

Only files are read (sysfs, procfs, /etc/tuned): a few dozen small reads, well under 10 ms,
so it runs at every snapshot. A setting this kernel does not have is left out (absent key),
never an error: collect() never raises.
"""
from __future__ import annotations

import glob
import os
import re

SYSCTLS = (
    "vm.swappiness", "vm.dirty_ratio", "vm.dirty_background_ratio", "vm.dirty_bytes",
    "vm.dirty_background_bytes", "vm.dirty_expire_centisecs", "vm.dirty_writeback_centisecs",
    "vm.zone_reclaim_mode", "vm.overcommit_memory", "vm.min_free_kbytes",
    "vm.vfs_cache_pressure", "vm.nr_hugepages", "kernel.numa_balancing",
    "kernel.sched_autogroup_enabled", "kernel.randomize_va_space", "net.core.rmem_max",
    "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "fs.file-max",
)

THP = "/sys/kernel/mm/transparent_hugepage/"
CPU = "/sys/devices/system/cpu/"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def selected(text: str | None) -> str | None:
    """The bracketed choice of a sysfs selector ("always [madvise] never" -> "madvise"); the
    text itself when it has no brackets (some kernels print only the value)."""
    if text is None:
        return None
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else text


def _put(out: dict, key: str, value: object) -> None:
    # absent, not None: a diff then says "only in A" rather than a change to None
    if value is not None:
        out[key] = value


def thp() -> dict:
    out: dict = {}
    for name in ("enabled", "defrag", "shmem_enabled"):
        _put(out, name, selected(_read(THP + name)))
    _put(out, "khugepaged_defrag", _read(THP + "khugepaged/defrag"))
    return out


def _per_cpu(name: str) -> str | None:
    """A cpufreq file's value over every cpu: the value when all agree, else each distinct
    value with its cpus ("performance: 0-3; powersave: 4-7" reads as the mixed state it is)."""
    by_value: dict[str, list[int]] = {}
    for path in glob.glob(CPU + "cpu[0-9]*/cpufreq/" + name):
        v = _read(path)
        if v is not None:
            cpu = int(path[len(CPU) + 3:].split("/", 1)[0])
            by_value.setdefault(v, []).append(cpu)
    if len(by_value) <= 1:
        return next(iter(by_value), None)
    return "; ".join(f"{v}: {_ranges(sorted(c))}" for v, c in sorted(by_value.items()))


def _ranges(cpus: list[int]) -> str:
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)


def cpufreq() -> dict:
    out: dict = {}
    _put(out, "driver", _read(CPU + "cpu0/cpufreq/scaling_driver"))
    _put(out, "governor", _per_cpu("scaling_governor"))
    _put(out, "energy_performance_preference", _per_cpu("energy_performance_preference"))
    _put(out, "scaling_min_khz", _per_cpu("scaling_min_freq"))
    _put(out, "scaling_max_khz", _per_cpu("scaling_max_freq"))
    _put(out, "boost", _read(CPU + "cpufreq/boost"))                 # acpi-cpufreq, amd
    _put(out, "intel_no_turbo", _read(CPU + "intel_pstate/no_turbo"))
    _put(out, "intel_pstate", _read(CPU + "intel_pstate/status"))
    return out


def tuned() -> dict:
    """tuned's profile as tuned itself records it (what `tuned-adm active` reports, without
    starting a Python interpreter and a D-Bus round trip at every snapshot)."""
    out: dict = {}
    _put(out, "profile", _read("/etc/tuned/active_profile") or None)
    _put(out, "mode", _read("/etc/tuned/profile_mode") or None)
    if os.path.isdir("/etc/tuned"):
        out["daemon"] = os.path.exists("/run/tuned/tuned.pid")
    return out


def sysctls() -> dict:
    out: dict = {}
    for name in SYSCTLS:
        v = _read("/proc/sys/" + name.replace(".", "/"))
        # tcp_rmem is "4096\t131072\t6291456": one space between the numbers
        _put(out, name, " ".join(v.split()) if v is not None else None)
    return out


def collect() -> dict:
    """thp, cpufreq, cpuidle, smt, tuned, sysctl, cmdline; each part only with what exists."""
    out: dict = {"thp": thp(), "cpufreq": cpufreq(), "tuned": tuned(), "sysctl": sysctls()}
    idle: dict = {}
    _put(idle, "driver", _read(CPU + "cpuidle/current_driver"))
    _put(idle, "governor", _read(CPU + "cpuidle/current_governor"))
    out["cpuidle"] = idle
    _put(out, "smt", _read(CPU + "smt/control"))
    _put(out, "isolated", _read(CPU + "isolated") or None)
    _put(out, "cmdline", _read("/proc/cmdline"))
    return out
