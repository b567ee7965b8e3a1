"""The batch job each node gets, for every supported batch system (no server needed: the
job script is what dask-jobqueue would submit)."""
from __future__ import annotations

import pytest

dask_jobqueue = pytest.importorskip("dask_jobqueue")

from manybench.engines.clusters import JOBQUEUE, jobqueue_options  # noqa: E402
from manybench.plan import parse_plan  # noqa: E402

PLAN = """
[cluster]
queue = "batch"
account = "proj42"
walltime = "00:30:00"
slots = 8
job_script_prologue = ["module load gcc"]
[[task]]
name = "a"
kernel = "null"
"""


@pytest.mark.parametrize("kind", sorted(JOBQUEUE))
def test_job_script_carries_agent_queue_account_and_slots(kind):
    opts = jobqueue_options(kind, parse_plan(PLAN), None)
    opts.pop("scheduler_options")
    job_cls = getattr(dask_jobqueue, JOBQUEUE[kind]).job_cls
    script = job_cls(scheduler="tcp://127.0.0.1:8786", name="n", **opts).job_script()
    assert "--preload manybench.node.dask_plugin" in script
    assert "export MANYBENCH_SLOTS=8" in script and "module load gcc" in script
    assert "batch" in script and "proj42" in script and "00:30:00" in script
