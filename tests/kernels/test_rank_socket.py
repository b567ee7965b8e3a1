"""A parallel task's rank socket and abort port under attack (issue 28, item 6 and the last
bullet of 10), with real Open MPI and real MPICH on the local engine.

Each job's ranks wait, in their own shell, for a file the test makes: meanwhile the job's
slots listen for their ranks, the launcher and the ranks run, and the test attacks. Then it
lets the ranks go and checks the records are the real ones."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from conftest import export_json
from mpi_helpers import (FAMILIES, _probes, abort_ports, build_probe, cmdline, rank_sockets,
                         tree)
from second_user import answer, other_user, run_as

pytestmark = pytest.mark.e2e   # real MPI jobs through the CLI

WAIT_S = 240.0      # for what a job on a busy machine does before the test attacks it

# the second user's attack: connect to each rank socket named, say hello as a rank would
# and feed it stamps; print what came back (a slot that accepted says "place ...")
FORGE = r"""
import json, socket, sys
out = {}
for name in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(20)
    got, how = b"", "closed"
    try:
        s.connect("\0" + name)
        s.sendall(b"hello 1 1 - forged\nready 0 0\nstart 1 1 0\nend 2 2 0\nfinalized 3\n")
        while b"place" not in got:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        how = "timeout"
    except OSError as e:
        how = f"closed ({e.strerror})"
    out[name] = {"got": got.decode(errors="replace"), "how": how}
print(json.dumps(out))
"""


@pytest.fixture(scope="module", params=list(FAMILIES))
def mpi(request, tmp_path_factory):
    return build_probe(request.param, tmp_path_factory)


def _start(plan: str, out: str, tmp_path) -> subprocess.Popen:
    log = open(tmp_path / "run.log", "w")
    return subprocess.Popen([sys.executable, "-m", "manybench", "run", plan, "-o", out,
                             "--set", "noise=0.01s"], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)


def _waiting(run: subprocess.Popen, flag: str, ranks: int, launcher: str, tmp_path) -> dict:
    """Once every rank of the job waits for the flag: its slots' sockets, its launcher and
    its ranks' processes."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if run.poll() is not None:
            pytest.fail("the run ended before its ranks waited: "
                        + (tmp_path / "run.log").read_text()[-3000:])
        procs = tree(run.pid)
        socks = rank_sockets(procs)
        # each process's command line read once: one that ends between two reads reads []
        # the second time (CI: IndexError)
        argv = {p: cmdline(p) for p in procs}
        launchers = [p for p in procs if argv[p][:1]
                     and os.path.basename(argv[p][0]) == launcher]
        held = [p for p in procs if argv[p][:2] == ["sh", "-c"] and len(argv[p]) > 2
                and flag in argv[p][2]]
        if len(socks) == ranks and launchers and len(held) == ranks:
            return {"sockets": socks, "launcher": launchers[0], "ranks": held, "procs": procs}
        time.sleep(0.05)
    pytest.fail(f"the job's {ranks} ranks did not wait within {WAIT_S:g} s: "
                + (tmp_path / "run.log").read_text()[-3000:])


def _finish(run: subprocess.Popen, flag: str, tmp_path) -> int:
    open(flag, "w").close()
    try:
        return run.wait(timeout=WAIT_S)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def _hello(name: str, line: bytes) -> bytes:
    """What a slot says to a peer of this test's own uid that says `line`, until it closes."""
    got = b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(20)
        s.connect("\0" + name)
        s.sendall(line)
        try:
            while b"place" not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
    return got


