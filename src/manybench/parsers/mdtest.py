"""mdtest's summary -> metrics, for the outputs of mdtest 3.3, 4.0 and 4.1 (hpc/ior).

The tables, as each version prints them:
  3.3   "SUMMARY rate: (of N iterations)", rows "Directory creation        :  max min mean sd"
  4.0   "SUMMARY rate: (of N iterations)", rows without the colon
  4.1   "SUMMARY rate (in ops/sec): (of N iterations)"
  and a time table beside it with -P (rate and time) or instead of it with -Z: "SUMMARY time:"
  (4.1: "SUMMARY time (in ms/op):", a label of its own: the values are each phase's time in
  seconds in every version, the same as 4.0 prints, which mdtest's source confirms).
With --showRankStatistics (4.x) a row has 7 numbers: per rank max, min, mean, then the four
below.

What the four numbers are over differs by version:
  3.3   max, min, mean, population stddev over every task's figure in every iteration (each
        task holds the aggregate rate of the iteration)
  4.x   over iterations of the aggregate figure: per iteration, the slowest task's rate x tasks
        (time: the slowest task's time); the stddev is the sample one (n - 1)

Metrics (names carry the unit; what: dir, file, tree; op: create, stat, read, rename, remove):
  {what}_{op}_ops_s            mean rate, operations/s
  {what}_{op}_ops_s_max, _min, _stddev
  {what}_{op}_time_s (+ _max, _min, _stddev)        from a time table, seconds per phase
  {what}_{op}_rank_ops_s_max, _min, _mean            4.x --showRankStatistics: over ranks
                                                      (_rank_time_s_* in a time table)
  tasks, items ("N tasks, M files/directories"), iterations, version (the text "4.1" for 4.1.0)
A phase the run did not do (all zeros, e.g. stat after -C) is left out.
"""
from __future__ import annotations

import math
import re

from . import ParseError

NAME = "mdtest"
VERSIONS = ("3.3.0", "4.0.0", "4.1.0+dev")    # fixtures: real outputs
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?nan|-?inf"
_SUMMARY = re.compile(r"^SUMMARY(?: (rate|time))?(?: \(in [^)]*\))?:\s*\(of (\d+) iterations\)",
                      re.MULTILINE)
_ROW = re.compile(rf"^\s*(Directory|File|Tree)\s+(creation|stat|read|rename|removal)\s*:?"
                  rf"((?:\s+(?:{_NUM})){{4}}(?:(?:\s+(?:{_NUM})){{3}})?)\s*$",
                  re.MULTILINE | re.IGNORECASE)
_WHAT = {"directory": "dir", "file": "file", "tree": "tree"}
_OP = {"creation": "create", "stat": "stat", "read": "read", "rename": "rename",
       "removal": "remove"}
_TASKS = re.compile(r"^(\d+) tasks, (\d+) (?:files/directories|files|directories)",
                    re.MULTILINE)
_VERSION = re.compile(r"^mdtest-(\d+)\.(\d+)", re.MULTILINE)


def _row(base: str, values: list[float], metrics: dict[str, float]) -> None:
    if len(values) == 7:       # --showRankStatistics: per rank max, min, mean first
        rank = base.replace("_ops_s", "_rank_ops_s").replace("_time_s", "_rank_time_s")
        for suffix, v in zip(("_max", "_min", "_mean"), values[:3]):
            if math.isfinite(v):
                metrics[rank + suffix] = v
        values = values[3:]
    for suffix, v in zip(("_max", "_min", "", "_stddev"), values):
        if math.isfinite(v):              # mdtest prints -nan for a phase with no time
            metrics[base + suffix] = v


def parse(stdout: str, stderr: str) -> dict[str, float | str]:
    text = stdout if _SUMMARY.search(stdout) else stdout + "\n" + stderr
    tables = list(_SUMMARY.finditer(text))
    if not tables:
        raise ParseError("no mdtest \"SUMMARY rate\" or \"SUMMARY time\" table found")
    metrics: dict[str, float | str] = {}
    for i, t in enumerate(tables):
        kind = "time_s" if t.group(1) == "time" else "ops_s"
        end = tables[i + 1].start() if i + 1 < len(tables) else len(text)
        for m in _ROW.finditer(text, t.end(), end):
            values = [float(v) for v in m.group(3).split()]
            if all(v == 0 for v in values):
                continue                      # a phase this run did not do (-C, -F, ...)
            _row(f"{_WHAT[m.group(1).lower()]}_{_OP[m.group(2).lower()]}_{kind}", values,
                 metrics)
        metrics["iterations"] = float(t.group(2))
    if not any(k.endswith(("_ops_s", "_time_s")) for k in metrics):
        raise ParseError("mdtest SUMMARY table has no operation rows")
    tasks = _TASKS.findall(text)
    if tasks:
        metrics["tasks"], metrics["items"] = (float(v) for v in tasks[-1])
    v = _VERSION.search(text)
    if v:
        metrics["version"] = f"{v.group(1)}.{v.group(2)}"     # text: 4.10 is not 4.1
    return metrics
