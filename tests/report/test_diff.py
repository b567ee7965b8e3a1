"""`manybench diff RUN_A RUN_B`: two real runs' environments, compared key by key; exit 0 when
the same, 1 when they differ, 2 for an argument that is not a run."""
from __future__ import annotations

import json
import os
import sqlite3
import stat

import pytest

from conftest import run_cli
from manybench.inventory.provenance import snapshot
from manybench.results.contract import START
from manybench.results.store import Store

# on a machine without cpufreq the clock is measured: two runs under the other tests' load
# measure it apart (3.7 and 3.6 GHz), which diff leaves out as a measurement
# (tests/node/test_diff_measured.py); a read clock that changed is still shown
pytestmark = pytest.mark.e2e

PLAN = """
    name = "diffed"
    [[task]]
    name = "sync"
    kernel = "null"
"""


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two runs of one plan into one results directory: (dir, run A, run B)."""
    d = tmp_path_factory.mktemp("diff")
    plan = d / "plan.toml"
    plan.write_text(PLAN)
    out = str(d / "res")
    for _ in range(2):
        res = run_cli("run", str(plan), "-o", out, "-q")
        assert res.returncode == 0, res.stderr
    with Store(out, readonly=True) as st:
        a, b = (r.run_id for r in st.runs())
    return out, a, b


def _copy(src: str, dst) -> str:
    """A results directory of its own (the runs' rows), to edit without touching the others."""
    os.makedirs(dst)
    s = sqlite3.connect(os.path.join(src, "results.db"))
    d = sqlite3.connect(os.path.join(dst, "results.db"))
    s.backup(d)
    s.close()
    d.close()
    return str(dst)


def _set_start(directory: str, run: str, data_by_node: dict) -> None:
    """Make `data_by_node` the run's start snapshots (replacing any the run took itself)."""
    db = sqlite3.connect(os.path.join(directory, "results.db"))
    db.execute("DELETE FROM snapshots WHERE run=? AND label=?", (run, START))
    db.commit()
    db.close()
    with Store(directory) as st:
        st.write_snapshots(run, START, data_by_node)


def _node(directory: str, run: str) -> str:
    with Store(directory, readonly=True) as st:
        return st.nodes(run)[0].name


def test_two_runs_of_one_plan_on_one_machine_do_not_differ(two_runs):
    out, a, b = two_runs
    res = run_cli("diff", f"{out}:{a}", f"{out}:{b}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no differences" in res.stdout and f"A: {out}:{a}" in res.stdout
    res = run_cli("diff", f"{out}:{a}", out)             # a directory: its latest run, B
    assert res.returncode == 0 and f"B: {out}:{b}" in res.stdout


def test_a_changed_environment_is_shown_key_by_key(two_runs, tmp_path):
    out, a, b = two_runs
    d = _copy(out, tmp_path / "res")
    node = _node(d, a)
    # start snapshots taken for real; B's node then has a tool A's had not (a PATH the
    # snapshot records), a different THP setting and its scratch on another file system
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "mb-diff-tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    plain = snapshot({"scratch": str(tmp_path)}, ["mb-diff-tool", "sh"])
    with_tool = snapshot({"scratch": str(tmp_path)}, ["mb-diff-tool", "sh"],
                         env={"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    with_tool.setdefault("tunables", {}).setdefault("thp", {})["enabled"] = "always-test"
    with_tool["dirs"]["scratch"]["fstype"] = "lustre-test"
    _set_start(d, a, {node: plain})
    _set_start(d, b, {node: with_tool})
    # the kernel changed, as seen by the coordinator and by the node: one finding
    db = sqlite3.connect(os.path.join(d, "results.db"))
    for table, col, key in (("runs", "environment", "id"), ("nodes", "inventory", "run")):
        text = db.execute(f"SELECT {col} FROM {table} WHERE {key}=?", (b,)).fetchone()[0]
        env = json.loads(text)
        env["kernel"] = "9.9.9-test"
        db.execute(f"UPDATE {table} SET {col}=? WHERE {key}=?", (json.dumps(env), b))
    db.commit()
    db.close()

    res = run_cli("diff", f"{d}:{a}", f"{d}:{b}")
    assert res.returncode == 1, res.stdout + res.stderr
    text = res.stdout
    assert "run environment" in text and f"node {node}: start" in text
    assert "-> 9.9.9-test" in text and text.count("9.9.9-test") == 1   # shown once
    assert "(1 more as above)" in text
    assert "~ tunables.thp.enabled:" in text and "-> always-test" in text
    assert "~ dirs.scratch.fstype:" in text and "-> lustre-test" in text
    assert "~ programs.mb-diff-tool.found: false -> true" in text
    assert f"+ programs.mb-diff-tool.path: {tool}" in text
    assert "programs.sh" not in text and "taken_ns" not in text      # same; noise
    # JSON: the same findings, for scripts
    res = run_cli("diff", f"{d}:{a}", f"{d}:{b}", "--json")
    assert res.returncode == 1
    got = json.loads(res.stdout)
    start = next(s for s in got["sections"] if s["title"] == f"node {node}: start")
    changed = {c["key"]: (c["a"], c["b"]) for c in start["changed"]}
    assert changed["dirs.scratch.fstype"][1] == "lustre-test"
    assert got["noise_left_out"] >= 1
    # --all: the keys that always differ (when each snapshot was taken) too
    res = run_cli("diff", f"{d}:{a}", f"{d}:{b}", "--all")
    assert res.returncode == 1 and "~ taken_ns:" in res.stdout


def test_runs_on_differently_named_nodes_are_paired(two_runs, tmp_path):
    out, a, b = two_runs
    d = _copy(out, tmp_path / "res")
    db = sqlite3.connect(os.path.join(d, "results.db"))
    db.execute("UPDATE nodes SET name='other-node' WHERE run=?", (b,))
    db.execute("UPDATE snapshots SET node='other-node' WHERE run=?", (b,))   # every table
    db.commit()
    db.close()
    res = run_cli("diff", f"{d}:{a}", f"{d}:{b}")
    assert res.returncode == 0, res.stdout      # one node each: the same role, same facts


@pytest.mark.parametrize("args, says", [
    (("{tmp}/nowhere", "{out}"), "RUN_A: '{tmp}/nowhere' is not a directory"),
    (("{out}", "{tmp}"), "RUN_B: no results.db in {tmp}"),
    (("{out}:no-such-run", "{out}"), "RUN_A: no run 'no-such-run' in {out}; runs there: "),
    (("{out}", "{tmp}/nowhere:x"), "RUN_B: '{tmp}/nowhere' is not a directory"),
])
def test_an_argument_that_is_no_run_exits_2_naming_it(two_runs, tmp_path, args, says):
    out = two_runs[0]
    fill = lambda s: s.replace("{tmp}", str(tmp_path)).replace("{out}", out)   # noqa: E731
    res = run_cli("diff", *(fill(a) for a in args))
    assert res.returncode == 2, res.stdout + res.stderr
    assert fill(says) in res.stderr and "Traceback" not in res.stderr


def test_an_empty_results_directory_exits_2(tmp_path):
    Store(tmp_path / "empty").close()
    res = run_cli("diff", str(tmp_path / "empty"), str(tmp_path / "empty"))
    assert res.returncode == 2 and "RUN_A: no runs in" in res.stderr
    assert "Traceback" not in res.stderr
