"""Other ways to reach a cluster: a TLS-secured scheduler, and hosts started over SSH."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import export_json, loopback_scheduler, run_cli, stop
from netns import Lab, require_netns, require_sshd
from waits import wait_workers

pytestmark = pytest.mark.e2e


def _certs(d) -> dict:
    """A throwaway CA and one certificate for 127.0.0.1, made with openssl."""
    if not shutil.which("openssl"):
        pytest.skip("openssl not installed")
    run = lambda *a: subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-subj", "/CN=manybench-test-ca", "-days", "2")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "req.csr",
        "-subj", "/CN=localhost")
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("x509", "-req", "-in", "req.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "cert.pem", "-days", "2", "-extfile", "san.ext")
    return {"ca": str(d / "ca.pem"), "cert": str(d / "cert.pem"), "key": str(d / "key.pem")}


def _security(c: dict):
    """A client of the cluster secured with these certificates (the test's own wait)."""
    from distributed.security import Security
    return Security(tls_ca_file=c["ca"], tls_client_cert=c["cert"], tls_client_key=c["key"],
                    require_encryption=True)


def test_tls_scheduler_and_workers(plan_file, tmp_path):
    c = _certs(tmp_path)
    tls = ["--tls-ca-file", c["ca"], "--tls-cert", c["cert"], "--tls-key", c["key"]]
    addr, sched = loopback_scheduler(*tls)
    procs = [sched]
    try:
        for name in ("t1", "t2"):
            procs.append(subprocess.Popen([sys.executable, "-m", "manybench", "worker", addr,
                                           "--name", name, "--slots", "1", *tls],
                                          stderr=subprocess.DEVNULL))
        plan = plan_file(f"""
            [placement]
            workers = 2
            [cluster]
            tls = {{ ca_file = "{c['ca']}", cert = "{c['cert']}", key = "{c['key']}" }}
            [[task]]
            name = "sync"
            kernel = "null"
        """)
        wait_workers(addr, 2, _security(c))
        out = str(tmp_path / "res")
        res = run_cli("run", plan, "-o", out, "-q", "--scheduler", addr, timeout=180)
        assert res.returncode == 0, res.stderr
        assert sorted(r["node"] for r in export_json(out)) == ["t1", "t2"]
        # without the certificates the secured cluster refuses us
        bare = plan_file('[[task]]\nname = "a"\nkernel = "null"\n', "bare.toml")
        res = run_cli("run", bare, "-o", str(tmp_path / "res2"), "-q", "--scheduler",
                      addr.replace("tls://", "tcp://"), "--insecure", timeout=180,
                      env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"})
        assert res.returncode == 2 and "Traceback" not in res.stderr
    finally:
        stop(procs)


def test_hosts_over_ssh(plan_file, tmp_path):
    require_netns()
    require_sshd()
    shipped = tmp_path / "hosts-tmp"   # the hosts' $TMPDIR, this test's own: mktemp -d's
    shipped.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(shipped)}
    with Lab(2) as lab:
        known, keys, hostfile = lab.ssh_logins(tmp_path, ["2", "slots=1"], env=env)
        # remote commands run through sshd: carry the test's import path along
        path = os.pathsep.join(os.path.abspath(p) for p in
                               os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
        python = f"env PYTHONPATH={path} {sys.executable}"
        plan = plan_file(f"""
            [placement]
            workers = 3
            [cluster]
            python = "{python}"
            ssh = {{ username = "root", known_hosts = "{known}", client_keys = [{keys}] }}
            [[task]]
            name = "sync"
            kernel = "null"
        """)
        out = str(tmp_path / "res")
        res = run_cli("run", plan, "-o", out, "-q", "--hosts", str(hostfile), timeout=240)
        assert res.returncode == 0, res.stderr[-3000:]
        nodes = sorted(r["node"] for r in export_json(out))
        assert nodes == sorted([lab.ip(0), lab.ip(0), lab.ip(1)])
        # secured with no step of the user's: credentials made for this cluster, shipped
        # over its logins and removed with it (the namespace hosts share this file system)
        import sqlite3
        with sqlite3.connect(os.path.join(out, "results.db")) as db:
            said = {r[0] for r in db.execute(
                "SELECT json_extract(inventory, '$.security') FROM nodes")}
        assert said == {"mutual TLS with the cluster's own certificates (made for this SSH "
                        "cluster); messages signed with the run's secret"}, said
        # the directories the keys were shipped to went with the cluster, before the run
        # ended (in this test's own $TMPDIR on the hosts: no other test's keys are there)
        assert not sorted(str(p) for p in shipped.rglob("member.key"))


def test_a_secured_cluster_goes_direct_over_tls_or_keeps_the_relay_with_a_warning(plan_file,
                                                                                   tmp_path):
    """Issue 21: a node whose worker has its certificates in files is reached over a TLS
    direct channel made with them; one whose certificates are held only in memory (given to
    Dask as PEM text) cannot hand them to its agent, so it is reached through its worker's
    relay, never in the clear, and the run says so (a `relay` warning naming why)."""
    import sqlite3
    c = _certs(tmp_path)
    tls = ["--tls-ca-file", c["ca"], "--tls-cert", c["cert"], "--tls-key", c["key"]]
    addr, sched = loopback_scheduler(*tls)
    pem = {k: open(c[k]).read() for k in ("ca", "cert", "key")}
    in_memory = {**os.environ, "MANYBENCH_SLOTS": "1", "MANYBENCH_NODE": "m2",
                 "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": pem["ca"],
                 "DASK_DISTRIBUTED__COMM__TLS__WORKER__CERT": pem["cert"],
                 "DASK_DISTRIBUTED__COMM__TLS__WORKER__KEY": pem["key"],
                 "DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}
    procs = [sched]
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "manybench", "worker", addr,
                                       "--name", "f1", "--slots", "1", *tls],
                                      stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                       addr, "--name", "m2", "--nthreads", "1", "--no-nanny",
                                       "--preload", "manybench.node.dask_plugin"],
                                      env=in_memory, stderr=subprocess.DEVNULL))
        plan = plan_file(f"""
            repeat = 3
            [placement]
            workers = 2
            [cluster]
            tls = {{ ca_file = "{c['ca']}", cert = "{c['cert']}", key = "{c['key']}" }}
            [[task]]
            name = "sync"
            kernel = "null"
        """)
        wait_workers(addr, 2, _security(c))
        out = str(tmp_path / "res")
        res = run_cli("run", plan, "-o", out, "-q", "--scheduler", addr, timeout=180)
        assert res.returncode == 0, res.stderr
    finally:
        stop(procs)
    rows = export_json(out)
    assert sorted(r["node"] for r in rows) == ["f1", "f1", "f1", "m2", "m2", "m2"]
    assert all(r["status"] == "ok" for r in rows)
    db = sqlite3.connect(os.path.join(out, "results.db"))
    channels = dict(db.execute("SELECT name, json_extract(inventory, '$.channel') "
                               "FROM nodes").fetchall())
    relayed = db.execute("SELECT node, message FROM warnings WHERE kind = 'relay'").fetchall()
    db.close()
    assert channels == {"f1": "direct, TLS", "m2": "relay"}
    assert len(relayed) == 1 and relayed[0][0] == "m2"
    assert "certificates are held in memory" in relayed[0][1], relayed
