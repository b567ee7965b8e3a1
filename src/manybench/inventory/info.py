"""This node's inventory and theoretical peaks as text, the way `manybench info` prints them."""
from __future__ import annotations

from . import noise, peaks


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
        fpc, sp = cpu.get("dp_flops_per_cycle"), cpu.get("sp_flops_per_cycle")
        lines.append(f"fma       {cpu.get('fma_units')} x {cpu.get('fma_width_bits')}-bit {kind} "
                     f"pipes per core -> {fpc:g} DP flops/cycle/core"
                     + (f" ({sp:g} SP)" if sp else "") if fpc else "fma       unknown")
        if cpu.get("flops_assumption"):
            lines.append(f"          {cpu['flops_assumption']}")
        base, mx = cpu.get("base_mhz"), cpu.get("max_mhz")
        lines.append("frequency base " + (f"{base / 1e3:.3g} GHz from {cpu.get('base_source')}"
                                          if base else "unknown")
                     + "; max " + (f"{mx / 1e3:.3g} GHz from {cpu.get('max_source')}" if mx
                                   else str(cpu.get("max_source") or "unknown")))
    build = g("build") or {}
    if build:
        flags = build.get("cflags") or []   # a list; runs stored before it became one hold a str
        flags = " ".join(flags) if isinstance(flags, list) else str(flags)
        lines.append(f"kernels   built by {build.get('compiler')} {build.get('compiler_version')}"
                     f" with {flags}"
                     + (f" (for {build['march']})" if build.get("march") else " (portable)"))
        if build.get("clones"):   # runs stored before the clones have none
            lines.append(f"          hot loops cloned for {', '.join(build['clones'])}: "
                         f"{build.get('clone')} here")
    lines.append(f"governor  {g('governor') or 'unknown'}"
                 + (f", tuned {g('tuned_profile')}" if g("tuned_profile") else ""))
    floor = g("noise")
    if isinstance(floor, dict) and "stall_ns" in floor:
        lines.append(f"noise     {noise.describe(floor)}")
        lines.append(f"          measured: {floor.get('method')}")
        warn = noise.stalls(g("hostname") or "this node", floor)
        if warn:
            lines.append(f"          STALLS: {warn}")
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
