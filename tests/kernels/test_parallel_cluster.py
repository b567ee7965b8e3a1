"""Parallel tasks across namespace nodes under Dask, with real Open MPI and real MPICH: jobs
whose ranks span nodes (spread and pack), each rank's record on the node it really ran on;
a node lost in the middle of a job.

The launchers reach the other nodes through an rsh agent made here (as ssh would be on a
cluster): it enters the node's network namespace and, in a UTS namespace of its own, names
the host after the node, so the ranks started there say where they run (and Open MPI's
session directories, named after the host, do not collide on this one machine)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

from cluster_lab import DaskLab
from conftest import export_json, run_cli
from mpi_helpers import (FAMILIES, _alive, _by_phase, _probes, abort_ports, build_probe,
                         rsh_agent, tree)
from waits import LEFTOVER_S, wait_for

from manybench.kernels.binding import parse_cpulist

pytestmark = pytest.mark.e2e   # real MPI jobs through the CLI

IP = shutil.which("ip") or "/usr/sbin/ip"


def launcher_args(fam: str, agent: str) -> str:
    if fam == "openmpi":
        return f'["--mca", "plm_rsh_agent", "{agent}"]'
    return f'["-launcher", "ssh", "-launcher-exec", "{agent}", "-iface", "eth0"]'


@pytest.fixture(scope="module")
def two_nodes():
    if not shutil.which("unshare"):
        pytest.skip("unshare not installed (Debian util-linux)")
    with DaskLab(2, slots=2) as lab:
        yield lab


@pytest.fixture(scope="module", params=list(FAMILIES))
def mpi(request, tmp_path_factory):
    return build_probe(request.param, tmp_path_factory)


def test_jobs_span_nodes_and_each_rank_runs_where_its_record_says(two_nodes, mpi, plan_file,
                                                                   tmp_path):
    fam, launcher, probe = mpi
    agent = rsh_agent(two_nodes, str(tmp_path / "rsh-agent"))
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "span"
        [placement]
        workers = 4
        order = ["spread", "pack"]
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = [2, 4]
        timeout = "120s"
        launcher = "{launcher}"
        launcher_args = {launcher_args(fam, agent)}
        """)
    done = run_cli("run", plan, "-o", out, "--scheduler", two_nodes.scheduler, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    phases = _by_phase(export_json(out))
    assert len(phases) == 4
    for rs in phases.values():
        assert len(rs) == 4 and all(r["status"] == "ok" for r in rs), rs
        n, order = rs[0]["params"]["ranks"], rs[0]["params"]["order"]
        by_rank = {r["metrics"]["job"] * n + r["metrics"]["job_rank"]: r for r in rs}
        # spread hands ranks to the nodes in turn, pack fills n1 first
        want = ["n1", "n2", "n1", "n2"] if order == "spread" else ["n1", "n1", "n2", "n2"]
        assert [by_rank[i]["node"] for i in range(4)] == want
        for r in rs:
            first = by_rank[r["metrics"]["job"] * n]
            if r["node"] != first["node"]:   # started on another node by the launcher
                assert r["metrics"]["rank_host"] == r["node"]
            assert r["start_ns"] >= r["t0_ns"]
        for first in (r for r in rs if r["metrics"]["job_rank"] == 0):
            # what carried the job, as its MPI said (issue 31, item 4): between namespace
            # nodes Open MPI's btl is tcp; MPICH's UCX reaches the other node's rank through
            # shared memory (sysv, posix, cma: one machine), which a warning says
            said = first["extra"]["mpi_transport"]
            job = first["metrics"]["job"]
            apart = len({by_rank[job * n + k]["node"] for k in range(n)}) > 1
            warned = [w for w in first["extra"].get("warnings", ())
                      if w[0] == "job-shared-memory"]
            if not apart:
                assert not warned, warned
            elif fam == "openmpi":
                assert "btl tcp between ranks" in said and not warned, said
            else:
                assert "UCX through shared memory" in said and warned, said
            lines = _probes(first["stdout"])
            assert sorted(int(p["rank"]) for p in lines) == list(range(n))
            assert all(int(p["init_ns"]) >= first["t0_ns"] for p in lines)
    # n1 and n2 are namespaces of this machine: the jobs across them are told (issue 31)
    assert "a job's ranks are on nodes n1, n2, which run on one machine" in done.stderr


def test_a_layout_the_launcher_cannot_say_is_refused_before_anything_runs(two_nodes, plan_file,
                                                                        tmp_path):
    """Intel-MPI-style -ppn cannot interleave nodes: spread over two nodes is refused, exit 2
    naming the field; pack is run (no MPI needed: a launcher that says it is Intel MPI and
    starts nothing, so the run fails at the launch, exit 1)."""
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\necho 'Intel(R) MPI Library for Linux* OS, Version 2021.9'\n")
    fake.chmod(0o755)
    for order, code in (("spread", 2), ("pack", 1)):
        plan = plan_file(f"""
            name = "ppn"
            [placement]
            workers = 4
            order = "{order}"
            [[task]]
            name = "p"
            command = ["hostname"]
            ranks = 4
            timeout = "60s"
            launcher = "{fake}"
            """)
        out = str(tmp_path / order)
        done = run_cli("run", plan, "-o", out, "--scheduler", two_nodes.scheduler, timeout=300)
        assert done.returncode == code, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        if order == "spread":
            assert "task.p.launcher: Intel MPI (-ppn) cannot place job 0" in done.stderr
        else:
            first = next(r for r in export_json(out) if r["slot"] == 0 and r["node"] == "n1")
            assert "the launcher" in first["error"] and "exited" in first["error"]


def test_a_launch_that_fails_is_told_to_the_job_on_other_nodes(two_nodes, mpi, plan_file,
                                                                tmp_path):
    """The job's first slot tells its slots on other nodes at once that the job will not
    start: their records say so, not that they waited out the start-up bound."""
    fam, launcher, probe = mpi
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "nolaunch"
        [placement]
        workers = 2
        order = "spread"
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = 2
        timeout = "600s"
        launcher = "{launcher}"
        launcher_args = ["--no-such-option-of-any-launcher"]
        """)
    done = run_cli("run", plan, "-o", out, "--scheduler", two_nodes.scheduler, timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]
    recs = {r["node"]: r for r in export_json(out)}
    assert recs["n1"]["status"] == "error" and "the launcher" in recs["n1"]["error"]
    assert recs["n2"]["status"] == "error"
    assert "did not start: see the record of its rank 0" in recs["n2"]["error"]


def test_the_abort_port_of_a_slot_on_another_node_listens_on_that_nodes_address(
        two_nodes, mpi, plan_file, tmp_path):
    """Where the job's first slot reaches it (the node's host, as the engine knows it), not
    on every interface; the job then runs as usual. Its ranks wait for a file meanwhile."""
    fam, launcher, probe = mpi
    agent = rsh_agent(two_nodes, str(tmp_path / "rsh-agent"))
    flag = str(tmp_path / "go")
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "abort-port"
        [placement]
        workers = 2
        order = "spread"
        [[task]]
        name = "probe"
        command = ["sh", "-c", "while [ ! -e {flag} ]; do sleep 0.05; done; exec {probe}"]
        ranks = 2
        timeout = "120s"
        launcher = "{launcher}"
        launcher_args = {launcher_args(fam, agent)}
        """)
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q",
                             "--scheduler", two_nodes.scheduler], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90     # within the suite's per-test timeout
        ports: list = []
        while time.monotonic() < deadline and proc.poll() is None and not ports:
            ports = abort_ports(tree(two_nodes.workers["n2"].pid))
            time.sleep(0.1)
    finally:
        open(flag, "w").close()
        try:
            _, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
    assert [host for host, _ in ports] == [two_nodes.lab.ip(2)], (ports, stderr[-3000:])
    assert proc.returncode == 0, stderr[-3000:]
    assert all(r["status"] == "ok" for r in export_json(out))


