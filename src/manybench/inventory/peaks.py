"""A node's theoretical peaks: detected figures plus overrides -> Peaks (derive, for_run).

Everything here is pure (numbers in, numbers out); environment.py does the reading, cpu_peak.py
and memory_peak.py reckon the CPU and memory figures. The formulas (docs/peaks.md):

  dp_flops_per_cycle = FMA units x (SIMD bits / 64) x 2      (cpu_peak.core_flops)
  sp_flops_per_cycle = FMA units x (SIMD bits / 32) x 2      (twice DP on any vector unit)
  dp_gflops          = cores x base GHz x dp_flops_per_cycle
  sp_gflops          = cores x base GHz x sp_flops_per_cycle
  dp_gflops_max      = cores x max (turbo) GHz x dp_flops_per_cycle
  mem_bw_mb_s        = memory channels x transfer rate (MT/s) x 8 bytes   (MB = 10^6 bytes)

The base clock is a rating where one exists, else the highest clock measured on one busy
core since the machine booted (cpu_peak.frequencies, clock_keep.py): never one measurement
that moves with the load.

Every figure can be given instead: the plan's [peaks] (or MANYBENCH_PEAKS="name=value ...")
may set any of FIGURES, which replaces the detected value and feeds the formulas (cores = 56
changes dp_gflops), or set an output directly (dp_gflops = 2150.4), or give the peak of any
metric by its name (mb_s = 750).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping

from .topology import parse_cpulist
from .cpu_peak import sp_per_dp


# Machine figures: inputs of the formulas, then their outputs. Any other [peaks] key is the
# peak of the metric of that name.
INPUTS = ("cores", "base_ghz", "max_ghz", "dp_flops_per_cycle", "sp_flops_per_cycle",
          "mem_channels", "mem_mt_s")
OUTPUTS = ("dp_gflops", "sp_gflops", "dp_gflops_max", "mem_bw_mb_s")
FIGURES = INPUTS + OUTPUTS
ENV_VAR = "MANYBENCH_PEAKS"
# the basis of an input measured on the node (a busy core's clock): not a rating of the machine
MEASURED = "measured"
BYTES_PER_TRANSFER = 8   # a 64-bit memory channel (a DDR5 DIMM's two 32-bit subchannels = one)

UNITS = {"cores": "", "base_ghz": "GHz", "max_ghz": "GHz", "dp_flops_per_cycle": "flops/cycle",
         "sp_flops_per_cycle": "flops/cycle", "mem_channels": "", "mem_mt_s": "MT/s",
         "dp_gflops": "GFLOPS", "sp_gflops": "GFLOPS", "dp_gflops_max": "GFLOPS",
         "mem_bw_mb_s": "MB/s"}
# the flops peaks by precision: (peak, flops per cycle it is made of), as kernels declare them
FLOPS_PEAKS = {"dp_gflops": "dp_flops_per_cycle", "sp_gflops": "sp_flops_per_cycle"}
PRECISION = {"dp_gflops": "DP", "sp_gflops": "SP"}


# -- detected figures -> peaks, with overrides -----------------------------------------------
@dataclass
class Peaks:
    """Effective peaks: every figure by name (None = unknown) and how each was obtained."""
    values: dict[str, float | None] = field(default_factory=dict)
    basis: dict[str, str] = field(default_factory=dict)
    detected: dict[str, float | None] = field(default_factory=dict)
    overrides: dict[str, dict[str, float]] = field(default_factory=dict)  # source -> figures
    # where each detected input came from, in words (the clock's: a rating, or the highest
    # measured since boot); from the inventory's cpu facts, not stored with the peaks
    sources: dict[str, str] = field(default_factory=dict)
    # cpu id -> the first cpu of its physical core, for cores with several hardware threads
    # (the inventory's smt_siblings); None when the inventory does not say
    core_of: dict[int, int] | None = None

    def get(self, name: str) -> float | None:
        v = self.values.get(name)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 \
            else None

    def metric_peaks(self) -> dict[str, float]:
        """Peaks given for metrics by name (every key that is not a machine figure)."""
        return {k: float(v) for k, v in self.values.items()
                if k not in FIGURES and isinstance(v, (int, float)) and v > 0}

    def cores_among(self, cpus: Collection[int]) -> set[int]:
        """The physical cores (each named by its first cpu) that these cpus belong to; each
        cpu its own core when the inventory does not say."""
        of = self.core_of or {}
        return {of.get(c, c) for c in cpus}

    def as_dict(self) -> dict[str, Any]:
        return {"values": dict(self.values), "basis": dict(self.basis),
                "detected": dict(self.detected), "overrides": {k: dict(v) for k, v in
                                                               self.overrides.items()}}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def _g(x: float) -> str:
    return f"{x:.6g}"


def derive(detected: Mapping[str, Any], *layers: tuple[str, Mapping[str, Any]],
           measured: Collection[str] = ()) -> Peaks:
    """Peaks from detected inputs (INPUTS, as far as known) and override layers, each
    (source label, {name: number}); later layers win. Outputs are computed from the (possibly
    overridden) inputs unless a layer gives the output itself. `measured` names the inputs
    that were measured, not read (a clock where cpufreq gives none): their basis, and that of
    a peak computed from them, says so, as a peak that moves with the machine's load."""
    p = Peaks(detected={k: _num(detected.get(k)) for k in INPUTS})
    vals: dict[str, float | None] = dict(p.detected)
    basis = {k: ("detected" if vals[k] is not None else "not detected") for k in INPUTS}
    for k in measured:
        if vals.get(k) is not None:
            basis[k] = MEASURED
    given: dict[str, str] = {}
    for source, layer in layers:
        clean = {str(k): float(v) for k, v in (layer or {}).items() if _num(v) is not None}
        if clean:
            p.overrides[source] = clean
        for k, v in clean.items():
            vals[k], given[k] = v, source
    for k, src in given.items():
        basis[k] = src

    _single_precision(p.detected, vals, given, basis)
    cores = vals.get("cores")

    def flops(ghz_key: str, out: str, fpc_key: str = "dp_flops_per_cycle") -> None:
        if out in given:
            return
        ghz, fpc = vals.get(ghz_key), vals.get(fpc_key)
        missing = [n for n, v in (("cores", cores), (ghz_key, ghz), (fpc_key, fpc))
                   if v is None]
        if missing:
            vals[out], basis[out] = None, f"{', '.join(missing)} unknown"
        else:
            vals[out] = cores * ghz * fpc
            how = " (measured)" if basis.get(ghz_key) == MEASURED else ""
            kind = " SP" if fpc_key.startswith("sp") else ""
            basis[out] = (f"{_g(cores)} cores x {_g(ghz)} GHz{how} x {_g(fpc)}{kind} "
                          "flops/cycle")

    flops("base_ghz", "dp_gflops")
    flops("base_ghz", "sp_gflops", "sp_flops_per_cycle")
    if "dp_gflops" in given and "sp_gflops" not in given:
        # the DP peak given as a number: the SP peak follows it by the core's SP/DP ratio
        dp, sp = vals.get("dp_flops_per_cycle"), vals.get("sp_flops_per_cycle")
        vals["sp_gflops"] = vals["dp_gflops"] * sp / dp if dp and sp else None
        basis["sp_gflops"] = (f"dp_gflops x {_g(sp / dp)} (SP / DP flops per cycle)" if dp and sp
                              else "sp_flops_per_cycle unknown: set sp_gflops in [peaks]")
    flops("max_ghz", "dp_gflops_max")
    if "mem_bw_mb_s" not in given:
        ch, rate = vals.get("mem_channels"), vals.get("mem_mt_s")
        if ch is None or rate is None:
            vals["mem_bw_mb_s"] = None
            basis["mem_bw_mb_s"] = ("memory channels and transfer rate unknown: set "
                                    "mem_bw_mb_s, or mem_channels and mem_mt_s, in [peaks]")
        else:
            vals["mem_bw_mb_s"] = ch * rate * BYTES_PER_TRANSFER
            basis["mem_bw_mb_s"] = (f"{_g(ch)} channels x {_g(rate)} MT/s x "
                                    f"{BYTES_PER_TRANSFER} bytes")
    p.values = {k: vals.get(k) for k in FIGURES}
    p.values.update({k: v for k, v in vals.items() if k not in FIGURES})
    p.basis = {k: basis.get(k, "not detected") for k in p.values}
    return p


