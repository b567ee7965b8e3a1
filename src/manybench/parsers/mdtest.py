"""mdtest's summary -> metrics: the "SUMMARY rate:" table (and "SUMMARY time:" when printed;
"SUMMARY:" in mdtest 1.9), rows "Directory creation", "File stat", "Tree removal", ... with
or without the colon after the operation, as the versions print them.

  {what}_{op}_ops_s            mean rate over tasks and iterations, operations/s
  {what}_{op}_ops_s_max, _min, _stddev
  {what}_{op}_time_s (+ _max, _min, _stddev)   from a "SUMMARY time:" table
  with what: dir, file, tree and op: create, stat, read, rename, remove
  (e.g. dir_create_ops_s, file_stat_ops_s, tree_remove_ops_s)
  tasks, items (from "N tasks, M files/directories"), iterations
A phase the run did not do (mdtest prints it as all zeros, e.g. stat after -C) is left out.
"""
from __future__ import annotations

import math
import re

from . import ParseError

NAME = "mdtest"
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?nan|-?inf"
_SUMMARY = re.compile(r"^SUMMARY(?: (rate|time))?:\s*\(of (\d+) iterations\)", re.MULTILINE)
_ROW = re.compile(rf"^\s*(Directory|File|Tree)\s+(creation|stat|read|rename|removal)\s*:?"
                  rf"\s+({_NUM})\s+({_NUM})\s+({_NUM})\s+({_NUM})\s*$",
                  re.MULTILINE | re.IGNORECASE)
_WHAT = {"directory": "dir", "file": "file", "tree": "tree"}
_OP = {"creation": "create", "stat": "stat", "read": "read", "rename": "rename",
       "removal": "remove"}
_TASKS = re.compile(r"^(\d+) tasks, (\d+) (?:files/directories|files|directories)",
                    re.MULTILINE)


def parse(stdout: str, stderr: str) -> dict[str, float]:
    text = stdout if _SUMMARY.search(stdout) else stdout + "\n" + stderr
    tables = list(_SUMMARY.finditer(text))
    if not tables:
        raise ParseError("no mdtest \"SUMMARY rate:\" table found")
    metrics: dict[str, float] = {}
    for i, t in enumerate(tables):
        kind = "time_s" if t.group(1) == "time" else "ops_s"
        end = tables[i + 1].start() if i + 1 < len(tables) else len(text)
        for m in _ROW.finditer(text, t.end(), end):
            base = f"{_WHAT[m.group(1).lower()]}_{_OP[m.group(2).lower()]}_{kind}"
            if all(float(v) == 0 for v in m.groups()[2:]):
                continue                      # a phase this run did not do (-C, -F, ...)
            for suffix, raw in zip(("_max", "_min", "", "_stddev"), m.groups()[2:]):
                v = float(raw)
                if math.isfinite(v):          # mdtest prints -nan for a phase with no time
                    metrics[base + suffix] = v
        metrics["iterations"] = float(t.group(2))
    if not any(k.endswith(("_ops_s", "_time_s")) for k in metrics):
        raise ParseError("mdtest SUMMARY table has no operation rows")
    tasks = _TASKS.findall(text)
    if tasks:
        metrics["tasks"], metrics["items"] = (float(v) for v in tasks[-1])
    return metrics