@pytest.mark.alone     # MPICH's ranks busy-poll: under load past the timeout
def test_a_node_lost_mid_job_is_told_and_the_next_phase_runs(mpi, plan_file, tmp_path):
    """Everything in node n2's namespace is killed while a job spanning n1 and n2 runs (a
    node lost): the records say which ranks were lost and what the launcher said; the next
    phase runs on the node left; nothing of the job outlives the run."""
    fam, launcher, probe = mpi
    if not shutil.which("unshare"):
        pytest.skip("unshare not installed (Debian util-linux)")
    slow = str(tmp_path / "slow-probe")
    shutil.copy(probe, slow)
    out = str(tmp_path / "res")
    with DaskLab(2, slots=1) as lab:
        agent = rsh_agent(lab, str(tmp_path / "rsh-agent"))
        plan = plan_file(f"""
            name = "loss"
            on_node_loss = "continue"
            [placement]
            workers = 2
            [[task]]
            name = "long"
            command = ["{slow}", "hang"]
            ranks = 2
            timeout = "60s"
            launcher = "{launcher}"
            launcher_args = {launcher_args(fam, agent)}
            [[task]]
            name = "after"
            workers = 1
            command = ["{probe}"]
            ranks = 1
            launcher = "{launcher}"
            """)
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out,
                                 "-q", "--scheduler", lab.scheduler], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _running(slow, 2):
            time.sleep(0.2)
        assert _running(slow, 2), "the job's ranks never ran"
        time.sleep(1.0)
        _kill_namespace(lab, 2)
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    rows = export_json(out)
    long = {r["node"]: r for r in rows if r["task"] == "long"}
    assert long["n2"]["status"] == "lost"
    assert long["n1"]["status"] in ("error", "timeout")
    assert long["n1"]["stderr"] or long["n1"]["stdout"]      # the launcher's account kept
    after = [r for r in rows if r["task"] == "after"]
    assert len(after) == 1 and after[0]["status"] == "ok" and after[0]["node"] == "n1"
    assert not _running(slow, 1) and _alive(out) == []


