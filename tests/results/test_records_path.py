"""benchmarks/records_path.py: the coordinator's record path alone, run small, leaves nothing
behind in $TMPDIR (its results.db was left there on every run)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_record_path_benchmark_removes_its_temporary_directory(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp / "theirs").mkdir()      # what was there before is left alone
    before = sorted(os.listdir(tmp))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "records_path.py"),
                          "2", "2", "1"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TMPDIR": str(tmp)})
    assert out.returncode == 0, out.stderr
    assert {"us_per_record", "ms_per_phase"} <= set(json.loads(out.stdout))
    assert sorted(os.listdir(tmp)) == before
