"""A cpu that lacks instructions the build needs, for every Python process of a tree: a
sitecustomize on PYTHONPATH points build_isa's cpu-flags reader (build_isa.CPUINFO) at a
cpuinfo of this cpu's flags less `lacking`, before manybench runs (a worker, the agent it
starts, their slots all read it; nothing else of the process changes)."""
from __future__ import annotations

import os
from pathlib import Path

from manybench import build_isa


def lacking_cpu(where: Path, lacking: frozenset[str] = frozenset({"sse4_2"}),
                noise_marks: Path | None = None) -> str:
    """The PYTHONPATH (this one's, with the sitecustomize first) of a process whose cpu lacks
    `lacking`. noise_marks: a file each noise floor measured there (inventory/noise.measure,
    the worker's MeasureNoise) adds a line to."""
    where.mkdir(parents=True, exist_ok=True)
    flags = (build_isa.cpu_flags() or set(build_isa.build_isa()["flags"])) - lacking
    info = where / "cpuinfo"
    info.write_text(f"processor\t: 0\nflags\t\t: {' '.join(sorted(flags))}\n")
    site = f"from manybench import build_isa\nbuild_isa.CPUINFO = {str(info)!r}\n"
    if noise_marks is not None:
        site += NOISE_MARKS.format(marks=str(noise_marks))
    (where / "sitecustomize.py").write_text(site)
    path = [str(where)] + [os.path.abspath(p) for p in
                           os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(path)


# a sitecustomize's tail: inventory/noise.measure marks each measurement in {marks}
NOISE_MARKS = """
import os
from manybench.inventory import noise as _noise
_measure = _noise.measure
def _marked(*args, **kwargs):
    with open({marks!r}, "a") as f:
        f.write(f"{{os.getpid()}}\\n")
    return _measure(*args, **kwargs)
_noise.measure = _marked
"""


def refusal_said(stderr: str, node: str, lacking: str = "sse4_2") -> bool:
    """The run's one line ("manybench: ...") says "node NODE: this cpu cannot run ...", naming
    the node once (never "starting the agent on NODE: node NODE: ..."), with the build's
    -march and what the node's cpu lacks. (Several nodes refused: their refusals, "; " apart.)"""
    march = build_isa.build_isa().get("march")
    line = next((x for x in stderr.splitlines() if x.startswith("manybench: ")), "")
    at = line.find(f"node {node}: this cpu cannot run")
    said = line[:at].rsplit("; ", 1)[-1]       # what this node's refusal begins with
    return (at >= 0 and node not in said and f"-march={march}" in line
            and f"lacks {lacking}" in line)
