"""End to end: each slot really runs on the cpu its record names (read back from /proc)."""
from __future__ import annotations

import pytest

from conftest import run_cli
from manybench.inventory.topology import parse_cpulist, topology
from manybench.results.store import Store

pytestmark = pytest.mark.e2e

# the command's own view: the cpus it may use, and the cpu it is running on (stat field 39)
PROBE = ("grep Cpus_allowed_list /proc/self/status; "
         "echo ran_on $(cut -d' ' -f39 /proc/self/stat)")


def _records(plan_file, tmp_path, pin: str):
    out = str(tmp_path / pin)
    plan = plan_file(f"""
        [placement]
        workers = [1, 2]
        pin = "{pin}"
        [[task]]
        name = "probe"
        command = ["sh", "-c", "{PROBE}"]
    """, name=f"{pin}.toml")
    res = run_cli("run", plan, "-o", out, "-q")
    assert res.returncode == 0, res.stderr
    with Store(out, readonly=True) as st:
        return st.records()


def _seen(record) -> tuple[list[int], int]:
    lines = dict(line.split(None, 1) for line in record.extra["stdout"].splitlines())
    return parse_cpulist(lines["Cpus_allowed_list:"]), int(lines["ran_on"])


def test_pin_core_runs_each_slot_on_its_recorded_cpu(plan_file, tmp_path):
    recs = _records(plan_file, tmp_path, "core")
    assert [r.workers for r in recs] == [1, 2, 2]
    for r in recs:
        allowed, ran_on = _seen(r)
        assert r.cpu >= 0 and allowed == [r.cpu] and ran_on == r.cpu, (r.slot, r.cpu, allowed)
    two = [r.cpu for r in recs if r.workers == 2]
    assert len(set(two)) == min(2, len(topology()))       # two slots, two cpus when there are


def test_pin_none_lets_each_slot_use_every_cpu(plan_file, tmp_path):
    everything = sorted(c.id for c in topology())
    for r in _records(plan_file, tmp_path, "none"):
        allowed, ran_on = _seen(r)
        assert r.cpu == -1 and allowed == everything and ran_on in everything
