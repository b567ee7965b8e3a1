"""The multi-host test lab itself (tests/netns.py): namespaces, bridge, cleanup, sshd.

Needs root and `ip netns` (skips with the reason otherwise); the ssh tests need OpenSSH
(scripts/test.sh installs openssh-server/openssh-client).  All traffic stays on addresses the
lab creates (10.231.k.0/24 on its own bridge).
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
import urllib.request

import pytest

from netns import Lab, require_netns, require_sshd

pytestmark = pytest.mark.e2e

NO_PROXY_ENV = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


@pytest.fixture
def lab3():
    require_netns()
    with Lab(3) as lab:
        yield lab


def _http_server(lab: Lab, i: int, directory: str, port: int = 8000) -> subprocess.Popen:
    proc = lab.popen(i, [sys.executable, "-m", "http.server", str(port), "--bind", lab.ip(i),
                         "--directory", directory],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lab.wait_port(i, port, timeout=20, proc=proc)
    return proc


def test_tcp_server_in_ns0_reached_from_ns2_and_root(lab3, tmp_path):
    (tmp_path / "hello.txt").write_text("hello from ns0\n")
    _http_server(lab3, 0, str(tmp_path))
    url = f"http://{lab3.ip(0)}:8000/hello.txt"

    # from namespace 2, through the bridge (no proxy: the URL is a lab address)
    fetch = textwrap.dedent(f"""
        import urllib.request
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
        print(opener.open({url!r}, timeout=10).read().decode(), end="")
    """)
    out = lab3.run(2, [sys.executable, "-c", fetch], timeout=30, env=NO_PROXY_ENV)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hello from ns0\n"

    # from the root namespace (where the test process / a coordinator runs)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    assert opener.open(url, timeout=10).read().decode() == "hello from ns0\n"

    # and the server's address is not reachable as-is from inside another namespace's loopback
    out = lab3.run(2, [sys.executable, "-c",
                       "import socket; socket.create_connection(('127.0.0.1', 8000), 2)"],
                   timeout=30)
    assert out.returncode != 0


def _pids_alive(pids):
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            alive.append(pid)
    return alive


def test_close_removes_namespaces_bridge_and_processes(tmp_path):
    require_netns()
    lab = Lab(2, term_timeout=1.0)
    names, bridge, veths = list(lab.names), lab.bridge, list(lab.veths)
    assert set(names) <= set(subprocess.run(["ip", "netns", "list"], capture_output=True,
                                            text=True).stdout.split())
    assert len(bridge) <= 15 and all(len(v) <= 15 for v in veths)
    # a plain sleeper, one that ignores SIGTERM (needs SIGKILL), and a grandchild that
    # escapes into its own session (found because it lives in the lab's namespace)
    p1 = lab.popen(0, ["sleep", "300"])
    p2 = lab.popen(1, ["sh", "-c", "trap '' TERM; sleep 300 & echo $! > {}; wait"
                       .format(tmp_path / "child.pid")])
    p3 = lab.popen(1, [sys.executable, "-c", textwrap.dedent(f"""
        import os, subprocess
        p = subprocess.Popen(["sleep", "300"], start_new_session=True)
        open({str(tmp_path / "escaped.pid")!r}, "w").write(str(p.pid))
    """)])
    assert p3.wait(timeout=30) == 0
    deadline = time.monotonic() + 10
    while not (tmp_path / "child.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int((tmp_path / "child.pid").read_text())
    escaped = int((tmp_path / "escaped.pid").read_text())
    pids = [p1.pid, p2.pid, child, escaped]
    assert _pids_alive(pids) == [p1.pid, p2.pid, child, escaped]
    assert set(lab.processes()) >= {p1.pid, p2.pid, child, escaped}

    lab.close()
    assert lab.close_errors == []
    assert _pids_alive(pids) == []
    assert p1.returncode is not None and p2.returncode is not None
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not set(names) & set(left.split())
    for link in [bridge, *veths]:
        r = subprocess.run(["ip", "link", "show", "dev", link], capture_output=True)
        assert r.returncode != 0, f"{link} still exists"
    routes = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    assert lab.subnet not in routes
    lab.close()                                    # idempotent
    with pytest.raises(RuntimeError):
        lab.popen(0, ["true"])


def test_namespace_sees_only_its_own_addresses(lab3):
    for i in range(3):
        p = lab3.popen(i, ["ip", "-4", "-o", "addr", "show"], stdout=subprocess.PIPE, text=True)
        out, _ = p.communicate(timeout=30)
        addrs = {line.split()[3].split("/")[0] for line in out.splitlines()}
        assert addrs == {"127.0.0.1", lab3.ip(i)}, out
    assert lab3.bridge_ip.endswith(".1") and lab3.ip(0).endswith(".10")
    assert lab3.names == [f"{lab3.tag}n{i}" for i in range(3)]
    assert lab3.tag == f"mb{os.getpid()}"


@pytest.fixture
def ssh_lab():
    require_sshd()
    with Lab(2) as lab:
        yield lab


def test_ssh_client_runs_a_command(ssh_lab):
    sh = ssh_lab.start_sshd(1)
    assert (sh.host, sh.port) == (ssh_lab.ip(1), 22)
    argv = ["ssh", "-i", sh.client_key, "-o", f"UserKnownHostsFile={sh.known_hosts}",
            "-o", "GlobalKnownHostsFile=/dev/null", "-o", "StrictHostKeyChecking=yes",
            "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-F", "/dev/null",
            f"root@{sh.host}"]
    out = subprocess.run(argv + ["echo", "hi"], capture_output=True, text=True, timeout=30,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hi\n"

    # the session runs inside namespace 1, and another "host" (namespace 0) can log in too
    out = ssh_lab.run(0, sh.ssh_argv("ip -4 -o addr show dev eth0"), timeout=30)
    assert out.returncode == 0, out.stderr
    assert f" {sh.host}/24 " in out.stdout

    # only the generated key gets in (no passwords, no other keys)
    other = os.path.join(os.path.dirname(sh.client_key), "other_key")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other], check=True)
    bad = list(argv)
    bad[bad.index(sh.client_key)] = other
    out = subprocess.run(bad + ["echo", "hi"], capture_output=True, text=True, timeout=30,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 255 and "Permission denied" in out.stderr


def test_asyncssh_with_connect_options(ssh_lab):
    asyncssh = pytest.importorskip("asyncssh")
    sh = ssh_lab.start_sshd(0)
    assert sh.connect_options["known_hosts"] == sh.known_hosts
    assert sh.connect_options["client_keys"] == [sh.client_key]

    async def go():
        async with asyncssh.connect(sh.host, **sh.connect_options) as conn:
            return await conn.run("echo hi", check=True, timeout=20)

    result = asyncio.run(asyncio.wait_for(go(), 60))
    assert result.stdout == "hi\n"


def test_dask_scheduler_and_worker_in_namespaces_client_in_root(tmp_path):
    """The recipe for multi-host Dask runs: every address given explicitly (a namespace has
    no default route, so Dask's own address guess falls back to 127.0.0.1)."""
    require_netns()
    distributed = pytest.importorskip("distributed")
    with Lab(2) as lab:
        dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
        sched_log = open(tmp_path / "scheduler.log", "w")
        sched = lab.popen(0, [*dask, "--host", lab.ip(0), "--port", "8786", "--no-dashboard"],
                          stdout=sched_log, stderr=subprocess.STDOUT)
        lab.wait_port(0, 8786, timeout=60, proc=sched)
        worker_log = open(tmp_path / "worker.log", "w")
        lab.popen(1, [sys.executable, "-m", "distributed.cli.dask_worker",
                      f"tcp://{lab.ip(0)}:8786", "--host", lab.ip(1), "--nthreads", "1",
                      "--no-dashboard"], stdout=worker_log, stderr=subprocess.STDOUT)
        try:
            with distributed.Client(f"tcp://{lab.ip(0)}:8786", timeout=30) as client:
                client.wait_for_workers(1, timeout=60)
                workers = list(client.scheduler_info()["workers"])
                assert len(workers) == 1 and workers[0].startswith(f"tcp://{lab.ip(1)}:")
                assert client.submit(lambda x: x + 1, 41).result(timeout=30) == 42
        finally:
            sched_log.close()
            worker_log.close()
