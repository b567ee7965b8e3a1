"""Failures are caught where they can really happen and nowhere else (issue 16, item 7): what a
foreign machine, a busy disk or a cluster can raise is handled as before; an error of our own
(a bug) reaches the caller instead of passing for a missing probe, a damaged file or a
cluster that would not start."""
from __future__ import annotations

import sqlite3
import threading

import pytest

from manybench.engines import clusters
from manybench.engines.base import EngineError
from manybench.inventory import environment, provenance
from manybench.plan import parse_plan
from manybench.results.store import Store
from manybench.run import resume
from manybench.run.heartbeat import Heartbeat


def _bug() -> None:
    raise TypeError("a bug of ours")


@pytest.mark.parametrize("safe", [environment._safe, provenance._safe])
def test_a_probe_failing_on_this_machine_is_unknown_but_a_bug_is_raised(safe, tmp_path):
    assert safe(lambda: open(tmp_path / "missing")) is None      # a file a container lacks
    assert safe(lambda: int("n/a")) is None                      # an odd /proc line
    assert safe(lambda: {}["MemTotal"]) is None
    with pytest.raises(TypeError, match="a bug of ours"):
        safe(_bug)


def test_a_snapshot_raises_a_bug_of_collect(monkeypatch):
    monkeypatch.setattr(provenance, "collect", _bug)
    with pytest.raises(TypeError, match="a bug of ours"):
        provenance.snapshot([], [])


def _stored_run(tmp_path) -> str:
    plan = parse_plan('[[task]]\nname = "n"\nkernel = "null"\n', "p.toml", ())
    with Store(str(tmp_path)) as st:
        st.begin_run("r1", plan, ["manybench", "run", "p.toml"], {})
        st.end_run("r1", "interrupted")
    return str(tmp_path)


def test_resume_of_an_unreadable_results_db_is_told_but_a_bug_is_raised(tmp_path, monkeypatch):
    directory = _stored_run(tmp_path)
    assert resume.latest_run(directory)[0].run_id == "r1"

    def locked(self):
        raise sqlite3.OperationalError("database is locked")
    monkeypatch.setattr(Store, "runs", locked)
    with pytest.raises(resume.ResumeError,
                       match=r"cannot read its results: locked by another process \(waited"):
        resume.latest_run(directory)
    monkeypatch.setattr(Store, "runs", lambda self: _bug())
    with pytest.raises(TypeError, match="a bug of ours"):
        resume.latest_run(directory)


class _Beats:
    """A store whose heartbeat fails as told, then counts."""

    def __init__(self, first: BaseException) -> None:
        self.first, self.calls, self.done = first, 0, threading.Event()

    def heartbeat(self, run_id: str) -> None:
        self.calls += 1
        if self.calls == 2:
            raise self.first
        if self.calls == 4:
            self.done.set()


def test_a_heartbeat_goes_on_past_a_busy_disk():
    store = _Beats(sqlite3.OperationalError("database is locked"))
    beat = Heartbeat(store, "r1", every_s=0.001).start()
    try:
        assert store.done.wait(60), store.calls
    finally:
        beat.stop()
    assert store.calls >= 4


def test_a_heartbeat_bug_is_not_swallowed(monkeypatch):
    seen: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_value))
    store = _Beats(TypeError("a bug of ours"))
    beat = Heartbeat(store, "r1", every_s=0.001).start()
    beat._thread.join(30)      # a bug ends the thread at once; a swallowed one never
    beat.stop()
    assert [str(e) for e in seen] == ["a bug of ours"] and store.calls == 2


class _Refused:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __call__(self, *a, **kw):
        raise self.error


@pytest.mark.parametrize("start", ["jobqueue", "hosts", "allocation"])
def test_a_cluster_that_cannot_start_is_an_engine_error_but_a_bug_is_raised(start, tmp_path,
                                                                          monkeypatch):
    import dask_jobqueue
    import distributed
    import manybench.engines.ssh
    plan = parse_plan('[[task]]\nname = "n"\nkernel = "null"\n', "p.toml", ())
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node01 2\n")
    calls = {"jobqueue": lambda: clusters.CLUSTERS["slurm"](plan, 2),
             "hosts": lambda: clusters.from_hosts(plan, str(hostfile), 2),
             "allocation": lambda: clusters.in_allocation(plan, 2)}
    where = {"jobqueue": (dask_jobqueue, "SLURMCluster"),
             "hosts": (manybench.engines.ssh, "ssh_cluster"),
             "allocation": (distributed, "LocalCluster")}[start]
    monkeypatch.setattr(*where, _Refused(RuntimeError("Cluster failed to start: no sbatch")))
    with pytest.raises(EngineError, match="Cluster failed to start"):
        calls[start]()
    monkeypatch.setattr(*where, _Refused(TypeError("a bug of ours")))
    with pytest.raises(TypeError, match="a bug of ours"):
        calls[start]()
