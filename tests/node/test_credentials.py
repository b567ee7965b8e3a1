"""A cluster's credentials (security/credentials.py, issue 28): made for it, private to their
owner (or group), refused when others could read the key or replace a file; a run or a node
without any is told how to make them, or to say --insecure."""
from __future__ import annotations

import os
import ssl
import stat

import pytest

from conftest import run_cli
from manybench.security import credentials as creds


def _context(made: creds.Credentials, server: bool) -> ssl.SSLContext:
    """A TLS end as Dask makes one from these credentials (distributed/security.py)."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH if server else
                                     ssl.Purpose.SERVER_AUTH, cafile=made.ca)
    ctx.load_cert_chain(made.cert, made.key)
    if server:
        ctx.verify_mode = ssl.CERT_REQUIRED
    else:
        ctx.check_hostname = False
    return ctx


def test_made_owner_only_and_usable_by_tls_on_both_sides(tmp_path):
    made = creds.make(str(tmp_path / "c"))
    assert stat.S_IMODE(os.stat(tmp_path / "c").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(made.key).st_mode) == 0o600
    # mutual TLS as Dask speaks it: the member certificate serves and is accepted both ways
    server, client = _context(made, True), _context(made, False)
    import socket
    a, b = socket.socketpair()
    sa = server.wrap_socket(a, server_side=True, do_handshake_on_connect=False)
    sb = client.wrap_socket(b, do_handshake_on_connect=False)
    import threading
    t = threading.Thread(target=sa.do_handshake)
    t.start()
    sb.do_handshake()
    t.join()
    assert sa.getpeercert() and sb.getpeercert()
    # a second cluster's member is not ours
    alien = _context(creds.make(str(tmp_path / "other")), False)
    a, b = socket.socketpair()
    sa = server.wrap_socket(a, server_side=True, do_handshake_on_connect=False)
    sb = alien.wrap_socket(b, do_handshake_on_connect=False)
    t = threading.Thread(target=lambda: pytest.raises(ssl.SSLError, sa.do_handshake))
    t.start()
    with pytest.raises((ssl.SSLError, OSError)):
        sb.do_handshake()
        sb.recv(1)
    t.join()


def test_a_key_others_can_read_or_a_directory_others_can_write_is_refused(tmp_path):
    made = creds.make(str(tmp_path / "c"))
    os.chmod(made.key, 0o644)
    with pytest.raises(creds.CredentialsError, match="readable by every user"):
        creds.load(str(tmp_path / "c"))
    os.chmod(made.key, 0o600)
    os.chmod(tmp_path / "c", 0o777)
    with pytest.raises(creds.CredentialsError, match="writable by others"):
        creds.load(str(tmp_path / "c"))
    os.chmod(tmp_path / "c", 0o700)
    assert creds.load(str(tmp_path / "c")) == made


def test_existing_credentials_are_never_overwritten(tmp_path):
    creds.make(str(tmp_path / "c"))
    before = (tmp_path / "c" / "member.key").read_bytes()
    with pytest.raises(creds.CredentialsError, match="already exists"):
        creds.make(str(tmp_path / "c"))
    assert (tmp_path / "c" / "member.key").read_bytes() == before


@pytest.mark.e2e
def test_the_command_makes_them_and_a_run_without_any_is_told_how(tmp_path, plan_file):
    env = {**os.environ, "MANYBENCH_CREDENTIALS": str(tmp_path / "none")}
    plan = plan_file('[[task]]\nname = "a"\nkernel = "null"\n')
    res = run_cli("run", plan, "--scheduler", "tls://127.0.0.1:9", env=env)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "cluster-credentials" in res.stderr and "--insecure" in res.stderr, res.stderr
    res = run_cli("worker", "tls://127.0.0.1:9", env=env)
    assert res.returncode == 2 and "cluster-credentials" in res.stderr, res.stderr
    # a plain address on a secured run: named, with both ways out
    res = run_cli("run", plan, "--scheduler", "tcp://127.0.0.1:9", "--credentials",
                  os.environ["MANYBENCH_CREDENTIALS"])
    assert res.returncode == 2 and "tls://127.0.0.1:9" in res.stderr and "--insecure" in \
        res.stderr, res.stderr
    res = run_cli("run", plan, "--insecure")
    assert res.returncode == 2 and "for a cluster" in res.stderr
    res = run_cli("cluster-credentials", str(tmp_path / "made"))
    assert res.returncode == 0, res.stderr
    assert creds.exists(str(tmp_path / "made"))
    res = run_cli("cluster-credentials", str(tmp_path / "made"))
    assert res.returncode == 2 and "already exists" in res.stderr