def test_another_user_cannot_take_a_rank_socket_nor_read_its_name_in_an_argv(
        mpi, plan_file, tmp_path):
    fam, launcher, probe = mpi
    user = other_user()
    flag = str(tmp_path / "go")
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "taken"
        [placement]
        workers = 2
        [[task]]
        name = "probe"
        command = ["sh", "-c", "while [ ! -e {flag} ]; do sleep 0.05; done; exec {probe} work"]
        ranks = 2
        timeout = "{WAIT_S:g}s"
        launcher = "{launcher}"
        """)
    run = _start(plan, out, tmp_path)
    try:
        job = _waiting(run, flag, 2, launcher, tmp_path)
        names = sorted(job["sockets"])
        # another user: refused before a word is read, told nothing (no T0, no scratch path)
        forged = answer(run_as(user, FORGE, *names))
        assert forged == {n: {"got": "", "how": forged[n]["how"]} for n in names}, forged
        assert all(v["how"].startswith("closed") for v in forged.values()), forged
        # this user, but neither the job's process nor holding its token: refused too
        for name in names:
            assert b"place" not in _hello(name, f"hello {os.getpid()} 1 - same-user\n".encode())
            assert b"place" not in _hello(name, b"hello 1 1 " + b"0" * 64 + b" wrong-token\n")
        # the names and the token reach the ranks through the launcher's environment only
        env = job["launcher"].environ()
        prefix = env.get("MANYBENCH_MPI_SOCK", "")
        assert prefix and all(n.startswith(prefix + ".") for n in names), (env, names)
        token = env.get("MANYBENCH_MPI_TOKEN", "")
        assert token, env
        for p in tree(run.pid):
            argv = " ".join(cmdline(p))
            assert prefix not in argv and token not in argv, argv
        for p in job["ranks"] + [job["launcher"]]:
            assert prefix not in " ".join(cmdline(p)), cmdline(p)
        assert _finish(run, flag, tmp_path) == 0, (tmp_path / "run.log").read_text()[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    recs = export_json(out)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs), recs
    # the real ranks' records: their own pids (the probe prints its own), their own work
    first = next(r for r in recs if r["metrics"]["job_rank"] == 0)
    pids = {int(p["pid"]) for p in _probes(first["stdout"])}
    assert {r["metrics"]["rank_pid"] for r in recs} == pids
    assert all(r["elapsed_s"] >= 1.0 for r in recs), [r["elapsed_s"] for r in recs]


def _closed_by_peer(s: socket.socket) -> bool:
    """Wait until the other end closes (a slot done with a line it will not act on)."""
    s.settimeout(WAIT_S)
    try:
        return s.recv(4096) == b""
    except OSError:
        return True


def test_an_unsigned_abort_does_not_stop_the_job_and_a_silent_one_does_not_hold_it(
        mpi, plan_file, tmp_path):
    fam, launcher, probe = mpi
    flag = str(tmp_path / "go")
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "abort-port"
        [placement]
        workers = 2
        [[task]]
        name = "probe"
        command = ["sh", "-c", "while [ ! -e {flag} ]; do sleep 0.05; done; exec {probe}"]
        ranks = 2
        timeout = "{WAIT_S:g}s"
        launcher = "{launcher}"
        """)
    run = _start(plan, out, tmp_path)
    silent = None
    try:
        job = _waiting(run, flag, 2, launcher, tmp_path)
        ports = abort_ports(job["procs"])
        assert len(ports) == 1, ports           # rank 1's slot: told when the job fails
        host, port = ports[0]
        silent = socket.create_connection((host, port))
        for line in (b"abort x\n", b"abort " + b"0" * 64 + b" x\n"):
            try:
                s = socket.create_connection((host, port))
            except ConnectionRefusedError:
                pytest.fail(f"the slot no longer listens after {line!r}: it gave up its job")
            with s:
                s.sendall(line)
                assert _closed_by_peer(s)
        assert _finish(run, flag, tmp_path) == 0, (tmp_path / "run.log").read_text()[-3000:]
    finally:
        if silent is not None:
            silent.close()
        if run.poll() is None:
            run.kill()
            run.wait()
    recs = export_json(out)
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs), recs
    assert host == "127.0.0.1", ports       # this node's own address, not every one