def _single_precision(detected: Mapping[str, float | None], vals: dict, given: dict,
                      basis: dict) -> None:
    """SP flops per cycle follow DP flops per cycle given in an override by the core's
    detected SP / DP ratio (a vector unit holds twice as many floats), unless given too."""
    if "dp_flops_per_cycle" not in given or "sp_flops_per_cycle" in given:
        return
    dp, sp = detected.get("dp_flops_per_cycle"), detected.get("sp_flops_per_cycle")
    if dp and sp:
        vals["sp_flops_per_cycle"] = vals["dp_flops_per_cycle"] * sp / dp
        basis["sp_flops_per_cycle"] = (f"{given['dp_flops_per_cycle']}'s dp_flops_per_cycle x "
                                       f"{_g(sp / dp)} (the core's SP / DP)")
    else:
        vals["sp_flops_per_cycle"] = None
        basis["sp_flops_per_cycle"] = "unknown: set sp_flops_per_cycle in [peaks]"


def parse_env_override(text: str | None) -> dict[str, float]:
    """MANYBENCH_PEAKS="dp_gflops=2150.4 mem_bw_mb_s=128000" (spaces, commas or semicolons
    between entries); entries that are not name=positive number are ignored."""
    out: dict[str, float] = {}
    for item in re.split(r"[\s,;]+", text or ""):
        name, sep, value = item.partition("=")
        try:
            v = float(value)
        except ValueError:
            continue
        if sep and name and v > 0:
            out[name.strip()] = v
    return out