def _running(path: str, n: int) -> bool:
    """Whether at least n processes run the program at `path`. Read from /proc each time, not
    psutil's exe(): that caches the first answer, and a rank first seen between its launcher's
    fork and its exec keeps the launcher's exe for as long as it lives (CI's ranks ran 40 s
    uncounted)."""
    count = 0
    for pid in psutil.pids():
        try:
            count += os.readlink(f"/proc/{pid}/exe") == path
        except OSError:
            pass
    return count >= n


def _kill_namespace(lab: DaskLab, i: int) -> None:
    """Node i lost: SIGKILL every process inside its network namespace (the lab's own)."""
    ns = lab.lab.names[i]
    pids = subprocess.run([IP, "netns", "pids", ns], capture_output=True, text=True).stdout
    for pid in pids.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def test_ctrl_c_during_a_job_across_nodes_leaves_nothing_on_any_node(two_nodes, mpi,
                                                                     plan_file, tmp_path):
    """Ctrl-C while a job spans n1 and n2 (nodes whose agents have no cgroup: `ip netns exec`
    hides it): the run ends 130 and, with the nodes still up, no launcher, remote daemon
    (orted, hydra proxy) or rank of the job is left on either node."""
    fam, launcher, probe = mpi
    agent = rsh_agent(two_nodes, str(tmp_path / "rsh-agent"))
    hang = str(tmp_path / "ctrlc-probe")
    shutil.copy(probe, hang)
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "ctrlc"
        [placement]
        workers = 2
        order = "spread"
        [[task]]
        name = "hang"
        command = ["{hang}", "hang"]
        ranks = 2
        launcher = "{launcher}"
        launcher_args = {launcher_args(fam, agent)}
        """)
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q",
                             "--scheduler", two_nodes.scheduler], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60     # within the suite's per-test timeout: say why
    while time.monotonic() < deadline and proc.poll() is None and not _running(hang, 2):
        time.sleep(0.2)
    if not _running(hang, 2):
        _no_ranks(proc, two_nodes)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)            # our own run, by its process group
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    left = lambda: _alive(hang) + _alive(agent) + _alive(out)      # noqa: E731
    wait_for(lambda: not left(), "end of the job's processes", LEFTOVER_S, detail=left)


def _no_ranks(proc: subprocess.Popen, lab: DaskLab) -> None:
    """Fail saying what ran on the nodes instead of the ranks, and what the run said (ended
    by us, with SIGINT, when still running)."""
    procs = _processes_in(lab)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    pytest.fail(f"the job's ranks never ran; the run exited {proc.returncode}; on the nodes:\n"
                + "\n".join(procs) + "\nthe run's stderr:\n" + err[-3000:])


def _node_processes(lab: DaskLab):
    """(namespace, psutil.Process) of every process in the lab's node namespaces (the nodes'
    own processes: other work on this machine is not looked at)."""
    for ns in lab.lab.names[1:]:
        pids = subprocess.run([IP, "netns", "pids", ns], capture_output=True, text=True).stdout
        for pid in pids.split():
            try:
                yield ns, psutil.Process(int(pid))
            except (psutil.Error, ValueError):
                pass


def _processes_in(lab: DaskLab) -> list[str]:
    """Every process on the lab's nodes: state, cpu time, command line."""
    out = []
    for ns, p in _node_processes(lab):
        try:
            t = p.cpu_times()
            out.append(f"{ns} {p.pid} {p.status()} {t.user + t.system:.1f}s "
                       f"{' '.join(p.cmdline())[:200]}")
        except psutil.Error:
            pass
    return out


