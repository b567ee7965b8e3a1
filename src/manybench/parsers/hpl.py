"""HPL's report (HPL.out, xhpl's stdout, or the HPL section of hpcc's hpccoutf.txt) -> metrics.

Each "T/V N NB P Q Time Gflops" row (WR11C2R4 ...) is one run; the residual check printed
after it (PASSED or FAILED) belongs to it.

  gflops        the best run's Gflops;   gflops_runs  how many runs the output holds
  gflops_min, gflops_mean               over the runs, when there are several
  time_s, n, nb, p, q                   of the best run
  residual      the best run's scaled residual
  residual_passed  1 when every run's residual check PASSED, 0 when any FAILED
                   (left out when the output has no checks): look at it before trusting gflops
"""
from __future__ import annotations

import re

from . import ParseError

NAME = "hpl"
VERSIONS = ("2.3", "hpcc 1.5.0")    # fixtures: real outputs
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_ROW = re.compile(rf"^(W[RC]\w*)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+({_NUM})\s+({_NUM})",
                  re.MULTILINE)
_CHECK = re.compile(rf"^\|\|Ax-b\|\|_oo/\(eps\*.*?=\s*({_NUM})\s*\.+\s*(PASSED|FAILED)",
                    re.MULTILINE)


def parse(stdout: str, stderr: str) -> dict[str, float]:
    text = stdout if _ROW.search(stdout) else stdout + "\n" + stderr
    rows = list(_ROW.finditer(text))
    if not rows:
        raise ParseError("no HPL result row (\"T/V N NB P Q Time Gflops\", WR...) found")
    runs = []
    for i, m in enumerate(rows):
        end = rows[i + 1].start() if i + 1 < len(rows) else len(text)
        check = _CHECK.search(text, m.end(), end)
        runs.append({
            "n": float(m.group(2)), "nb": float(m.group(3)), "p": float(m.group(4)),
            "q": float(m.group(5)), "time_s": float(m.group(6)), "gflops": float(m.group(7)),
            "residual": float(check.group(1)) if check else None,
            "passed": (check.group(2) == "PASSED") if check else None,
        })
    best = max(runs, key=lambda r: r["gflops"])
    metrics = {k: best[k] for k in ("gflops", "time_s", "n", "nb", "p", "q")}
    metrics["gflops_runs"] = float(len(runs))
    if len(runs) > 1:
        metrics["gflops_min"] = min(r["gflops"] for r in runs)
        metrics["gflops_mean"] = sum(r["gflops"] for r in runs) / len(runs)
    if best["residual"] is not None:
        metrics["residual"] = best["residual"]
    checks = [r["passed"] for r in runs if r["passed"] is not None]
    if checks:
        metrics["residual_passed"] = 1.0 if all(checks) else 0.0
    return metrics
