"""OSU micro-benchmarks' reports -> metrics and size-indexed tables: point-to-point
(osu_latency, osu_bw, osu_bibw) and blocking collectives (osu_bcast, osu_allgather,
osu_allreduce, osu_alltoall, ...), in 5.x's layout ("# Size  Latency (us)") and 7.x's
("# Datatype: MPI_CHAR.", "Avg Latency(us)", -f's Min/Max/Iterations, -z's P50/P90/P99).
The project's own MPI program (mbmpi: kernels/native/mpi/mbmpi.c) prints the same layout
under "# manybench MPI ... Test"; its tests are named `mbmpi_latency`, `mbmpi_allreduce`, ...

Tables: one Series per column. The first value column is named after the test
(`osu_latency`, `osu_bw`, `osu_allreduce`), the others `<test>.<column>` (`osu_allreduce.min`,
`.max`, `.iterations`, `osu_latency.p99`); x is the message size in bytes.

Metrics (the first test in the output; a later one's with `<test>_` in front):
  latency tests:   latency_us (at the smallest size), latency_max_size_us (at the largest)
  bandwidth tests: bandwidth_mb_s (the peak over sizes, MB = 10^6 B as OSU counts),
                   bandwidth_max_size_mb_s (at the largest size)
  min_size_bytes, max_size_bytes, sizes (rows), version (OSU's, as text: "5.3", "7.4")
"""
from __future__ import annotations

import re

from . import ParseError
from .series import Series

NAME = "osu"
VERSIONS = ("OSU 5.3 (Open MPI 4.1.4)", "OSU 7.4 (MPICH 4.0.2)")    # fixtures: real outputs
_TITLE = re.compile(r"^#\s*(OSU|manybench) MPI(?:-\w+)? (.+?) Test(?: v([\d.]+))?\s*$", re.M)
_KNOWN = {"Latency": "latency", "Bandwidth": "bw", "Bi-Directional Bandwidth": "bibw",
          "Broadcast Latency": "bcast", "Allgather Latency": "allgather",
          "Allreduce Latency": "allreduce", "Reduce Latency": "reduce",
          "Barrier Latency": "barrier", "Gather Latency": "gather",
          "Scatter Latency": "scatter", "Alltoall Latency": "alltoall",
          "All-to-All Personalized Exchange Latency": "alltoall"}
_PREFIX = {"OSU": "osu_", "manybench": "mbmpi_"}
_UNIT = re.compile(r"\(([^)]*)\)\s*$")
_DROP = {"latency", "lat", "tail", "avg"}


def _test_name(tool: str, title: str) -> str:
    return _PREFIX[tool] + (_KNOWN.get(title)
                            or re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_"))


def _column(label: str) -> tuple[str, str]:
    """A header cell -> (suffix, unit): "Min Latency(us)" -> ("min", "us")."""
    m = _UNIT.search(label)
    unit = m.group(1) if m else ("1/s" if label.endswith("/s") else "count")
    words = re.sub(r"\([^)]*\)", " ", label).replace("/", "_").lower().split()
    return "_".join(w for w in words if w not in _DROP), unit


def _sections(text: str) -> list[tuple[str, float | None, list[str], list[list[float]]]]:
    """(test name, version, header cells, rows) for each "# OSU MPI ... Test" in the text."""
    titles = list(_TITLE.finditer(text))
    out = []
    for i, t in enumerate(titles):
        body = text[t.end():titles[i + 1].start() if i + 1 < len(titles) else len(text)]
        header: list[str] = []
        rows: list[list[float]] = []
        for line in body.splitlines():
            s = line.strip()
            if s.startswith("# Size"):
                header = re.split(r"\s{2,}", s[1:].strip())
            elif header and s and s[0].isdigit():
                cells = s.split()
                try:
                    rows.append([float(c) for c in cells[:len(header)]])
                except ValueError:
                    continue                 # a validation "Pass"/"Fail" cell, a stray line
        v = t.group(3)
        version = v if v and t.group(1) == "OSU" else None     # as printed: "7.4", text
        out.append((_test_name(t.group(1), t.group(2)), version, header, rows))
    return out


def tables(stdout: str, stderr: str = "") -> list[Series]:
    out = []
    for test, _, header, rows in _sections(stdout):
        for j, label in enumerate(header[1:], start=1):
            suffix, unit = _column(label)
            pts = [(r[0], r[j]) for r in rows if len(r) > j]
            if pts:
                out.append(Series(test if j == 1 else f"{test}.{suffix}", unit, "bytes", pts))
    return out


def parse(stdout: str, stderr: str) -> dict[str, float | str]:
    sections = [s for s in _sections(stdout) if s[3]]
    if not sections:
        if _TITLE.search(stdout):
            raise ParseError("OSU output has a title but no size table (the test failed?)")
        raise ParseError("no \"# OSU MPI ... Test\" title with a \"# Size\" table")
    metrics: dict[str, float | str] = {}
    seen: set[str] = set()
    for i, (test, version, header, rows) in enumerate(sections):
        if test in seen:
            continue
        seen.add(test)
        prefix = "" if i == 0 else f"{test}_"
        _, unit = _column(header[1]) if len(header) > 1 else ("", "")
        values = [r[1] for r in rows if len(r) > 1]
        if not values:
            raise ParseError(f"{test}: its table has no value column")
        if unit == "MB/s":
            metrics[prefix + "bandwidth_mb_s"] = max(values)
            metrics[prefix + "bandwidth_max_size_mb_s"] = values[-1]
        else:
            metrics[prefix + "latency_us"] = values[0]
            metrics[prefix + "latency_max_size_us"] = values[-1]
        metrics[prefix + "min_size_bytes"] = rows[0][0]
        metrics[prefix + "max_size_bytes"] = rows[-1][0]
        metrics[prefix + "sizes"] = float(len(rows))
        if version is not None:
            metrics[prefix + "version"] = version
    return metrics
