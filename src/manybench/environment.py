"""Provenance of a run: what machine it ran on, collected once at the start (< 50 ms).

Every probe is allowed to fail (a file missing in a container, an odd /proc on another
architecture): the field is then None, and collect() never raises.
"""
from __future__ import annotations

import glob
import os
import platform
import socket
from typing import Any, Callable

import psutil

from . import __version__


def _safe(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # provenance is best effort; a missing probe must never stop a run
        return None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _cpu_model() -> str | None:
    text = _read("/proc/cpuinfo") or ""
    # x86 says "model name"; some ARM kernels say "Processor" or only "CPU part"
    for key in ("model name", "Processor", "cpu model", "Hardware"):
        for line in text.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == key and v.strip():
                return v.strip()
    return platform.processor() or platform.machine() or None


def _sockets() -> int | None:
    ids = {_read(p) for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id")}
    ids.discard(None)
    return len(ids) or None


def _numa_nodes() -> list[dict] | None:
    nodes = []
    for path in sorted(glob.glob("/sys/devices/system/node/node[0-9]*"),
                       key=lambda p: int(p.rsplit("node", 1)[1])):
        nodes.append({"node": int(path.rsplit("node", 1)[1]),
                      "cpus": _read(os.path.join(path, "cpulist"))})
    return nodes or None


def _os_name() -> str | None:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def collect() -> dict:
    """Host facts for the run record: hostname, cpu_model, logical_cpus, usable_cpus (this
    process's affinity), physical_cores, sockets, numa_nodes (count) and numa (cpu lists),
    memory_total, os, kernel, python, governor, tuned_profile, manybench."""
    numa = _safe(_numa_nodes)
    return {
        "hostname": _safe(socket.gethostname),
        "cpu_model": _safe(_cpu_model),
        "logical_cpus": _safe(os.cpu_count),
        "usable_cpus": _safe(lambda: len(os.sched_getaffinity(0))),
        "physical_cores": _safe(lambda: psutil.cpu_count(logical=False)),
        "sockets": _safe(_sockets),
        "numa_nodes": len(numa) if numa else None,
        "numa": numa,
        "memory_total": _safe(lambda: psutil.virtual_memory().total),
        "os": _safe(_os_name),
        "kernel": _safe(platform.release),
        "python": _safe(lambda: f"{platform.python_implementation()} {platform.python_version()}"),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "tuned_profile": _read("/etc/tuned/active_profile") or None,
        "manybench": __version__,
    }
