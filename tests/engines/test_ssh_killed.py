"""A coordinator killed (SIGKILL) while its --hosts cluster runs leaves no credentials on the
hosts: the cluster's member key, shipped to a `mktemp -d` directory on each host for its
scheduler and workers, goes when the process that read it ends, whatever became of the
coordinator (it removed them itself only at its close(), which a SIGKILL never reaches)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from netns import Lab, require_netns, require_sshd
from waits import HANG_S, wait_for, wait_phases

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def _shipped(where) -> list[str]:
    """The credential files in the hosts' $TMPDIR (this test's own)."""
    return sorted(str(p) for p in where.rglob("*") if p.name in ("ca.pem", "member.pem",
                                                                 "member.key"))


def _on_the_hosts(where) -> list[str]:
    """The processes the hosts' sessions started (their $TMPDIR is this test's own)."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("TMPDIR") == str(where) and p.status() != psutil.STATUS_ZOMBIE:
                found.append(" ".join(p.cmdline()[:4]))
        except psutil.Error:      # gone meanwhile
            pass
    return found


def test_a_killed_coordinator_leaves_no_credentials_on_its_hosts(plan_file, tmp_path):
    require_netns()
    require_sshd()
    shipped = tmp_path / "hosts-tmp"     # the hosts' $TMPDIR: where mktemp -d ships the keys
    shipped.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TMPDIR": str(shipped)}
    marker = f"{time.time() % 1000 + 7000:.3f}"
    path = os.pathsep.join(os.path.abspath(p) for p in
                           os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)
    with Lab(2) as lab:
        known, keys, hostfile = lab.ssh_logins(tmp_path, ["1", "1"], env=env)
        plan = plan_file(f"""
            noise = 0
            [placement]
            workers = 2
            [cluster]
            python = "env PYTHONPATH={path} {sys.executable}"
            ssh = {{ username = "root", known_hosts = "{known}", client_keys = [{keys}] }}
            [[task]]
            name = "quick"
            kernel = "null"
            [[task]]
            name = "long"
            command = ["sleep", "{marker}"]
        """)
        out = str(tmp_path / "res")
        # the nodes' slots stop within the lease once nothing renews it (engines/lease.py)
        proc = subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out,
                                 "-q", "--hosts", str(hostfile)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "MANYBENCH_LEASE__LENGTH": "6s",
                                     "MANYBENCH_LEASE__RENEW": "1s"})
        try:
            wait_phases(out, 1, proc, timeout=240)          # the run is under way
            assert _shipped(shipped) and _on_the_hosts(shipped)
        finally:
            proc.kill()                                     # our own coordinator, by its pid
            proc.communicate(timeout=60)
        wait_for(lambda: not _on_the_hosts(shipped), "end of the hosts' manybench processes",
                 timeout=3 * HANG_S, every=0.2,
                 detail=lambda: _on_the_hosts(shipped))
        assert _shipped(shipped) == []


def test_a_signal_to_the_session_reaches_the_process_and_its_directory_goes(tmp_path):
    """Remote.close's terminate (an SSH signal, which sshd delivers to the session's process:
    the far side's shell) still ends the process the wrapper started, and the wrapper then
    removes the credentials' directory. (The lab's sshd delivers no signal to a root
    session, "session signalling requires privilege separation": the test sends it to that
    shell itself, by its pid.)"""
    require_netns()
    require_sshd()
    import asyncio
    import asyncssh
    from manybench.engines.ssh import remote_command
    marker = f"{time.time() % 1000 + 8000:.3f}"
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "member.key").write_text("secret")

    def sleepers() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"])
                if p.info["cmdline"] == ["sleep", marker]]

    async def signalled(sh) -> None:
        async with asyncssh.connect(sh.host, **sh.connect_options) as conn:
            proc = await conn.create_process(remote_command(f"sleep {marker}", str(keys)))
            started = await asyncio.to_thread(wait_for, sleepers,
                                              "the far side's process started")
            session = started[0].parent()         # the session's shell (the wrapper)
            assert session.cmdline()[:2] == ["sh", "-c"], session.cmdline()
            session.terminate()
            await asyncio.wait_for(proc.wait(), HANG_S)
    with Lab(1) as lab:
        asyncio.run(signalled(lab.start_sshd(0)))
        assert sleepers() == [] and not keys.exists()
