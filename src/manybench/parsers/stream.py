"""STREAM's report -> metrics: McCalpin's stream.c ("Function    Best Rate MB/s  Avg time
Min time  Max time", and the older "Rate (MB/s)" header) and the STREAM section of the HPC
Challenge output (hpccoutf.txt, "Rate (GB/s)", converted to MB/s).

  copy_mb_s, scale_mb_s, add_mb_s, triad_mb_s      best rate, 1e6 B/s
  {kernel}_avg_s, {kernel}_min_s, {kernel}_max_s   times over the repetitions
  array_size (elements), threads (OpenMP threads counted), validated (1 or 0)
  single_{kernel}_mb_s                             hpcc only: its SingleSTREAM figures
The last table in the output is the one reported.
"""
from __future__ import annotations

import re
from decimal import Decimal

from . import ParseError

NAME = "stream"
VERSIONS = ("5.10", "hpcc 1.5.0")    # fixtures: real outputs
KERNELS = ("Copy", "Scale", "Add", "Triad")
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_HEADER = re.compile(r"^Function\s+(?:Best\s+)?Rate\s*\(?\s*([MG])B/s\)?.*$", re.MULTILINE)
_ROW = re.compile(rf"^\s*(Copy|Scale|Add|Triad):\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})",
                  re.MULTILINE)
_SINGLE = re.compile(rf"^Single STREAM (Copy|Scale|Add|Triad) GB/s ({_NUM})", re.MULTILINE)


def _mb(raw: str, unit: str) -> float:
    # exact decimal scaling: "49.9" GB/s is 49900.0 MB/s, not 49900.00000000001
    return float(Decimal(raw) * 1000) if unit == "G" else float(raw)


def parse(stdout: str, stderr: str) -> dict[str, float]:
    text = stdout if _HEADER.search(stdout) else stdout + "\n" + stderr
    headers = list(_HEADER.finditer(text))
    if not headers:
        raise ParseError("no STREAM table (\"Function ... Rate ... MB/s\") found")
    head = headers[-1]
    end = head.end()
    rows = {}
    for m in _ROW.finditer(text, end):
        if m.group(1) in rows:
            break
        rows[m.group(1)] = m
    if not rows:
        raise ParseError("STREAM table has no Copy/Scale/Add/Triad rows")
    unit = head.group(1)
    metrics: dict[str, float] = {}
    for name, m in rows.items():
        k = name.lower()
        metrics[f"{k}_mb_s"] = _mb(m.group(2), unit)
        metrics[f"{k}_avg_s"] = float(m.group(3))
        metrics[f"{k}_min_s"] = float(m.group(4))
        metrics[f"{k}_max_s"] = float(m.group(5))
    before, after = text[:head.start()], text[end:]
    size = re.findall(r"^Array size = (\d+)", before, re.MULTILINE)
    if size:
        metrics["array_size"] = float(size[-1])
    threads = re.findall(r"^Number of Threads counted = (\d+)", before, re.MULTILINE)
    if threads:
        metrics["threads"] = float(threads[-1])
    if "Solution Validates" in after:
        metrics["validated"] = 1.0
    elif "Failed Validation" in after:
        metrics["validated"] = 0.0
    for name, raw in _SINGLE.findall(text):
        metrics[f"single_{name.lower()}_mb_s"] = _mb(raw, "G")
    return metrics