def test_a_rank_with_stdout_or_stderr_closed_runs_and_is_recorded_ok(mpi, plan_file,
                                                                       tmp_path):
    """libmbrank's socket sits above 2: a rank started with fd 1 or 2 closed, which prints
    and then closes its stdout and stderr (as gnulib's close_stdout does), neither writes
    into it nor closes it. A rank whose environment lost the job's token is still accepted
    by the slot that started its launcher (it descends from it)."""
    fam, launcher, probe = mpi
    out = str(tmp_path / "res")
    plan = plan_file(f"""
        name = "closed"
        [placement]
        workers = 2
        [[task]]
        name = "noout"
        command = ["sh", "-c", "exec >&-; exec {probe} close"]
        ranks = 2
        timeout = "{WAIT_S:g}s"
        launcher = "{launcher}"
        [[task]]
        name = "noerr"
        command = ["sh", "-c", "exec 2>&-; exec {probe} close"]
        ranks = 2
        timeout = "{WAIT_S:g}s"
        launcher = "{launcher}"
        [[task]]
        name = "notoken"
        command = ["env", "-u", "MANYBENCH_MPI_TOKEN", "{probe}"]
        ranks = 1
        timeout = "{WAIT_S:g}s"
        launcher = "{launcher}"
        """)
    run = _start(plan, out, tmp_path)
    try:
        assert run.wait(timeout=2 * WAIT_S) == 0, (tmp_path / "run.log").read_text()[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    recs = export_json(out)
    by = {}
    for r in recs:
        by.setdefault(r["task"], []).append(r)
    assert all(r["status"] == "ok" for r in recs), [(r["task"], r["error"]) for r in recs]
    assert {t: len(rs) for t, rs in by.items()} == {"noout": 2, "noerr": 2, "notoken": 2}
    for task, stream in (("noout", "stderr"), ("noerr", "stdout")):
        first = next(r for r in by[task] if r["metrics"]["job_rank"] == 0)
        lines = _probes(first[stream])
        assert sorted(int(p["rank"]) for p in lines) == [0, 1], first
        assert {int(p["pid"]) for p in lines} == {r["metrics"]["rank_pid"] for r in by[task]}


# the second user's listener: takes the first connection at the name, answers as a slot
# would and says what it heard
SQUAT = r"""
import json, socket, sys
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0" + sys.argv[1])
srv.listen(1)
srv.settimeout(60)
print("listening", flush=True)
heard = b""
try:
    conn, _ = srv.accept()
    conn.settimeout(20)
    while b"\n" not in heard:
        chunk = conn.recv(4096)
        if not chunk:
            break
        heard += chunk
    if heard:
        conn.sendall(b"place - - /\n")
        heard += conn.recv(4096)
        conn.sendall(b"go 0 0\n")
except OSError as e:
    heard += f" [{e}]".encode()
print(json.dumps({"heard": heard.decode(errors="replace")}), flush=True)
"""


def test_a_rank_refuses_a_listener_of_another_user(tmp_path):
    """libmbrank checks who listens before it says hello: a socket another user bound at the
    name its rank connects to learns nothing and cannot place or release it."""
    from manybench.kernels.mpi_job import library
    user = other_user()
    name = f"manybench.test-squat.{os.getpid()}"
    squat = run_as(user, SQUAT, f"{name}.0", wait=False)
    try:
        assert squat.stdout.readline().strip() == "listening", squat.stderr.read()
        rank = subprocess.run(["true"], capture_output=True, text=True, timeout=60, env={
            **os.environ, "LD_PRELOAD": library(), "MANYBENCH_MPI_SOCK": name,
            "MANYBENCH_MPI_TOKEN": "t" * 64, "PMI_RANK": "0"})
        heard = json.loads(squat.communicate(timeout=60)[0].strip().splitlines()[-1])
    finally:
        if squat.poll() is None:
            squat.kill()
            squat.wait()
    assert rank.returncode == 126, (rank.returncode, rank.stderr)
    assert f"uid {user[0]}" in rank.stderr, rank.stderr
    assert heard == {"heard": ""}, heard
