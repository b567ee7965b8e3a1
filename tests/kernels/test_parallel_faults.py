"""A parallel task's launcher faults with real Open MPI and real MPICH (issue 31): a launcher
that hangs at start-up is bounded by the task's `startup_timeout`, not its `timeout`, and its
output is kept; a rank killed by a signal is told as a signal by every family; a rank that
leaves a daemon holding its launcher's output ends when it did, the daemon named and killed."""
from __future__ import annotations

import re

import pytest
from conftest import export_json, run_cli
from mpi_helpers import FAMILIES, _alive, build_probe

pytestmark = pytest.mark.e2e   # real MPI jobs through the CLI

# how each family's launcher is told to start the ranks on a host it cannot resolve
BAD_HOST = {"openmpi": ["--host", "nosuchhost.invalid"],
            "mpich": ["-hosts", "nosuchhost.invalid"]}


@pytest.fixture(scope="module", params=list(FAMILIES))
def mpi(request, tmp_path_factory):
    """(family, launcher, probe executable) built with that family's mpicc."""
    return build_probe(request.param, tmp_path_factory)


def _run(plan_file, text: str, tmp_path, expect: int) -> tuple[list[dict], str]:
    out = str(tmp_path / "res")
    done = run_cli("run", plan_file(text), "-o", out, timeout=600)
    assert done.returncode == expect, done.stdout[-3000:] + done.stderr[-3000:]
    return export_json(out), done.stderr


def _first(recs: list[dict]) -> dict:
    return next(r for r in recs if r["slot"] == 0)


def test_a_bad_host_ends_within_the_start_up_bound_with_the_ssh_message(mpi, plan_file,
                                                                        tmp_path):
    """MPICH's Hydra prints ssh's "Could not resolve hostname" and hangs: the job ends at
    its start-up bound (a few seconds here), not at the task's timeout (2 h), and the
    first record keeps what the launcher said. Open MPI exits on its own: the same message
    is kept."""
    fam, launcher, probe = mpi
    recs, _ = _run(plan_file, f"""
        name = "bad-host"
        [placement]
        workers = 2
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = 2
        timeout = "2h"
        startup_timeout = "8s"
        launcher = "{launcher}"
        launcher_args = {BAD_HOST[fam]!r}
        """.replace("'", '"'), tmp_path, expect=1)
    first = _first(recs)
    assert first["status"] == "error"
    assert "Could not resolve hostname nosuchhost" in first["error"], first["error"]
    assert "Could not resolve hostname nosuchhost" in first["stderr"] + first["stdout"]
    if fam == "mpich":     # Hydra hangs: the bound ended it, and the record says which
        assert "not ready within 8s" in first["error"] and "startup_timeout" in first["error"]
    other = next(r for r in recs if r["slot"] == 1)
    assert other["status"] == "error" and "did not start" in other["error"], other["error"]
    assert _alive(str(tmp_path / "res")) == []


@pytest.mark.parametrize("how", ["segv", "sh"])
def test_a_rank_killed_by_a_signal_is_told_as_a_signal(mpi, how, plan_file, tmp_path):
    """Rank 1 raises SIGSEGV: Open MPI says "exited on signal 11 (Segmentation fault)",
    MPICH's Hydra "EXIT CODE: 11" beside "Segmentation fault (signal 11)" and exits with
    11; every record names the signal, never an exit code 11. Behind a shell that does not
    exec it, Open MPI reports the shell's "Exit code: 139", read as signal 11 too; Hydra
    reports only the rank it killed then (signal 9), or nothing but its own status 139."""
    fam, launcher, probe = mpi
    command = [probe, "segv"] if how == "segv" else ["sh", "-c", f"{probe} segv; exit $?"]
    recs, _ = _run(plan_file, f"""
        name = "signal"
        [placement]
        workers = 2
        [[task]]
        name = "probe"
        command = {command!r}
        ranks = 2
        timeout = "60s"
        launcher = "{launcher}"
        """.replace("'", '"'), tmp_path, expect=1)
    first, second = _first(recs), next(r for r in recs if r["slot"] == 1)
    assert first["status"] == "error" and second["status"] == "error"
    for r in (first, second):
        # a status that is a signal says so: "exited with status 11 (a rank's signal 11 ...)"
        assert not re.search(r"(?:exit code|status) (?:9|11|139)\b(?! \((?:a rank's )?signal)",
                             r["error"]), r["error"]
    told = [first] if how == "sh" and fam == "mpich" else [first, second]
    sig = "signal 11 (SIGSEGV: Segmentation fault)"
    for r in told:
        assert sig in r["error"] or how == "sh" and "signal 9 (SIGKILL: Killed)" in r["error"], \
            r["error"]


def test_a_daemon_a_rank_leaves_holding_the_output_is_named_and_killed(mpi, plan_file,
                                                                       tmp_path):
    """Rank 1 leaves a daemon that holds its stdout (the pipe its launcher reads) and every
    rank finalizes: the job ends when its ranks did, not at the task's timeout; the daemon
    is named in a warning and killed."""
    _, launcher, probe = mpi
    recs, stderr = _run(plan_file, f"""
        name = "daemon"
        [placement]
        workers = 2
        [[task]]
        name = "probe"
        command = ["{probe}", "daemon"]
        ranks = 2
        timeout = "30s"
        launcher = "{launcher}"
        """, tmp_path, expect=0)
    assert all(r["status"] == "ok" for r in recs), [(r["status"], r["error"]) for r in recs]
    first = _first(recs)
    pid = int(re.search(r"probe daemon pid (\d+)", first["stdout"])[1])
    said = [ln for ln in stderr.splitlines() if f"pid {pid} " in ln]
    assert said and "held the launcher's output" in said[0] and "killed" in said[0], stderr
    try:        # gone, or a zombie its subreaper slot has not reaped yet
        with open(f"/proc/{pid}/stat") as f:
            assert f.read().split(") ")[1].startswith("Z"), f"daemon {pid} still runs"
    except FileNotFoundError:
        pass
