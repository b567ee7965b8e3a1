"""A node's inventory: what machine it is, collected on the node itself (< 50 ms).

Every probe is allowed to fail as a foreign machine makes it fail (a file missing in a
container, an odd /proc on another architecture, a tool that hangs: PROBE_ERRORS): the field
is then None. Any other error is a bug of ours and is raised.

collect() also holds the node's theoretical peaks (peaks.py: DP GFLOPS from cores, clock and
flops per cycle; memory bandwidth from channels and transfer rate when the firmware tables say
so), so stored results carry the peaks of the machine they ran on. Each node's agent collects
its own at the start of a run (results: the nodes table), and the coordinator its own (the
run's environment). `manybench info` prints it (info.py).
"""
from __future__ import annotations

import functools
import glob
import os
import platform
import socket
import subprocess
from typing import Any, Callable

import psutil

from .. import __version__, config
from . import clock_keep, network, peaks, topology, tunables
from .cpu_peak import (MEASURED_CLOCK, CoreFlops, Measured, core_flops, frequencies,
                       parse_cpuinfo)
from .memory_peak import memory_channels, parse_dmi_memory_device

# the one-core probes: the best of many short chunks (a chunk the core was not taken from:
# the others are slowed by load), ~40 ms per probe
PROBE_NS, PROBE_CHUNKS = 1_000_000, 40


# what reading a machine can raise: files and tools missing or refused, text or tables in
# another shape than expected, a tool that hangs or fails, a process gone (psutil)
PROBE_ERRORS = (OSError, ValueError, LookupError, ArithmeticError, subprocess.SubprocessError,
                psutil.Error)


def _safe(fn: Callable[[], Any]) -> Any:
    """fn(), or None when this machine does not let it read what it reads."""
    try:
        return fn()
    except PROBE_ERRORS:
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
    """Per NUMA node: cpus (the cpulist text, "0-15"), memory_total (bytes) and distances (the row of the
    `numactl -H` matrix: this node to every node, in node order)."""
    nodes = []
    for path in sorted(glob.glob("/sys/devices/system/node/node[0-9]*"),
                       key=lambda p: int(p.rsplit("node", 1)[1])):
        nodes.append({"node": int(path.rsplit("node", 1)[1]),
                      "cpus": _read(os.path.join(path, "cpulist")),
                      "memory_total": _safe(lambda: _node_memory(path)),
                      "distances": _safe(lambda: [int(x) for x in (_read(
                          os.path.join(path, "distance")) or "").split()] or None)})
    return nodes or None


def _node_memory(path: str) -> int | None:
    for line in (_read(os.path.join(path, "meminfo")) or "").splitlines():
        parts = line.split()   # "Node 0 MemTotal:  6121688 kB"
        if len(parts) >= 4 and parts[2] == "MemTotal:":
            return int(parts[3]) * (1024 if parts[4:5] == ["kB"] else 1)
    return None


