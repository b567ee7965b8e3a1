"""A node's theoretical peaks: detected figures plus overrides -> Peaks (derive, for_run).

Everything here is pure (numbers in, numbers out); environment.py does the reading, cpu_peak.py
and memory_peak.py reckon the CPU and memory figures. The formulas (docs/peaks.md):

  dp_flops_per_cycle = FMA units x (SIMD bits / 64) x 2      (cpu_peak.core_flops)
  dp_gflops          = cores x base GHz x dp_flops_per_cycle
  dp_gflops_max      = cores x max (turbo) GHz x dp_flops_per_cycle
  mem_bw_mb_s        = memory channels x transfer rate (MT/s) x 8 bytes   (MB = 10^6 bytes)

Every figure can be given instead: the plan's [peaks] (or MANYBENCH_PEAKS="name=value ...")
may set any of FIGURES, which replaces the detected value and feeds the formulas (cores = 56
changes dp_gflops), or set an output directly (dp_gflops = 2150.4), or give the peak of any
metric by its name (mb_s = 750).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping


# Machine figures: inputs of the formulas, then their outputs. Any other [peaks] key is the
# peak of the metric of that name.
INPUTS = ("cores", "base_ghz", "max_ghz", "dp_flops_per_cycle", "mem_channels", "mem_mt_s")
OUTPUTS = ("dp_gflops", "dp_gflops_max", "mem_bw_mb_s")
FIGURES = INPUTS + OUTPUTS
ENV_VAR = "MANYBENCH_PEAKS"
# the basis of an input measured on the node (a busy core's clock): not a rating of the machine
MEASURED = "measured"
BYTES_PER_TRANSFER = 8   # a 64-bit memory channel (a DDR5 DIMM's two 32-bit subchannels = one)

UNITS = {"cores": "", "base_ghz": "GHz", "max_ghz": "GHz", "dp_flops_per_cycle": "flops/cycle",
         "mem_channels": "", "mem_mt_s": "MT/s", "dp_gflops": "GFLOPS",
         "dp_gflops_max": "GFLOPS", "mem_bw_mb_s": "MB/s"}


# -- detected figures -> peaks, with overrides -----------------------------------------------
@dataclass
class Peaks:
    """Effective peaks: every figure by name (None = unknown) and how each was obtained."""
    values: dict[str, float | None] = field(default_factory=dict)
    basis: dict[str, str] = field(default_factory=dict)
    detected: dict[str, float | None] = field(default_factory=dict)
    overrides: dict[str, dict[str, float]] = field(default_factory=dict)  # source -> figures

    def get(self, name: str) -> float | None:
        v = self.values.get(name)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 \
            else None

    def metric_peaks(self) -> dict[str, float]:
        """Peaks given for metrics by name (every key that is not a machine figure)."""
        return {k: float(v) for k, v in self.values.items()
                if k not in FIGURES and isinstance(v, (int, float)) and v > 0}

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

    cores, fpc = vals.get("cores"), vals.get("dp_flops_per_cycle")

    def flops(ghz_key: str, out: str) -> None:
        if out in given:
            return
        ghz = vals.get(ghz_key)
        missing = [n for n, v in (("cores", cores), (ghz_key, ghz),
                                  ("dp_flops_per_cycle", fpc)) if v is None]
        if missing:
            vals[out], basis[out] = None, f"{', '.join(missing)} unknown"
        else:
            vals[out] = cores * ghz * fpc
            how = " (measured)" if basis.get(ghz_key) == MEASURED else ""
            basis[out] = (f"{_g(cores)} cores x {_g(ghz)} GHz{how} x {_g(fpc)} flops/cycle")

    flops("base_ghz", "dp_gflops")
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
    MANYBENCH_PEAKS overrides it was collected with, then the plan's [peaks]."""
    env = environment or {}
    stored = env.get("peaks") if isinstance(env.get("peaks"), dict) else {}
    detected = dict(stored.get("detected") or {})
    if detected.get("cores") is None and env.get("physical_cores"):
        detected["cores"] = env["physical_cores"]      # runs stored before peaks existed
    layers = [(src, vals) for src, vals in (stored.get("overrides") or {}).items()
              if src != "[peaks]"]
    return derive(detected, *layers, ("[peaks]", dict(plan_peaks or {})),
                  measured=measured_inputs(env.get("cpu")))


def measured_inputs(cpu: Any) -> set[str]:
    """The clock inputs an inventory's cpu facts say were measured (their source)."""
    cpu = cpu if isinstance(cpu, dict) else {}
    return {k for k, src in (("base_ghz", cpu.get("base_source")),
                             ("max_ghz", cpu.get("max_source")))
            if isinstance(src, str) and src.startswith("measured")}
