"""Intel MPI Benchmarks' IMB-MPI1 report -> metrics and size-indexed tables: PingPong
(#bytes, #repetitions, t[usec], Mbytes/sec), PingPing, Sendrecv, Exchange and the collectives
(Bcast, Allgather, Allreduce, Alltoall, ...: t_min/t_max/t_avg[usec]), read by column header.

Tables: one Series per column and benchmark, `<Benchmark>.<column>` (`PingPong.t`,
`PingPong.mbytes_s`, `Allreduce.t_avg`, `Allreduce.repetitions`); x is #bytes. IMB runs a
benchmark again for each process count from -npmin up: the run with the most processes gets
the plain name, the others `[np=N]` after it (`Allreduce.t_avg[np=2]`).

Metrics (the run with the most processes of each benchmark; `<bench>` lowercased):
  pingpong_latency_us (t at the smallest size), pingpong_bandwidth_mb_s (the peak; IMB's
  Mbytes/sec is 10^6 B/s), likewise pingping_* ...
  <bench>_t_avg_us, <bench>_t_min_us, <bench>_t_max_us: at the smallest size above 0 bytes
  (IMB times an empty call at 0), <bench>_t_avg_max_size_us at the largest
  <bench>_processes, version (the text "2021.11")
"""
from __future__ import annotations

import re

from . import ParseError
from .series import Series

NAME = "imb"
VERSIONS = ("IMB-MPI1 2021.11 (Open MPI 4.1.4, MPICH 4.0.2)",)    # fixtures: real outputs
_HEAD = re.compile(r"^#\s*Benchmarking\s+(\S+)\s*\n#\s*#processes\s*=\s*(\d+)", re.M)
_VERSION = re.compile(r"Intel\(R\) MPI Benchmarks\s+(\d+(?:\.\d+)?)")
_COLS = {"#bytes": ("bytes", "bytes"), "#repetitions": ("repetitions", "count"),
         "t[usec]": ("t", "us"), "t_min[usec]": ("t_min", "us"), "t_max[usec]": ("t_max", "us"),
         "t_avg[usec]": ("t_avg", "us"), "Mbytes/sec": ("mbytes_s", "MB/s"),
         "Msg/sec": ("msg_s", "1/s")}


def _column(cell: str) -> tuple[str, str]:
    if cell in _COLS:
        return _COLS[cell]
    return re.sub(r"[^a-z0-9]+", "_", cell.lower()).strip("_"), ""


def _runs(text: str) -> list[tuple[str, int, list[str], list[list[float]]]]:
    """(benchmark, processes, header cells, rows) for each "# Benchmarking X" block."""
    heads = list(_HEAD.finditer(text))
    out = []
    for i, h in enumerate(heads):
        body = text[h.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        header: list[str] = []
        rows: list[list[float]] = []
        for line in body.splitlines():
            s = line.strip()
            if not header and ("#repetitions" in s or "#bytes" in s):
                header = s.split()
            elif header and s and not s.startswith("#"):
                try:
                    rows.append([float(c) for c in s.split()[:len(header)]])
                except ValueError:
                    break                    # the table ended
            elif header and rows and s.startswith("#"):
                break
        out.append((h.group(1), int(h.group(2)), header, rows))
    return out


def tables(stdout: str, stderr: str = "") -> list[Series]:
    runs = _runs(stdout)
    most = {b: max(n for bb, n, _, _ in runs if bb == b) for b, _, _, _ in runs}
    out = []
    for bench, n, header, rows in runs:
        if "#bytes" not in header:
            continue                         # Barrier: no message size
        xi = header.index("#bytes")
        tag = "" if n == most[bench] else f"[np={n}]"
        for j, cell in enumerate(header):
            if j == xi:
                continue
            col, unit = _column(cell)
            pts = [(r[xi], r[j]) for r in rows if len(r) > j]
            if pts:
                out.append(Series(f"{bench}.{col}{tag}", unit, "bytes", pts))
    return out


def _at(rows: list[list[float]], header: list[str], col: str, size: float) -> float | None:
    j, xi = header.index(col), header.index("#bytes")
    return next((r[j] for r in rows if r[xi] == size and len(r) > j), None)


def parse(stdout: str, stderr: str) -> dict[str, float | str]:
    runs = [r for r in _runs(stdout) if r[3]]
    if not runs:
        if _HEAD.search(stdout):
            raise ParseError("IMB output has a \"# Benchmarking\" block but no table "
                             "(the benchmark failed?)")
        raise ParseError("no \"# Benchmarking <name>\" block with a table")
    metrics: dict[str, float | str] = {}
    v = _VERSION.search(stdout)
    if v:
        metrics["version"] = v.group(1)     # as printed: 2021.11, never a number
    best: dict[str, tuple[int, list[str], list[list[float]]]] = {}
    for bench, n, header, rows in runs:
        if bench not in best or n > best[bench][0]:
            best[bench] = (n, header, rows)
    for bench, (n, header, rows) in best.items():
        b = bench.lower()
        metrics[f"{b}_processes"] = float(n)
        if "#bytes" not in header:           # Barrier
            for col in ("t_min[usec]", "t_max[usec]", "t_avg[usec]"):
                if col in header:
                    metrics[f"{b}_{_column(col)[0]}_us"] = rows[0][header.index(col)]
            continue
        sizes = [r[header.index("#bytes")] for r in rows]
        if "t[usec]" in header:              # PingPong, PingPing: latency and bandwidth
            metrics[f"{b}_latency_us"] = _at(rows, header, "t[usec]", sizes[0]) or 0.0
            if "Mbytes/sec" in header:
                j = header.index("Mbytes/sec")
                metrics[f"{b}_bandwidth_mb_s"] = max(r[j] for r in rows if len(r) > j)
            continue
        small = next((s for s in sizes if s > 0), sizes[0])
        for col in ("t_avg[usec]", "t_min[usec]", "t_max[usec]"):
            if col in header:
                value = _at(rows, header, col, small)
                if value is not None:
                    metrics[f"{b}_{_column(col)[0]}_us"] = value
        if "t_avg[usec]" in header:
            metrics[f"{b}_t_avg_max_size_us"] = _at(rows, header, "t_avg[usec]", sizes[-1]) or 0.0
    return metrics
