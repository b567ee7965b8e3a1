"""A CPU core's flops per cycle (double and single precision) and its clocks, from
/proc/cpuinfo and cpufreq.

Pure (text and numbers in, numbers out) so it can be tested with synthetic /proc/cpuinfo text;
environment.py does the reading, peaks.py turns the figures into peaks (docs/peaks.md):

  dp_flops_per_cycle = FMA units x (SIMD bits / 64) x 2      (a fused multiply-add is 2 flops)
  sp_flops_per_cycle = FMA units x (SIMD bits / 32) x 2      (twice as many lanes; scalar: the
                                                              same as DP)

SIMD bits is the narrower of what the instruction set offers (/proc/cpuinfo flags: avx512f 512,
avx2/avx 256, sse2 128; aarch64 asimd 128, sve its vector length) and the width of the core's
FMA pipes where the table below knows it (Zen 1 executes 256-bit AVX as 2 x 128; Zen 2/3/4
as 2 x 256, Zen 4's AVX-512 included). For a CPU the table does not know, a short
measurement on one core decides (probe.c: FMA throughput at each vector width over the
core's clock, measured by dependent adds; `Measured`); without it, one FMA pipe of the
instruction-set width is assumed when it has FMA, and one add plus one multiply pipe when it
has none; the source is stated with the figure.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping


# -- /proc/cpuinfo ---------------------------------------------------------------------------
def parse_cpuinfo(text: str) -> dict[str, Any]:
    """The facts of the first processor block that matter here: vendor, family, model (ints),
    model_name, flags (set: x86 `flags` or aarch64 `Features`), implementer and part (ints,
    aarch64), mhz (every `cpu MHz` line), arch ("x86" or "arm")."""
    out: dict[str, Any] = {"vendor": None, "family": None, "model": None, "model_name": None,
                           "flags": set(), "implementer": None, "part": None, "mhz": []}
    first = True
    for line in text.splitlines():
        if not line.strip():
            if out["flags"] or out["model_name"]:
                first = False      # later blocks only add their cpu MHz
            continue
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "cpu mhz":
            try:
                out["mhz"].append(float(value))
            except ValueError:
                pass
            continue
        if not first:
            continue
        if key == "vendor_id":
            out["vendor"] = value
        elif key == "cpu family":
            out["family"] = _int(value)
        elif key == "model":
            out["model"] = _int(value)
        elif key == "model name" and value:
            out["model_name"] = value
        elif key in ("flags", "features") and value:
            out["flags"] = set(value.split())
        elif key == "cpu implementer":
            out["implementer"] = _int(value)
        elif key == "cpu part":
            out["part"] = _int(value)
    arm = out["implementer"] is not None or "asimd" in out["flags"]
    out["arch"] = "arm" if arm else "x86"
    return out


def _int(s: str) -> int | None:
    try:
        return int(s, 0)
    except ValueError:
        return None


def simd(flags: set[str], sve_bits: int | None = None) -> tuple[int, str]:
    """(widest vector in bits, the flag that says so) from the cpuinfo flags."""
    if "sve" in flags:
        # the vector length is not a flag: the kernel's default (prctl) length when known
        return (sve_bits or 128), "sve"
    for flag, bits in (("avx512f", 512), ("avx2", 256), ("avx", 256), ("asimd", 128),
                       ("sse2", 128)):
        if flag in flags:
            return bits, flag
    return 64, "scalar"


# -- FMA pipes per core, where known ---------------------------------------------------------
@dataclass(frozen=True)
class CoreFlops:
    """Double-precision flops per cycle of one core and how they were reckoned."""
    microarch: str            # "Zen 2", "Skylake-SP Gold 6xxx", "unknown x86", ...
    isa: str                  # the flag giving the SIMD width (avx512f, avx2, asimd, ...)
    simd_bits: int            # what the instruction set offers
    units: int                # FMA pipes (or add + multiply pipes when fma is False)
    width_bits: int           # width used: min(simd_bits, the pipes' width)
    fma: bool
    flops_per_cycle: float
    assumption: str | None = None   # set when the table did not know the CPU

    @property
    def sp_flops_per_cycle(self) -> float:
        """Single precision: a vector holds twice as many floats as doubles (scalar: one)."""
        return sp_per_dp(self.width_bits) * self.flops_per_cycle

    def describe(self) -> str:
        kind = "FMA" if self.fma else "add/multiply"
        text = (f"{self.units} x {self.width_bits}-bit {kind} pipes per core "
                f"({self.microarch}) -> {self.flops_per_cycle:g} DP flops/cycle/core")
        return text + (f"; {self.assumption}" if self.assumption else "")


def sp_per_dp(width_bits: int | None) -> int:
    """SP flops per DP flop of a pipe this wide: 2 for any vector (128 bits and more), 1 for
    scalar code."""
    return 2 if (width_bits or 0) >= 128 else 1


# Intel family 6 models
_INTEL_2X256 = {60: "Haswell", 63: "Haswell", 69: "Haswell", 70: "Haswell",
                61: "Broadwell", 71: "Broadwell", 79: "Broadwell", 86: "Broadwell",
                78: "Skylake", 94: "Skylake", 142: "Kaby/Coffee Lake", 158: "Kaby/Coffee Lake",
                165: "Comet Lake", 166: "Comet Lake"}
_INTEL_NOFMA = {42: ("Sandy Bridge", 256), 45: ("Sandy Bridge", 256), 58: ("Ivy Bridge", 256),
                62: ("Ivy Bridge", 256), 26: ("Nehalem", 128), 30: ("Nehalem", 128),
                46: ("Nehalem", 128), 37: ("Westmere", 128), 44: ("Westmere", 128),
                47: ("Westmere", 128)}
_INTEL_SKX = 85   # Skylake-SP, Cascade Lake, Cooper Lake
_INTEL_LATER_SP = {106: "Ice Lake-SP", 108: "Ice Lake-SP", 143: "Sapphire Rapids",
                   207: "Emerald Rapids", 173: "Granite Rapids", 174: "Granite Rapids"}
_XEON_SKU = re.compile(r"\b(Platinum|Gold|Silver|Bronze)\s+(\d{4})", re.IGNORECASE)
# ARM (implementer 0x41) parts: (name, FMA pipes, pipe width)
_ARM_PARTS = {0xd0c: ("Neoverse N1", 2, 128), 0xd49: ("Neoverse N2", 2, 128),
              0xd40: ("Neoverse V1", 4, 128), 0xd4f: ("Neoverse V2", 4, 128),
              0xd84: ("Neoverse V3", 4, 128)}


def _table(cpu: Mapping[str, Any]) -> tuple[str, int, int, bool] | None:
    """(microarchitecture, pipes, pipe width bits, fma) for CPUs known here, else None."""
    vendor, fam, model = cpu.get("vendor") or "", cpu.get("family"), cpu.get("model")
    name = cpu.get("model_name") or ""
    if vendor == "GenuineIntel" and fam == 6 and model is not None:
        if model == _INTEL_SKX:
            m = _XEON_SKU.search(name)
            if m:
                tier, sku = m.group(1).capitalize(), m.group(2)
                gen = "Cascade Lake" if sku[1] == "2" else "Skylake-SP"
                two = tier == "Platinum" or (tier == "Gold" and (sku[0] == "6" or sku[1:] in
                                                                 ("122", "222")))
                return f"{gen} {tier} {sku}", 2 if two else 1, 512, True
            if re.search(r"Xeon\(R\)?\s+W-\d{4}|Xeon W-\d{4}", name):
                return "Skylake-W", 2, 512, True
            return None
        if model in _INTEL_LATER_SP:
            if re.search(r"\b(Platinum|Gold|Max)\b", name, re.IGNORECASE):
                return f"{_INTEL_LATER_SP[model]} Xeon Gold/Platinum", 2, 512, True
            return None
        if model in _INTEL_2X256:
            return _INTEL_2X256[model], 2, 256, True
        if model in _INTEL_NOFMA:
            arch, width = _INTEL_NOFMA[model]
            return arch, 2, width, False      # one add and one multiply pipe
        return None
    if vendor in ("AuthenticAMD", "HygonGenuine") and fam is not None and model is not None:
        if fam == 0x17:
            return ("Zen/Zen+", 2, 128, True) if model < 0x30 else ("Zen 2", 2, 256, True)
        if fam == 0x18:
            return "Zen (Hygon Dhyana)", 2, 128, True
        if fam == 0x19:
            zen4 = 0x10 <= model <= 0x1f or 0x60 <= model <= 0x7f or 0xa0 <= model <= 0xaf
            return ("Zen 4", 2, 256, True) if zen4 else ("Zen 3", 2, 256, True)
        if fam == 0x1a:
            if model <= 0x1f or 0x40 <= model <= 0x4f:
                return "Zen 5", 2, 512, True
            return "Zen 5 (256-bit datapath)", 2, 256, True
        return None
    if cpu.get("implementer") == 0x41 and cpu.get("part") in _ARM_PARTS:
        arch, units, width = _ARM_PARTS[cpu["part"]]
        return arch, units, width, True
    if cpu.get("implementer") == 0x46 and cpu.get("part") == 0x001:
        return "A64FX", 2, 512, True
    return None


@dataclass(frozen=True)
class Measured:
    """One busy core, measured (kernels/native/probe.c): its clock and its DP FMA GFLOPS at
    each vector width (bits -> GFLOPS; 0 where the cpu or build has none)."""
    ghz: float
    gflops: Mapping[int, float]

    def best(self) -> tuple[int, float]:
        """(width, GFLOPS) of the fastest width; narrower wins a tie within 5% (AVX-512 on
        256-bit pipes is no faster than AVX2)."""
        widths = sorted((w for w, g in self.gflops.items() if g > 0))
        if not widths:
            return 0, 0.0
        top = max(self.gflops[w] for w in widths)
        w = next(w for w in widths if self.gflops[w] >= 0.95 * top)
        return w, self.gflops[w]

    def flops_per_cycle(self) -> float | None:
        """Rounded to the nearest power of two (pipes x lanes x 2 always is one)."""
        _, g = self.best()
        if g <= 0 or self.ghz <= 0:
            return None
        return float(2 ** round(math.log2(g / self.ghz)))


def core_flops(cpuinfo: str | Mapping[str, Any], sve_bits: int | None = None,
               measured: Measured | None = None) -> CoreFlops:
    """DP flops per cycle per core from /proc/cpuinfo text (or parse_cpuinfo's dict), the
    table first, then `measured` (one core's probe), then the stated assumption."""
    cpu = parse_cpuinfo(cpuinfo) if isinstance(cpuinfo, str) else cpuinfo
    flags = set(cpu.get("flags") or ())
    bits, isa = simd(flags, sve_bits)
    known = _table(cpu)
    if known:
        arch, units, width, fma = known
        width = min(width, bits)
        return CoreFlops(arch, isa, bits, units, width, fma, units * width / 64 * (2 if fma else 1))
    arm = cpu.get("arch") == "arm"
    fpc = measured.flops_per_cycle() if measured else None
    if fpc:
        width, g = measured.best()
        units = max(1, round(fpc / (width / 64 * 2)))
        return CoreFlops(f"unknown {'aarch64' if arm else 'x86'} CPU", isa, bits, units, width,
                         True, fpc, f"measured on one core: {g:.3g} GFLOPS of {width}-bit FMA "
                         f"at {measured.ghz:.3g} GHz -> {fpc:g} flops/cycle "
                         f"({units} x {width}-bit FMA pipes)")
    if not flags and not arm:
        return CoreFlops("unknown CPU", isa, bits, 0, bits, False, 0.0,
                         "no CPU flags readable: flops per cycle unknown (set dp_gflops or "
                         "dp_flops_per_cycle in [peaks])")
    label = f"unknown {'aarch64' if arm else 'x86'} CPU"
    if "fma" in flags or arm:        # every aarch64 core with asimd has fused multiply-add
        return CoreFlops(label, isa, bits, 1, bits, True, bits / 64 * 2,
                         "assumed 1 FMA pipe (CPU not in the table; many cores have 2): "
                         "set dp_gflops or dp_flops_per_cycle in [peaks] if you know better")
    return CoreFlops(label, isa, bits, 2, bits, False, 2 * bits / 64,
                     "assumed no FMA: one add and one multiply pipe (CPU not in the table): "
                     "set dp_gflops or dp_flops_per_cycle in [peaks] if you know better")


# -- frequencies -----------------------------------------------------------------------------
_AT_GHZ = re.compile(r"@\s*(\d+(?:\.\d+)?)\s*GHz", re.IGNORECASE)


MEASURED_CLOCK = "measured: one busy core's clock (chains of dependent adds)"
RATED_BOOST = "cpufreq cpuinfo_max_freq (rated boost)"


def frequencies(model_name: str | None, mhz: Iterable[float] = (), base_khz: int | None = None,
                max_khz: int | None = None, driver: str | None = None,
                measured_ghz: float | None = None, measured_source: str = MEASURED_CLOCK
                ) -> tuple[float | None, str, float | None, str]:
    """(base GHz, where from, max GHz, where from); None and the reason when unknown. The
    base is the clock peaks are reckoned at, so it comes from a rating wherever one exists and
    never from one reading of a clock that moves with the machine's load.

    Base: cpufreq base_frequency; else acpi-cpufreq's cpuinfo_max_freq (its highest P-state is
    the nominal clock, boost is not listed); else the model name's "@ 2.40GHz" (Intel's rated
    base); else cpufreq's cpuinfo_max_freq, the rated boost, where no base is rated (amd-pstate
    and the like); else `measured_ghz`, a busy core's clock (probe.c) as `measured_source`
    says it was kept (clock_keep.py: the highest measured since the machine booted); else the
    highest `cpu MHz` of /proc/cpuinfo (the current clock: below base on an idle
    power-saving core, the host's clock in a VM). Max: cpufreq cpuinfo_max_freq, else
    `measured_ghz`.
    """
    base: float | None = None
    mx: float | None = None
    bsrc = msrc = "unknown"
    acpi = driver == "acpi-cpufreq"
    if base_khz:
        base, bsrc = base_khz / 1e6, "cpufreq base_frequency"
    elif acpi and max_khz:
        base, bsrc = max_khz / 1e6, "acpi-cpufreq cpuinfo_max_freq (nominal)"
    elif model_name and (m := _AT_GHZ.search(model_name)):
        base, bsrc = float(m.group(1)), "model name"
    elif max_khz:
        base, bsrc = max_khz / 1e6, f"{RATED_BOOST} (no base clock is rated here)"
    elif measured_ghz:
        base, bsrc = measured_ghz, measured_source + ", not the rated base"
    elif (mhz := [x for x in mhz if x > 0]):
        base, bsrc = max(mhz) / 1e3, "/proc/cpuinfo cpu MHz (current clock, not rated base)"
    if max_khz and not acpi:
        mx, msrc = max_khz / 1e6, RATED_BOOST
    elif measured_ghz:
        mx, msrc = measured_ghz, measured_source
    elif acpi:
        msrc = "unknown (acpi-cpufreq does not list boost clocks)"
    else:
        msrc = "unknown (no cpufreq in sysfs)"
    return base, bsrc, mx, msrc
