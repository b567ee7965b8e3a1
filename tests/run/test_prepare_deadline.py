"""Prepare has a deadline (issue 18, item 2): a slot whose prepare blocks (a launcher that
never starts its kernel, a file system that hangs) is stopped after the task's timeout (or
the stated default), its record an error saying so, and the run goes on to its next phase."""
from __future__ import annotations

import os
import uuid

import pytest

from builders import survivors, tagged
from conftest import export_json, run_cli

pytestmark = pytest.mark.e2e   # runs of the command line


@pytest.mark.parametrize("cgroup", ["1", "0"])
def test_a_prepare_that_blocks_is_an_error_record_and_the_run_goes_on(plan_file, tmp_path,
                                                                      cgroup):
    tag = uuid.uuid4().hex
    # the wrap's launcher never starts mbkernel: the slot waits in its prepare
    plan = plan_file("""
        name = "stuck"
        [[task]]
        name = "stuck"
        kernel = "io.write"
        size = "64KiB"
        timeout = "2s"
        [[task]]
        name = "after"
        kernel = "null"
        [[variant]]
        name = "hang"
        tasks = ["stuck"]
        wrap = ["sh", "-c", "export MB_ORPHAN_TAG=@TAG@; sleep 300; exec \\"$@\\"", "sh"]
        """.replace("@TAG@", tag))
    out = str(tmp_path / "out")
    res = run_cli("run", plan, "-o", out, "-q", timeout=60,
                  env={**os.environ, "MANYBENCH_CGROUP": cgroup})
    assert res.returncode == 1, res.stderr
    rows = {r["task"]: r for r in export_json(out)}
    assert rows["stuck"]["status"] == "error", rows["stuck"]
    assert "prepare did not finish within 2s" in rows["stuck"]["error"]
    assert rows["after"]["status"] == "ok"        # the run went on
    left = survivors(tag)      # the stuck launcher went with its slot
    for p in tagged(tag):
        p.kill()
    assert not left, [(p.pid, p.cmdline()) for p in left]
