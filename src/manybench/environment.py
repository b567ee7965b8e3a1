"""Provenance of a run: what machine it ran on, collected once at the start (< 50 ms).

Every probe is allowed to fail (a file missing in a container, an odd /proc on another
architecture): the field is then None, and collect() never raises.

collect() also holds the node's theoretical peaks (peaks.py: DP GFLOPS from cores, clock and
flops per cycle; memory bandwidth from channels and transfer rate when the firmware tables say
so), so stored results carry the peaks of the machine they ran on. On a multi-node run this is
the coordinator's machine: reports assume the nodes are alike. `manybench info` prints it.
"""
from __future__ import annotations

import glob
import os
import platform
import socket
from typing import Any, Callable

import psutil

from . import __version__, peaks


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
                d = peaks.parse_dmi_memory_device(f.read())
        except OSError:
            continue
        if d:
            out.append(d)
    return out


def _cpu_and_peaks(env: dict) -> tuple[dict, dict]:
    """The CPU's SIMD/FMA/clock facts and the node's peaks (peaks.py) for collect()."""
    info = peaks.parse_cpuinfo(_read("/proc/cpuinfo") or "")
    sve = _read("/proc/sys/abi/sve_default_vector_length")
    flops = peaks.core_flops(info, int(sve) * 8 if sve and sve.isdigit() else None)
    freq = _safe(_cpufreq) or {}
    base, bsrc, mx, msrc = peaks.frequencies(info["model_name"], info["mhz"], **freq)
    channels, rate, msource = peaks.memory_channels(_safe(_dimms) or [])
    cpu = {"vendor": info["vendor"], "family": info["family"], "model": info["model"],
           "microarch": flops.microarch, "simd": flops.isa, "simd_bits": flops.simd_bits,
           "fma": flops.fma, "fma_units": flops.units, "fma_width_bits": flops.width_bits,
           "dp_flops_per_cycle": flops.flops_per_cycle, "flops_assumption": flops.assumption,
           "base_mhz": round(base * 1e3, 1) if base else None, "base_source": bsrc,
           "max_mhz": round(mx * 1e3, 1) if mx else None, "max_source": msrc,
           "memory_channels": channels, "memory_mt_s": rate, "memory_source": msource}
    detected = {"cores": env.get("physical_cores"), "base_ghz": base, "max_ghz": mx,
                "dp_flops_per_cycle": flops.flops_per_cycle, "mem_channels": channels,
                "mem_mt_s": rate}
    over = peaks.parse_env_override(os.environ.get(peaks.ENV_VAR))
    return cpu, peaks.derive(detected, (peaks.ENV_VAR, over)).as_dict()


def _os_name() -> str | None:
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return None