def for_run(environment: Mapping[str, Any] | None, plan_peaks: Mapping[str, Any] | None = None
            ) -> Peaks:
    """Effective peaks of a stored run: the detected inputs its environment holds, the
    MANYBENCH_PEAKS overrides it was collected with, then the plan's [peaks]; with where the
    clocks came from and which cpus share a core (the inventory's cpu facts)."""
    env = environment or {}
    stored = env.get("peaks") if isinstance(env.get("peaks"), dict) else {}
    cpu = env.get("cpu") if isinstance(env.get("cpu"), dict) else {}
    detected = dict(stored.get("detected") or {})
    if detected.get("cores") is None and env.get("physical_cores"):
        detected["cores"] = env["physical_cores"]      # runs stored before peaks existed
    if detected.get("sp_flops_per_cycle") is None and _num(detected.get("dp_flops_per_cycle")) \
            and isinstance(cpu.get("fma_width_bits"), int):
        # runs stored before SP peaks: the core's width says how many floats a vector holds
        detected["sp_flops_per_cycle"] = (detected["dp_flops_per_cycle"]
                                          * sp_per_dp(cpu["fma_width_bits"]))
    layers = [(src, vals) for src, vals in (stored.get("overrides") or {}).items()
              if src != "[peaks]"]
    p = derive(detected, *layers, ("[peaks]", dict(plan_peaks or {})),
               measured=measured_inputs(cpu))
    p.sources = {k: str(cpu[src]) for k, src in (("base_ghz", "base_source"),
                                                 ("max_ghz", "max_source"))
                 if isinstance(cpu.get(src), str)}
    p.core_of = core_map(env.get("smt_siblings"))
    return p


def core_map(siblings: Any) -> dict[int, int] | None:
    """cpu -> the first cpu of its core, from the inventory's smt_siblings (cpulists of the
    cores with several hardware threads); None when it is not a list (not recorded)."""
    if not isinstance(siblings, list):
        return None
    out: dict[int, int] = {}
    for group in siblings:
        try:
            cpus = parse_cpulist(str(group))
        except ValueError:
            continue
        out.update({c: min(cpus) for c in cpus})
    return out


def measured_inputs(cpu: Any) -> set[str]:
    """The clock inputs an inventory's cpu facts say were measured (their source)."""
    cpu = cpu if isinstance(cpu, dict) else {}
    return {k for k, src in (("base_ghz", cpu.get("base_source")),
                             ("max_ghz", cpu.get("max_source")))
            if isinstance(src, str) and src.startswith("measured")}