def _physical_cores() -> int | None:
    n = psutil.cpu_count(logical=False)
    if n:
        return n
    cores = {(_read(os.path.join(p, "physical_package_id")), _read(os.path.join(p, "core_id")))
             for p in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology")}
    return len(cores) or None


def _smt_siblings() -> list[str] | None:
    """The hardware threads of each physical core that has more than one, as cpulists
    ("0,64"): which cpus of a slot's are one core (analysis/efficiency.py). [] without SMT."""
    groups = {_read(p) for p in glob.glob(
        "/sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list")}
    groups.discard(None)
    if not groups:
        return None
    many = [g for g in groups if len(topology.parse_cpulist(g)) > 1]
    return sorted(many, key=lambda g: topology.parse_cpulist(g)[0])


def _cpufreq() -> dict:
    """base_frequency and cpuinfo_max_freq (kHz) and the driver, from cpu0's cpufreq."""
    base = "/sys/devices/system/cpu/cpu0/cpufreq/"

    def khz(name: str) -> int | None:
        v = _read(base + name)
        return int(v) if v and v.isdigit() else None
    return {"base_khz": khz("base_frequency"), "max_khz": khz("cpuinfo_max_freq"),
            "driver": _read(base + "scaling_driver")}


def _dimms() -> list[dict]:
    """Installed memory devices from the SMBIOS tables (readable by root only, and not in
    every container or VM): what dmidecode -t 17 shows."""
    out = []
    for path in glob.glob("/sys/firmware/dmi/entries/17-*/raw"):
        try:
            with open(path, "rb") as f:
                d = parse_dmi_memory_device(f.read())
        except OSError:
            continue
        if d:
            out.append(d)
    return out


@functools.lru_cache(maxsize=1)
def _probe(fma: bool) -> Measured | None:
    """One busy core's clock, and its FMA throughput when `fma` (kernels/native/probe.c;
    about 40 ms, 160 ms with FMA; once per process)."""
    try:
        from .. import _native
    except ImportError:
        return None
    ghz = _native.probe_clock(PROBE_NS, PROBE_CHUNKS)
    g = _native.probe_fma(PROBE_NS, PROBE_CHUNKS) if fma else (0.0,) * 4
    return Measured(ghz, dict(zip((64, 128, 256, 512), g))) if ghz > 0 else None


_KEPT: list[Measured] = []     # the measurement this process added to the kept clock


def _kept(measured: Measured) -> clock_keep.Kept:
    """The kept clock with this measurement in it: added once (under the file's machine-wide
    lock, synced: 64 nodes' collects queued up to 0.5 s behind it at a run's start, twice),
    read after, so the count is of measurements, not of collect() calls."""
    again = bool(_KEPT) and _KEPT[0] is measured
    kept = clock_keep.keep(round(measured.ghz, 3), again=again)
    if kept.path is not None:
        _KEPT[:] = [measured]
    return kept


def _cpu_facts() -> tuple[dict, int | None, CoreFlops, dict, bool, bool]:
    """/proc/cpuinfo's facts, SVE bits, the flops table's entry, cpufreq's clocks, and
    whether the probe must measure the FMA pipes (the table does not know the CPU) or the
    clock (cpufreq gives none)."""
    info = parse_cpuinfo(_read("/proc/cpuinfo") or "")
    sve = _read("/proc/sys/abi/sve_default_vector_length")
    sve_bits = int(sve) * 8 if sve and sve.isdigit() else None
    flops = core_flops(info, sve_bits)
    freq = _safe(_cpufreq) or {}
    return (info, sve_bits, flops, freq, flops.assumption is not None,
            not (freq.get("base_khz") or freq.get("max_khz")))


def warm() -> None:
    """Take this process's one probe (_probe) now if collect() will want it, and keep its
    clock: a process started ahead of a run (a Dask worker, the idle agent) pays them while
    it waits, not at the run's start, where 64 nodes' probes on 2 cpus took ~1.3 s of the
    Info round and again of the start's snapshot (2.4 cpu-s each)."""
    unknown_fma, weak_clock = _cpu_facts()[4:]
    measured = _safe(lambda: _probe(unknown_fma)) if unknown_fma or weak_clock else None
    if measured and weak_clock:
        _kept(measured)


def _cpu_and_peaks(env: dict) -> tuple[dict, dict]:
    """The CPU's SIMD/FMA/clock facts and the node's peaks (peaks.py) for collect(). Where
    the table does not know the CPU or cpufreq does not give its clocks, one core is measured
    (the source says so)."""
    info, sve_bits, flops, freq, unknown_fma, weak_clock = _cpu_facts()
    measured = _safe(lambda: _probe(unknown_fma)) if unknown_fma or weak_clock else None
    if measured and unknown_fma:
        flops = core_flops(info, sve_bits, measured)
    # one measurement moves with the load: the highest since boot (clock_keep.py) stands,
    # to 0.1 GHz as clocks are rated, so runs on one machine keep the same peaks
    kept = _kept(measured) if measured and weak_clock else None
    base, bsrc, mx, msrc = frequencies(
        info["model_name"], info["mhz"], **freq,
        measured_ghz=round(kept.ghz, 1) if kept else None,
        measured_source=kept.source(MEASURED_CLOCK) if kept else MEASURED_CLOCK)
    channels, rate, msource = memory_channels(_safe(_dimms) or [])
    probe = None
    if measured:
        probe = {"ghz": round(measured.ghz, 3),
                 "gflops": {str(k): round(v, 2) for k, v in measured.gflops.items()}}
        if kept:
            probe.update(kept_ghz=round(kept.ghz, 3), measurements=kept.count,
                         kept_in=kept.path)
    cpu = {"vendor": info["vendor"], "family": info["family"], "model": info["model"],
           "probe": probe,
           "microarch": flops.microarch, "simd": flops.isa, "simd_bits": flops.simd_bits,
           "fma": flops.fma, "fma_units": flops.units, "fma_width_bits": flops.width_bits,
           "dp_flops_per_cycle": flops.flops_per_cycle,
           "sp_flops_per_cycle": flops.sp_flops_per_cycle, "flops_assumption": flops.assumption,
           "base_mhz": round(base * 1e3, 1) if base else None, "base_source": bsrc,
           "max_mhz": round(mx * 1e3, 1) if mx else None, "max_source": msrc,
           "memory_channels": channels, "memory_mt_s": rate, "memory_source": msource}
    detected = {"cores": env.get("physical_cores"), "base_ghz": base, "max_ghz": mx,
                "dp_flops_per_cycle": flops.flops_per_cycle,
                "sp_flops_per_cycle": flops.sp_flops_per_cycle, "mem_channels": channels,
                "mem_mt_s": rate}
    over = peaks.parse_env_override(os.environ.get(peaks.ENV_VAR))
    return cpu, peaks.derive(detected, (peaks.ENV_VAR, over),
                             measured=peaks.measured_inputs(cpu)).as_dict()


def _build() -> dict | None:
    """How this install's C kernels were built (compiler, flags: setup.py; the clone of the
    hot loops this cpu runs) and the cpu flags the build requires (build_isa.json), or None."""
    from .. import build_isa
    try:
        from .. import _native
    except ImportError:
        return None
    return {**_native.build_info(), "requires": build_isa.build_isa().get("flags", [])}


def _os_name() -> str | None:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def collect() -> dict:
    """Host facts for the run record: hostname, cpu_model, logical_cpus, usable_cpus (this
    process's affinity), physical_cores, smt_siblings (the cpus of each core with several
    hardware threads), sockets, numa_nodes (count) and numa (per node: cpus,
    memory_total, distances), memory_total, os, kernel, python, governor, tuned_profile,
    tunables (THP, cpufreq, cpuidle, SMT, tuned, sysctls, kernel command line: tunables.py),
    network (interfaces and RDMA ports: network.py),
    manybench, build (how its C kernels were compiled: _native.build_info()), timings (those
    of config/ this process does not have at their defaults: key -> seconds); cpu (SIMD, FMA
    pipes, flops per cycle, base and max clock, memory channels,
    each with where it came from) and peaks (peaks.Peaks.as_dict(): values, basis, detected,
    overrides from MANYBENCH_PEAKS)."""
    numa = _safe(_numa_nodes)
    env = {
        "hostname": _safe(socket.gethostname),
        "cpu_model": _safe(_cpu_model),
        "logical_cpus": _safe(os.cpu_count),
        "usable_cpus": _safe(lambda: len(os.sched_getaffinity(0))),
        "physical_cores": _safe(_physical_cores),
        "smt_siblings": _safe(_smt_siblings),
        "sockets": _safe(_sockets),
        "numa_nodes": len(numa) if numa else None,
        "numa": numa,
        "memory_total": _safe(lambda: psutil.virtual_memory().total),
        "os": _safe(_os_name),
        "kernel": _safe(platform.release),
        "python": _safe(lambda: f"{platform.python_implementation()} {platform.python_version()}"),
        "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "tuned_profile": _read("/etc/tuned/active_profile") or None,
        # THP, cpufreq, tuned, sysctls, cmdline: what a setup step changes (tunables.py)
        "tunables": _safe(tunables.collect),
        "network": _safe(network.collect),
        "manybench": __version__,
        "build": _safe(_build),
        "timings": _safe(config.overridden),
    }
    both = _safe(lambda: _cpu_and_peaks(env))
    env["cpu"], env["peaks"] = both if both else (None, None)
    return env