def collect() -> dict:
    """Host facts for the run record: hostname, cpu_model, logical_cpus, usable_cpus (this
    process's affinity), physical_cores, sockets, numa_nodes (count) and numa (per node: cpus,
    memory_total, distances), memory_total, os, kernel, python, governor, tuned_profile,
    manybench; cpu (SIMD, FMA pipes, flops per cycle, base and max clock, memory channels,
    each with where it came from) and peaks (peaks.Peaks.as_dict(): values, basis, detected,
    overrides from MANYBENCH_PEAKS)."""
    numa = _safe(_numa_nodes)
    env = {
        "hostname": _safe(socket.gethostname),
        "cpu_model": _safe(_cpu_model),
        "logical_cpus": _safe(os.cpu_count),
        "usable_cpus": _safe(lambda: len(os.sched_getaffinity(0))),
        "physical_cores": _safe(_physical_cores),
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
    both = _safe(lambda: _cpu_and_peaks(env))
    env["cpu"], env["peaks"] = both if both else (None, None)
    return env


# -- `manybench info` ----------------------------------------------------------------------
def _gib(n: int | None) -> str:
    return "unknown" if not n else f"{n / 2**30:.1f} GiB"


def _count(n: int | None, word: str) -> str:
    return f"? {word}s" if n is None else f"{n} {word}" + ("" if n == 1 else "s")


def _fig(name: str, v: float | None) -> str:
    if v is None:
        return "unknown"
    unit = peaks.UNITS.get(name, "")
    text = f"{v:,.1f}" if v >= 1 and v != int(v) else f"{v:,.6g}"
    return f"{text} {unit}".rstrip()


def info_text(env: dict) -> str:
    """This node's inventory and theoretical peaks as `manybench info` prints them; env is
    collect()'s dict, its peaks possibly replaced by the effective ones (plan [peaks])."""
    g = env.get
    cpu = g("cpu") or {}
    lines = [f"node      {g('hostname') or 'unknown'}",
             f"os        {g('os') or 'unknown'}, kernel {g('kernel') or 'unknown'}",
             f"cpu       {g('cpu_model') or 'unknown'}"
             + (f" ({cpu['microarch']})" if cpu.get("microarch") else ""),
             "          " + ", ".join(_count(g(k), w) for k, w in (
                 ("sockets", "socket"), ("physical_cores", "core"), ("logical_cpus", "thread")))]
    numa = g("numa") or []
    lines.append(f"numa      {_count(len(numa) or None, 'node')}")
    for n in numa:
        lines.append(f"          node {n['node']} cpus: {n.get('cpus') or '?'}, memory "
                     f"{_gib(n.get('memory_total'))}")
    if numa and all(n.get("distances") for n in numa):
        lines.append("          node distances:")
        lines.append("          node " + "".join(f"{n['node']:>4}" for n in numa))
        for n in numa:
            lines.append(f"          {n['node']:>3}: " + "".join(f"{d:>4}" for d in n["distances"]))
    lines.append(f"memory    {_gib(g('memory_total'))} total; "
                 + (f"{cpu['memory_channels']} channels" if cpu.get("memory_channels")
                    else "channels unknown")
                 + (f" at {cpu['memory_mt_s']} MT/s" if cpu.get("memory_mt_s") else "")
                 + (f": {cpu['memory_source']}" if cpu.get("memory_source") else ""))
    if cpu:
        lines.append(f"simd      {cpu.get('simd_bits')}-bit ({cpu.get('simd')})")
        kind = "FMA" if cpu.get("fma") else "add/multiply (no FMA)"
        fpc = cpu.get("dp_flops_per_cycle")
        lines.append(f"fma       {cpu.get('fma_units')} x {cpu.get('fma_width_bits')}-bit {kind} "
                     f"pipes per core -> {fpc:g} DP flops/cycle/core" if fpc else "fma       unknown")
        if cpu.get("flops_assumption"):
            lines.append(f"          {cpu['flops_assumption']}")
        base, mx = cpu.get("base_mhz"), cpu.get("max_mhz")
        lines.append("frequency base " + (f"{base / 1e3:.3g} GHz from {cpu.get('base_source')}"
                                          if base else "unknown")
                     + "; max " + (f"{mx / 1e3:.3g} GHz from {cpu.get('max_source')}" if mx
                                   else str(cpu.get("max_source") or "unknown")))
    lines.append(f"governor  {g('governor') or 'unknown'}"
                 + (f", tuned {g('tuned_profile')}" if g("tuned_profile") else ""))
    p = g("peaks") or {}
    values, basis = p.get("values") or {}, p.get("basis") or {}
    lines += ["", "theoretical peaks (override any in the plan's [peaks])"]
    names = [n for n in peaks.OUTPUTS] + [n for n in values if n not in peaks.FIGURES]
    names += [n for n in peaks.INPUTS if basis.get(n, "").startswith(("[peaks]", peaks.ENV_VAR))]
    width = max(len(n) for n in names)
    for name in names:
        lines.append(f"  {name:<{width}}  {_fig(name, values.get(name)):>16}  "
                     f"{basis.get(name, '')}")
    return "\n".join(lines) + "\n"
