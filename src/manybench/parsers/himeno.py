"""The Himeno benchmark's report -> metrics: the C versions (himenoBMTxp/xpa/xps:
" MFLOPS measured : 956.6\tcpu : 59.98", "Score based on Pentium III 600MHz ..."), the MPI
versions ("cpu : 59.98 sec.", "MFLOPS measured : 956.6") and the Fortran ones
(" MFLOPS: 956.6  time(s): 59.98").

  mflops, score, gosa, cpu_s (seconds of the measured loop), loops (iterations measured)
  mimax, mjmax, mkmax (grid size as printed; the whole grid for the MPI versions)
  decomp_i, decomp_j, decomp_k (MPI versions: the process decomposition)
"""
from __future__ import annotations

import re

from . import ParseError

NAME = "himeno"
VERSIONS = ("himenoBMTxp C (output lines)",)    # fixtures: real outputs
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_SCORE = re.compile(rf"Score based on Pentium III 600MHz[^:\n]*:\s*({_NUM})")
_MFLOPS = re.compile(rf"MFLOPS measured\s*:\s*({_NUM})")
_F_MFLOPS = re.compile(rf"MFLOPS:\s*({_NUM})\s+time\(s\):\s*({_NUM})")
_CPU = re.compile(rf"\bcpu\s*:\s*({_NUM})")
_GOSA = re.compile(rf"\bGosa\s*:\s*({_NUM})")
_LOOPS = re.compile(r"Loop executed for\s+(\d+)\s+times")
_GRID = re.compile(r"mimax\s*=\s*(\d+)\s+mjmax\s*=\s*(\d+)\s+mkmax\s*=\s*(\d+)")
_DECOMP = re.compile(r"I-decomp\s*=\s*(\d+)\s+J-decomp\s*=\s*(\d+)\s+K-decomp\s*=\s*(\d+)")


def _last(rx: re.Pattern, text: str):
    m = None
    for m in rx.finditer(text):
        pass
    return m


def parse(stdout: str, stderr: str) -> dict[str, float]:
    text = stdout if _SCORE.search(stdout) else stdout + "\n" + stderr
    score = _last(_SCORE, text)
    if score is None:
        raise ParseError("no \"Score based on Pentium III 600MHz\" line (Himeno not finished?)")
    head = text[:score.start()]
    metrics = {"score": float(score.group(1))}
    mflops = _last(_MFLOPS, head)
    fortran = _last(_F_MFLOPS, head)           # Fortran: the last one is the measured loop
    if mflops is not None:
        metrics["mflops"] = float(mflops.group(1))
        cpu = _last(_CPU, head)
        if cpu is not None:
            metrics["cpu_s"] = float(cpu.group(1))
    elif fortran is not None:
        metrics["mflops"] = float(fortran.group(1))
        metrics["cpu_s"] = float(fortran.group(2))
    else:
        raise ParseError("Himeno output has no measured MFLOPS")
    gosa = _last(_GOSA, head)
    if gosa is not None:
        metrics["gosa"] = float(gosa.group(1))
    loops = _last(_LOOPS, head)
    if loops is not None:
        metrics["loops"] = float(loops.group(1))
    grid = _GRID.search(head)                   # the first one: the whole grid
    if grid is not None:
        for name, v in zip(("mimax", "mjmax", "mkmax"), grid.groups()):
            metrics[name] = float(v)
    decomp = _DECOMP.search(head)
    if decomp is not None:
        for name, v in zip(("decomp_i", "decomp_j", "decomp_k"), decomp.groups()):
            metrics[name] = float(v)
    return metrics
