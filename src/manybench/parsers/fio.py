"""fio's JSON output (`--output-format=json`, `json+`, or `json,normal`) -> metrics.

fio may print text before its JSON object (`json,normal` prints the job header and
"Laying out IO file" lines first, and its text report after); the object is found wherever
it starts on a line. Directions (read, write, trim) are reported only when some job moved
data in them, so a mixed job gives both read_* and write_* names and a write job only write_*.

Summed over all jobs:   {dir}_mib_s, {dir}_iops, {dir}_bytes, {dir}_ios
Latency over all jobs:  {dir}_clat_mean_us (sample-weighted), {dir}_clat_max_us,
                        {dir}_clat_p50_us/_p90_us/_p95_us/_p99_us/_p99_9_us, {dir}_lat_mean_us
Whole run:              runtime_s (longest job), jobs, job_errors
Per job (only when there are several job entries): job{i}_{name above}, i in output order.

Percentiles over several jobs are exact when fio printed its latency histograms (json+):
the bins are merged, as fio's group_reporting does; from plain json they are the worst
(highest) job's value.
"""
from __future__ import annotations

import json
import re

from . import ParseError

NAME = "fio"
VERSIONS = ("3.33",)    # fixtures: real outputs
DIRECTIONS = ("read", "write", "trim")
PERCENTILES = {"50.000000": "p50", "90.000000": "p90", "95.000000": "p95",
               "99.000000": "p99", "99.900000": "p99_9"}
_OBJ_START = re.compile(r"^\{", re.MULTILINE)


def _find_json(text: str) -> dict | None:
    decoder = json.JSONDecoder()
    for m in _OBJ_START.finditer(text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("jobs"), list):
            return obj
    return None


def _clat(d: dict) -> tuple[dict, float]:
    """The completion-latency block and what its numbers are divided by to give us."""
    if isinstance(d.get("clat_ns"), dict):
        return d["clat_ns"], 1000.0
    if isinstance(d.get("clat"), dict):          # fio < 3.0 reported usec
        return d["clat"], 1.0
    return {}, 1.0


def _lat_mean_us(d: dict) -> float | None:
    if isinstance(d.get("lat_ns"), dict) and d["lat_ns"].get("N", 1):
        return d["lat_ns"].get("mean", 0.0) / 1000.0
    if isinstance(d.get("lat"), dict):
        return d["lat"].get("mean", 0.0)
    return None


def _moved(d: dict) -> bool:
    return bool(d.get("io_bytes") or d.get("total_ios") or d.get("io_kbytes"))


def _bw_bytes(d: dict) -> float:
    if "bw_bytes" in d:
        return float(d["bw_bytes"])
    return float(d.get("bw", 0)) * 1024.0         # older fio: KiB/s only


def _io_bytes(d: dict) -> float:
    if "io_bytes" in d:
        return float(d["io_bytes"])
    return float(d.get("io_kbytes", 0)) * 1024.0


def _percentile_from_bins(bins: dict[int, int], total: int, pct: float) -> float:
    """fio's own rule: the first bucket value whose cumulative count reaches pct of total."""
    need = total * pct / 100.0
    seen = 0
    for value in sorted(bins):
        seen += bins[value]
        if seen >= need:
            return float(value)
    return float(max(bins))


def _direction(blocks: list[dict]) -> dict[str, float]:
    """Metrics of one direction over the given jobs' blocks (one block: that job alone)."""
    out = {
        "mib_s": sum(_bw_bytes(b) for b in blocks) / 2**20,
        "iops": sum(float(b.get("iops", 0)) for b in blocks),
        "bytes": sum(_io_bytes(b) for b in blocks),
        "ios": float(sum(int(b.get("total_ios", 0)) for b in blocks)),
    }
    clats = [(c, f) for c, f in map(_clat, blocks) if c.get("N", 0)]
    if clats:
        n = sum(c["N"] for c, _ in clats)
        out["clat_mean_us"] = sum(c["mean"] / f * c["N"] for c, f in clats) / n
        out["clat_max_us"] = max(c["max"] / f for c, f in clats)
        if all("bins" in c for c, _ in clats) and all(f == 1000.0 for _, f in clats):
            merged: dict[int, int] = {}
            for c, _ in clats:
                for k, v in c["bins"].items():
                    merged[int(k)] = merged.get(int(k), 0) + int(v)
            total = sum(merged.values())
            for key, name in PERCENTILES.items():
                if total and all(key in c.get("percentile", {}) for c, _ in clats):
                    out[f"clat_{name}_us"] = _percentile_from_bins(merged, total,
                                                                   float(key)) / 1000.0
        else:
            for key, name in PERCENTILES.items():
                vals = [c["percentile"][key] / f for c, f in clats
                        if key in c.get("percentile", {})]
                if len(vals) == len(clats):
                    out[f"clat_{name}_us"] = float(max(vals))
    lats = [(b["lat_ns"]["N"] if "lat_ns" in b else 1, _lat_mean_us(b)) for b in blocks]
    lats = [(n, m) for n, m in lats if m is not None and n]
    if lats:
        out["lat_mean_us"] = sum(n * m for n, m in lats) / sum(n for n, _ in lats)
    return out


def _runtime_s(job: dict) -> float:
    if "job_runtime" in job:
        return float(job["job_runtime"]) / 1e3
    return max((float(job.get(d, {}).get("runtime", 0)) for d in DIRECTIONS),
               default=0.0) / 1e3


def parse(stdout: str, stderr: str) -> dict[str, float]:
    data = _find_json(stdout) or _find_json(stderr)
    if data is None:
        raise ParseError("no fio JSON object with \"jobs\" found "
                         "(run fio with --output-format=json)")
    jobs = [j for j in data["jobs"] if isinstance(j, dict)]
    if not jobs:
        raise ParseError("fio JSON has no jobs")
    metrics: dict[str, float] = {}
    for d in DIRECTIONS:
        blocks = [j[d] for j in jobs if isinstance(j.get(d), dict)]
        if any(_moved(b) for b in blocks):
            for k, v in _direction(blocks).items():
                metrics[f"{d}_{k}"] = v
    metrics["runtime_s"] = max(_runtime_s(j) for j in jobs)
    metrics["jobs"] = float(len(jobs))
    metrics["job_errors"] = float(sum(1 for j in jobs if j.get("error")))
    if len(jobs) > 1:
        for i, job in enumerate(jobs):
            for d in DIRECTIONS:
                if isinstance(job.get(d), dict) and _moved(job[d]):
                    for k, v in _direction([job[d]]).items():
                        metrics[f"job{i}_{d}_{k}"] = v
            metrics[f"job{i}_runtime_s"] = _runtime_s(job)
    return metrics
