"""A cpu that lacks instructions the build needs, for every Python process of a tree: a
sitecustomize on PYTHONPATH points build_isa's cpu-flags reader (build_isa.CPUINFO) at a
cpuinfo of this cpu's flags less `lacking`, before manybench runs (a worker, the agent it
starts, their slots all read it; nothing else of the process changes)."""
from __future__ import annotations

import os
from pathlib import Path

from manybench import build_isa


def lacking_cpu(where: Path, lacking: frozenset[str] = frozenset({"sse4_2"})) -> str:
    """The PYTHONPATH (this one's, with the sitecustomize first) of a process whose cpu lacks
    `lacking`."""
    where.mkdir(parents=True, exist_ok=True)
    flags = (build_isa.cpu_flags() or set(build_isa.build_isa()["flags"])) - lacking
    info = where / "cpuinfo"
    info.write_text(f"processor\t: 0\nflags\t\t: {' '.join(sorted(flags))}\n")
    (where / "sitecustomize.py").write_text(
        f"from manybench import build_isa\nbuild_isa.CPUINFO = {str(info)!r}\n")
    path = [str(where)] + [os.path.abspath(p) for p in
                           os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(path)


def refusal_said(stderr: str, node: str, lacking: str = "sse4_2") -> bool:
    """The run's one line ("manybench: ...") names the node, the build's -march and what the
    node's cpu lacks."""
    march = build_isa.build_isa().get("march")
    line = next((x for x in stderr.splitlines() if x.startswith("manybench: ")), "")
    return f"-march={march}" in line and f"lacks {lacking}" in line and f" {node}:" in line
