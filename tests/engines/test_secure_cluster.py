"""Issue 28: a cluster started the documented way is secured by default. Another local user
of its nodes (a plain account, its own Python with Dask: tests/intruder.py) cannot run code
on its workers, call their handlers, or slow a run down through their ports; a member of
the cluster that is not the run's coordinator cannot stop or steer the run; the nodes listen
only where they must; --insecure still works and every run it serves says so."""
from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cluster_lab import DaskLab
from conftest import client_security, export_json, loopback_scheduler, run_cli, stop
from waits import phases_stored
from suite_paths import TESTS

pytestmark = pytest.mark.e2e     # a Dask cluster of namespace nodes, a second user

INTRUDER = str(TESTS / "intruder.py")
USER = "mbintruder"


def intruder_ids() -> tuple[int, int]:
    """A plain local account (CI runs as root and makes it); skip, saying why, elsewhere."""
    if os.geteuid() != 0:
        pytest.skip("making a second local user needs root (CI runs as root)")
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                               "/usr/sbin/nologin", USER], capture_output=True, text=True)
        if made.returncode not in (0, 9):      # 9: another test process made it meanwhile
            pytest.skip(f"useradd failed: {made.stderr.strip()}")
        pw = pwd.getpwnam(USER)
    return pw.pw_uid, pw.pw_gid


def intrude(lab: DaskLab, node: int, *args: str, timeout: float = 120) -> dict:
    """Run the intruder inside node `node`'s namespace, as the second user; its verdict."""
    uid, gid = intruder_ids()
    res = lab.lab.run(node, [sys.executable, INTRUDER, str(uid), str(gid), *args],
                      timeout=timeout, env=_env())
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _env() -> dict:
    env = dict(os.environ)
    env.pop("MANYBENCH_CREDENTIALS", None)      # it is no secret where they are; they are
    return env                                  # unreadable by the second user anyway


@pytest.fixture(scope="module")
def lab():
    intruder_ids()
    with DaskLab(2, slots=1) as lab:
        yield lab


def _workers(lab: DaskLab) -> list[str]:
    from distributed import Client
    with Client(lab.scheduler, timeout="30s", security=client_security()) as c:
        return sorted(c.scheduler_info(n_workers=-1)["workers"])


PLAN = """
name = "attacked"
repeat = {repeat}
[placement]
workers = 2
[[task]]
name = "sync"
kernel = "null"
"""

# a run that holds its nodes for a while (100 phases of 0.1 s at least)
LONG = """
name = "held"
repeat = 100
[placement]
workers = 2
[[task]]
name = "nap"
command = ["sleep", "0.1"]
"""


def test_another_user_cannot_run_code_on_a_default_cluster_nor_call_its_nodes(lab):
    """Before: Client(addr).run(fn) from the second account ran on both workers as their
    user (root), and the worker's handler served Abort, Info and RunCommands to it."""
    scheduler = lab.scheduler.split("://", 1)[1]
    for address in (lab.scheduler, f"tcp://{scheduler}"):
        got = intrude(lab, 1, "client-run", address)
        assert "refused" in got, got
    for worker in _workers(lab):
        plain = f"tcp://{worker.split('://', 1)[1]}"
        for address in (worker, plain):
            for kind in ("Abort", "Info", "RunCommands"):
                got = intrude(lab, 1, "rpc", address, kind)
                assert "refused" in got, (address, kind, got)


def _gaps_s(out: str) -> list[float]:
    """The waits between one phase's last end and the next phase's T0 (s)."""
    rows = export_json(out)
    by: dict[int, list[dict]] = {}
    for r in rows:
        by.setdefault(r["phase"], []).append(r)
    phases = [by[k] for k in sorted(by)]
    return [(min(r["t0_ns"] for r in b) - max(r["end_ns"] for r in a)) / 1e9
            for a, b in zip(phases, phases[1:])]


