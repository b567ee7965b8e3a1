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


@pytest.mark.parametrize("kind", sorted(JOBQUEUE))
def test_a_job_joins_with_the_clusters_credentials_and_works_in_a_private_directory(kind):
    """Issue 28: each job's worker presents the cluster's certificates (their paths only:
    nothing secret on its command line) and works in a directory its job made with mktemp,
    removed when the job ends, not Dask's shared $TMPDIR/dask-scratch-space."""
    from manybench.engines.access import Access
    from manybench.security.credentials import default_dir, load
    cred = load(default_dir())
    opts = jobqueue_options(kind, parse_plan(PLAN), None, Access(cred, "test"))
    opts.pop("scheduler_options")
    job_cls = getattr(dask_jobqueue, JOBQUEUE[kind]).job_cls
    script = job_cls(scheduler="tls://127.0.0.1:8786", name="n", **opts).job_script()
    assert f"--tls-ca-file {cred.ca}" in script and f"--tls-key {cred.key}" in script
    assert open(cred.key).read().splitlines()[1] not in script       # the key's path, not it
    assert 'export MANYBENCH_WORKDIR="$(mktemp -d)"' in script
    assert '--local-directory "$MANYBENCH_WORKDIR"' in script and "EXIT" in script
    plain = job_cls(scheduler="tcp://127.0.0.1:8786", name="n",
                    **{k: v for k, v in jobqueue_options(kind, parse_plan(PLAN), None).items()
                       if k != "scheduler_options"}).job_script()
    assert "--tls-" not in plain
