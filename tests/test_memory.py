"""The coordinator's memory stays flat over a long run (issue 18, item 7): per-phase state
is released, so 20,000 null phases hold no more after phase 1,000 than at it (it grew ~140
bytes a phase: every phase kept a dict pickling made, and SQLite's cache filled)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

PHASES = 20_000
FIRST = 1_000
LIMIT_BYTES = 1_000_000

# The coordinator in a process of its own, its resident size read at the start of phase
# FIRST and of the last phase.
SCRIPT = f"""
import json, sys, tempfile
import psutil
from manybench.engines.local import LocalEngine
from manybench.plan import parse_plan
from manybench.plan.expand import expand
from manybench.run.coordinator import Coordinator

plan = parse_plan('repeat = {PHASES}\\n[[task]]\\nname = "n"\\nkernel = "null"\\n')
rss, seen = {{}}, [0]
run_phase = Coordinator._run_phase

def measured(self, *args, **kw):
    seen[0] += 1
    if seen[0] in ({FIRST}, {PHASES}):
        rss[seen[0]] = psutil.Process().memory_info().rss
    return run_phase(self, *args, **kw)

Coordinator._run_phase = measured
out = Coordinator(plan, expand(plan), tempfile.mkdtemp(), LocalEngine(), ["test"],
                  progress=False).run()
print(json.dumps({{"status": out.status, "rss": rss}}))
"""


@pytest.mark.e2e
@pytest.mark.timeout(600)
def test_coordinator_memory_is_flat_over_20000_phases(tmp_path):
    res = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["status"] == "finished"
    first, last = got["rss"][str(FIRST)], got["rss"][str(PHASES)]
    assert last - first <= LIMIT_BYTES, f"grew {last - first:,} bytes after phase {FIRST:,}"