@pytest.mark.timeout(600)
def test_slow_silent_huge_and_many_connections_neither_stall_nor_change_a_run(lab, plan_file,
                                                                             tmp_path):
    """Before: one connection that announced a frame and fed a byte every 8 s stalled a
    node's run for as long as it liked (a 48 s gap between phases, exit 0, no warning); a
    plain TCP connect with no TLS handshake 33 s; 14 bytes made an agent allocate 1 GiB;
    holding the clock echo's port failed every run on the node."""
    plan = plan_file(PLAN.format(repeat=30))
    quiet = str(tmp_path / "quiet")
    res = run_cli("run", plan, "-o", quiet, "-q", "--scheduler", lab.scheduler, timeout=300)
    assert res.returncode == 0, res.stderr
    uid, gid = intruder_ids()
    attackers = [lab.lab.popen(i, [sys.executable, INTRUDER, str(uid), str(gid), "flood",
                                   lab.lab.ip(i), "240"], env=_env(), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
                 for i in (1, 2)]
    try:
        attacked = str(tmp_path / "attacked")
        res = run_cli("run", plan, "-o", attacked, "-q", "--scheduler", lab.scheduler,
                      timeout=300)
    finally:           # closing their stdin stops them
        verdicts = [json.loads(a.communicate(timeout=120)[0].strip().splitlines()[-1])
                    for a in attackers]
    assert res.returncode == 0, res.stderr
    rows = export_json(attacked)
    assert len(rows) == 60 and all(r["status"] == "ok" for r in rows)
    for v in verdicts:     # the worker's, its HTTP's, the echo's and the run's direct port
        assert len(v["ports"]) >= 4 and v["connections"].get("many", 0) >= 50, v
    assert max(_gaps_s(attacked)) <= max(_gaps_s(quiet)) + 1.0, (_gaps_s(quiet),
                                                                 _gaps_s(attacked))


def _signed_call(address: str, req: object, key: bytes | None) -> object:
    """mb_call as a member of the cluster (its certificates) that may not hold the run's key."""
    import asyncio
    from distributed.core import rpc
    from manybench.node.protocol import decode, encode
    from manybench.security import auth

    async def go() -> object:
        r = rpc(address, connection_args=client_security().get_connection_args("client"))
        try:
            kind, data = type(req).__name__, encode(req)
            tag = auth.tag(key, kind.encode(), data) if key else b"\0" * 32
            return decode(await r.mb_call(kind=kind, request=data, tag=tag), "node")
        finally:
            await r.close_rpc()
    return asyncio.run(go())


@pytest.mark.timeout(600)
def test_a_member_without_the_runs_secret_cannot_stop_steer_or_take_its_nodes(lab, plan_file,
                                                                              tmp_path):
    """A holder of the cluster's certificates (a second coordinator, a teammate) is not the
    run's coordinator: while the run holds the nodes, its Abort, RunCommands and Renew are
    refused, unread, and the run ends as if nothing happened (a Start of another run waits
    for the run's lease: tests/node/test_wire.py)."""
    from manybench.node.protocol import Abort, Failed, Info, NodeInfo, Renew, RunCommands
    from manybench.security import auth
    out = tmp_path / "res"
    proc = _held(lab, plan_file(LONG), out)
    try:
        forged = auth.derive("not the run's secret", "call")
        for worker in _workers(lab):
            for req in (Abort(), RunCommands([["touch", str(tmp_path / "pwned")]], {}, 5.0,
                                             {}, []), Renew(0.001)):
                for key in (None, forged):
                    got = _signed_call(worker, req, key)
                    assert isinstance(got, Failed), (worker, req, got)
            assert isinstance(_signed_call(worker, Info(), None), NodeInfo)
        assert proc.poll() is None        # all of it while the run held the nodes
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert not (tmp_path / "pwned").exists()
    rows = export_json(str(out))
    assert len(rows) == 200 and all(r["status"] == "ok" for r in rows)


def _held(lab: DaskLab, plan: str, out: Path) -> subprocess.Popen:
    """`manybench run PLAN` on the lab, once it holds the nodes (a phase is stored)."""
    proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", str(out),
                             "-q", "--scheduler", lab.scheduler, "--set", "noise=0.01s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 120
    while not phases_stored(str(out)):
        if proc.poll() is not None or time.monotonic() > end:
            proc.kill()
            raise AssertionError(f"the run did not get going: {proc.communicate()}")
        time.sleep(0.1)
    return proc




@pytest.mark.timeout(600)
def test_a_nodes_ports_listen_only_where_it_is_reached(lab, plan_file, tmp_path):
    """Before: `manybench worker` listened on 0.0.0.0 for its Dask port, its clock echo and
    its agent's direct port, even when the scheduler was on loopback."""
    import psutil
    out = tmp_path / "res"
    proc = _held(lab, plan_file(LONG), out)     # the run's direct ports are open now
    try:
        for i, name in ((1, "n1"), (2, "n2")):
            top = psutil.Process(lab.workers[name].pid)
            listening = [(p.pid, addr) for p in [top, *top.children(recursive=True)]
                         for addr in _listening(p.pid)]
            assert len(listening) >= 4, listening    # Dask, its health check, echo, direct
            assert all(addr == lab.lab.ip(i) for _, addr in listening), listening
        assert proc.poll() is None        # the run's ports were there: it was running
        proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0


def _listening(pid: int) -> list[str]:
    """The addresses a process's listening TCP sockets are bound to, read in its own
    network namespace (/proc/PID/net/tcp*: psutil reads the caller's)."""
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:       # it ended meanwhile (a phase's command)
        return []
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                lines = f.readlines()[1:]
        except FileNotFoundError:
            return []
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:
                out.append(_address(parts[1].split(":")[0], width))
    return out


def _address(hexed: str, width: int) -> str:
    import ipaddress
    raw = bytes.fromhex(hexed)
    if width == 8:
        return str(ipaddress.IPv4Address(raw[::-1]))
    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
    addr = ipaddress.IPv6Address(words)
    return str(addr.ipv4_mapped or addr)


def test_a_workers_working_directory_is_private_not_a_shared_predictable_path(tmp_path):
    """Before: the Dask worker worked in $TMPDIR/dask-scratch-space; another user who made
    that directory first, with its lock files linked to a root-owned 0600 file, had that
    file truncated when root started `manybench worker`."""
    import shutil
    import tempfile
    uid, gid = intruder_ids()
    # a $TMPDIR every user can write in, as /tmp is (the test's own tmp_path is root's alone)
    shared = Path(tempfile.mkdtemp(prefix="mb-shared-tmp-"))
    os.chmod(shared, 0o1777)
    victim = tmp_path / "victim"
    victim.write_text("root's own bytes\n")
    os.chmod(victim, 0o600)
    plant = (f"import os; os.setgroups([]); os.setgid({gid}); os.setuid({uid}); "
             f"d = '{shared}/dask-scratch-space'; os.mkdir(d); os.chmod(d, 0o777); "
             f"[os.symlink('{victim}', d + '/' + n) for n in ('global.lock', 'purge.lock')]")
    subprocess.run([sys.executable, "-c", plant], check=True)
    addr, sched = loopback_scheduler()
    procs = [sched]
    log = tmp_path / "worker.log"
    try:
        with open(log, "w") as f:
            procs.append(subprocess.Popen([sys.executable, "-m", "manybench", "worker", addr,
                                           "--name", "w1", "--slots", "1"],
                                          env={**os.environ, "TMPDIR": str(shared)}, stderr=f))
        end = time.monotonic() + 60
        while "Registered to" not in log.read_text():
            assert time.monotonic() < end and procs[1].poll() is None, log.read_text()[-2000:]
            time.sleep(0.2)
        mine = [p for p in shared.iterdir() if p.name.startswith("manybench-worker-")]
        assert len(mine) == 1 and (os.stat(mine[0]).st_mode & 0o777) == 0o700
    finally:
        stop(procs)
        left = [p for p in shared.iterdir() if p.name.startswith("manybench-worker-")]
        shutil.rmtree(shared, ignore_errors=True)
    assert victim.read_text() == "root's own bytes\n"
    assert not left            # the worker removed its own directory


def test_insecure_works_as_before_and_every_run_it_serves_says_so(plan_file, tmp_path):
    plan = plan_file(PLAN.format(repeat=2))
    with DaskLab(2, slots=1, insecure=True) as lab:
        # a default run refuses to go out in the clear, naming the way out
        res = run_cli("run", plan, "-o", str(tmp_path / "no"), "-q", "--scheduler",
                      lab.scheduler, timeout=120)
        assert res.returncode == 2 and "--insecure" in res.stderr, res.stderr
        out = str(tmp_path / "res")
        res = run_cli("run", plan, "-o", out, "--scheduler", lab.scheduler, "--insecure",
                      timeout=300)
    assert res.returncode == 0, res.stderr
    assert "INSECURE: the cluster is not secured (--insecure)" in res.stderr
    assert len(export_json(out)) == 4
    report = run_cli("report", out).stdout
    assert "security" in report and "insecure (--insecure" in report, report
    assert "INSECURE" in report