DAEMONS = ("orted", "hydra_pmi_proxy", "mpirun", "mpiexec", "prted")


def _daemons_in(lab: DaskLab) -> list[str]:
    """Launchers and their per-node daemons still running inside the lab's node namespaces."""
    left = []
    for ns, p in _node_processes(lab):
        try:
            name = os.path.basename((p.cmdline() or [""])[0])
            if any(name.startswith(d) for d in DAEMONS):
                left.append(f"{ns} {p.pid}: {' '.join(p.cmdline())}")
        except psutil.Error:
            pass
    return left


@pytest.mark.alone     # MPICH's ranks busy-poll: under load past the timeout
def test_a_job_across_nodes_that_hangs_is_ended_by_its_timeout_with_no_daemon_left(
        two_nodes, mpi, plan_file, tmp_path):
    """A job spanning n1 and n2 whose rank 1 (on n2) never finishes: at the timeout every
    rank's record says `timeout`, the launcher's account is kept, no launcher, orted or
    hydra_pmi_proxy is left in either node, and the next phase runs."""
    fam, launcher, probe = mpi
    agent = rsh_agent(two_nodes, str(tmp_path / "rsh-agent"))
    hang = str(tmp_path / "hang-probe")
    shutil.copy(probe, hang)
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "hangs-across"
        [placement]
        workers = 2
        order = "spread"
        [[task]]
        name = "hangs"
        command = ["{hang}", "hang"]
        ranks = 2
        timeout = "5s"
        launcher = "{launcher}"
        launcher_args = {launcher_args(fam, agent)}
        [[task]]
        name = "after"
        command = ["{probe}"]
        ranks = 2
        timeout = "120s"
        launcher = "{launcher}"
        launcher_args = {launcher_args(fam, agent)}
        """)
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out, "-q",
                             "--scheduler", two_nodes.scheduler], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _running(hang, 2):
        time.sleep(0.2)
    seen = _daemons_in(two_nodes)       # the check below sees the job's launcher and daemons
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err[-3000:]
    assert any(ns == two_nodes.lab.names[2] for ns, *_ in (s.split() for s in seen)), seen
    rows = export_json(out)
    hangs = {r["node"]: r for r in rows if r["task"] == "hangs"}
    assert set(hangs) == {"n1", "n2"}
    assert all(r["status"] == "timeout" for r in hangs.values()), \
        [(r["node"], r["status"], r["error"]) for r in hangs.values()]
    after = [r for r in rows if r["task"] == "after"]
    assert {r["node"] for r in after} == {"n1", "n2"}
    assert all(r["status"] == "ok" for r in after), after
    end = time.monotonic() + 5
    while time.monotonic() < end and (_daemons_in(two_nodes) or _alive(hang)):
        time.sleep(0.2)
    assert _daemons_in(two_nodes) == [] and _alive(hang) == [] and _alive(out) == []


def test_hybrid_ranks_across_nodes_get_their_slots_cpus_and_threads(two_nodes, mpi,
                                                                    plan_file, tmp_path):
    """One rank per node, each of 2 cpus: 2 OpenMP threads per rank, on the node its record
    names."""
    fam, launcher, probe = mpi
    agent = rsh_agent(two_nodes, str(tmp_path / "rsh-agent"))
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "hybrid-across"
        [placement]
        workers = 2
        cpus = 2
        order = "spread"
        [[task]]
        name = "probe"
        command = ["{probe}"]
        ranks = 2
        timeout = "120s"
        launcher = "{launcher}"
        launcher_args = {launcher_args(fam, agent)}
        """)
    done = run_cli("run", plan, "-o", out, "--scheduler", two_nodes.scheduler, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = export_json(out)
    assert {r["node"] for r in rows} == {"n1", "n2"}
    assert all(r["status"] == "ok" for r in rows), rows
    for r in rows:
        assert len(parse_cpulist(r["metrics"]["cpus_allowed"])) == 2
    first = next(r for r in rows if r["metrics"]["job_rank"] == 0)
    lines = _probes(first["stdout"])
    assert [(p["cpus"], p["threads"]) for p in lines] == [("2", "2")] * 2
    other = next(r for r in rows if r["node"] != first["node"])   # started by the launcher
    assert other["metrics"]["rank_host"] == other["node"]
